"""Guarded deletes (issue 32, items 1-3): sync --delete deletes after every copy succeeded and not
at all after a failure; an empty SRC is refused; --max-delete / --max-delete-size cap a run all or
nothing; --backup-dir keeps what is deleted or overwritten. Against LocalStack and local dirs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import objects_under as tree, one_error_line
from conftest import ROOT, put_tree, read_tree, write_tree
from faultproxy import FaultProxy


@pytest.fixture(params=["lean", "botocore"])
def data_path(request) -> dict[str, str]:
    """Both S3 data paths, as the env of each CLI run."""
    return {"S3BULK_DATA_PATH": request.param}


# --- an empty source is not a mirror -----------------------------------------------------------

def test_empty_local_source_refused(cli, s3, bucket, tmp_path, data_path):
    put_tree(s3, bucket, {"p/a": b"a", "p/b/c": b"bc"})
    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("sync", f"{empty}/", f"s3://{bucket}/p/", "--delete", env=data_path)
    assert r.code == 2, r
    assert "lists no objects" in one_error_line(r.err) and "--allow-empty-source" in r.err
    assert tree(s3, bucket) == {"p/a": b"a", "p/b/c": b"bc"}, "nothing deleted"
    r = cli("sync", f"{empty}/", f"s3://{bucket}/p/", "--delete", "--allow-empty-source", "--json", env=data_path)
    assert r.code == 0 and r.summary["deleted"] == 2, r
    assert tree(s3, bucket) == {}


def test_empty_s3_prefix_source_refused(cli, s3, bucket, data_path):
    put_tree(s3, bucket, {"dst/a": b"a", "dst/b": b"b", "other/x": b"x"})
    r = cli("sync", f"s3://{bucket}/src/", f"s3://{bucket}/dst/", "--delete", env=data_path)
    assert r.code == 2 and "lists no objects" in one_error_line(r.err), r
    assert len(tree(s3, bucket)) == 3
    r = cli("sync", f"s3://{bucket}/src/", f"s3://{bucket}/dst/", "--delete", "--allow-empty-source", "--json",
            env=data_path)
    assert r.code == 0 and r.summary["deleted"] == 2, r
    assert tree(s3, bucket) == {"other/x": b"x"}


def test_empty_source_into_empty_dst_is_no_refusal(cli, tmp_path):
    """Nothing at DST: nothing to lose, the run goes as before."""
    (tmp_path / "empty").mkdir()
    r = cli("sync", str(tmp_path / "empty"), str(tmp_path / "dst"), "--delete")
    assert r.code == 0, r


def test_all_filtered_out_source_deletes_nothing(cli, tmp_path):
    """SRC holds files but the filters keep none: the delete phase sees an empty source and refuses."""
    write_tree(tmp_path / "src", {"a.txt": b"a"})
    write_tree(tmp_path / "dst", {"x.log": b"x", "y.log": b"y"})
    r = cli("sync", str(tmp_path / "src"), str(tmp_path / "dst"), "--delete", "--exclude", "*.txt")
    assert r.code == 2 and "listed no objects" in r.err, r
    assert read_tree(tmp_path / "dst") == {"x.log": b"x", "y.log": b"y"}


# --- deferred deletes ----------------------------------------------------------------------------

def test_failing_source_entry_deletes_nothing(cli, s3, bucket, tmp_path, data_path):
    src = tmp_path / "src"
    write_tree(src, {f"f{i:02d}": b"x" * i for i in range(12)})
    os.symlink(tmp_path / "nowhere", src / "f05-dangling")  # the local store fails it: cannot stat
    put_tree(s3, bucket, {"m/f05-dangling": b"the copy of a file that went bad", "m/old1": b"1", "m/zz": b"2"})
    r = cli("sync", str(src), f"s3://{bucket}/m/", "--delete", "--page-size", "4", "-w", "2", env=data_path)
    assert r.code == 1, r
    assert "3 deletes not done: 1 objects failed" in r.err, r.err
    there = tree(s3, bucket, "m/")
    assert {"m/f05-dangling", "m/old1", "m/zz"} <= set(there), "no delete in a run with a failure"
    assert all(f"m/f{i:02d}" in there for i in range(12)), "the copies were done"


def test_deletes_come_after_every_copy(cli, s3, bucket, tmp_path):
    """Keys to delete interleaved with keys to copy, many units on two workers: every delete note
    comes after the last copy note (before, each unit deleted as its march found them)."""
    src = tmp_path / "src"
    write_tree(src, {f"k{i:03d}": b"new" for i in range(0, 60, 2)})
    put_tree(s3, bucket, {f"d/k{i:03d}": b"old extra" for i in range(1, 60, 2)})
    r = cli("sync", str(src), f"s3://{bucket}/d/", "--delete", "--json", "-v", "--page-size", "5", "-w", "2")
    assert r.code == 0, r
    kinds = [e["event"] for e in r.events if e["event"] in ("copied", "deleted")]
    assert kinds.count("copied") == 30 and kinds.count("deleted") == 30, kinds
    assert kinds.index("deleted") > max(i for i, k in enumerate(kinds) if k == "copied"), kinds
    assert r.summary["deleted"] == 30
    assert sorted(tree(s3, bucket)) == [f"d/k{i:03d}" for i in range(0, 60, 2)]


def test_delete_during_skips_only_the_failed_unit(cli, tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    write_tree(src, {f"a{i:02d}": b"s" for i in range(20) if i != 2})
    os.symlink(tmp_path / "nowhere", src / "a02")  # the first page fails one entry
    write_tree(dst, {"a01z": b"in the failing unit's range", "zz": b"in the last unit's range"})
    r = cli("sync", str(src), str(dst), "--delete", "--delete-during", "--page-size", "5", "-w", "1")
    assert r.code == 1, r
    tree = read_tree(dst)
    assert "a01z" in tree, "the unit with a failure deletes nothing"
    assert "zz" not in tree, "the other units deleted theirs during the run"
    assert "1 deletes not done: 1 objects failed" in r.err, r.err


def test_sigkill_before_the_delete_phase_then_resume_deletes(endpoint, s3, bucket, tmp_path, state_home):
    """The run is killed once every copy is done and the first DeleteObjects is on its way: the
    journal keeps the keys to delete, and --resume deletes them (copying nothing again)."""
    src = tmp_path / "src"
    write_tree(src, {f"f{i:03d}": b"body" for i in range(40)})
    put_tree(s3, bucket, {f"j/x{i:03d}": b"extra" for i in range(25)})
    host, port = urlsplit(endpoint).hostname, urlsplit(endpoint).port
    seen, blocking = threading.Event(), threading.Event()
    blocking.set()

    def deletes(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if blocking.is_set() and method == "POST" and "delete" in target.split("?", 1)[-1]:
            seen.set()
            return b""  # dropped: the run retries while the test kills it
        return None

    journal = tmp_path / "j.sqlite"
    env = dict(os.environ, XDG_STATE_HOME=state_home)
    with FaultProxy(host, port, [deletes]) as proxy:  # the journal knows the endpoint: the resume uses it too
        args = [sys.executable, "-m", "s3bulk", "sync", str(src), f"s3://{bucket}/j/", "--delete", "--journal",
                str(journal), "--page-size", "10", "-w", "2", "--endpoint-url", proxy.url]
        with open(tmp_path / "run1.out", "wb") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env,
                                    start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while not seen.is_set() and proc.poll() is None and time.monotonic() < deadline:
                seen.wait(0.1)
            assert seen.is_set(), (tmp_path / "run1.out").read_text()[-3000:]
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        there = tree(s3, bucket, "j/")
        assert all(f"j/f{i:03d}" in there for i in range(40)), "every copy was done before the first delete"
        assert all(f"j/x{i:03d}" in there for i in range(25)), "the kill came before any delete"
        blocking.clear()
        r = subprocess.run([*args, "--resume", "--json"], capture_output=True, text=True, cwd=ROOT, env=env,
                           timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = [line for line in r.stdout.splitlines() if '"summary"' in line][-1]
    assert '"copied": 0' in summary and '"deleted": 25' in summary, summary
    assert sorted(tree(s3, bucket, "j/")) == [f"j/f{i:03d}" for i in range(40)]
    assert not journal.exists(), "a complete run removes its journal"


def test_resume_after_a_failure_keeps_the_journaled_deletes(cli, s3, bucket, tmp_path):
    """A run with a failure keeps the deletes of its finished units in its journal; once the cause
    is fixed, --resume redoes the failed unit and deletes everything."""
    src = tmp_path / "src"
    write_tree(src, {f"f{i:02d}": b"x" for i in range(30) if i != 15})
    os.symlink(tmp_path / "later", src / "f15")  # dangling until the fix below
    put_tree(s3, bucket, {f"r/f{i:02d}x": b"extra" for i in range(30)})
    journal = tmp_path / "j.sqlite"
    args = ("sync", str(src), f"s3://{bucket}/r/", "--delete", "--journal", str(journal), "--page-size", "5")
    r = cli(*args)
    assert r.code == 1 and "deletes not done" in r.err, r
    assert len([k for k in tree(s3, bucket, "r/") if k.endswith("x")]) == 30
    (tmp_path / "later").write_bytes(b"fixed")
    r = cli(*args, "--resume", "--json")
    assert r.code == 0, r
    assert r.summary["deleted"] == 30, r.summary
    assert sorted(tree(s3, bucket, "r/")) == [f"r/f{i:02d}" for i in range(30)]


# --- caps ------------------------------------------------------------------------------------------

def _extras(s3, bucket: str, n: int, size: int = 1) -> None:
    put_tree(s3, bucket, {f"c/x{i:02d}": b"e" * size for i in range(n)})


@pytest.mark.parametrize("extra, code", [(11, 4), (10, 0)])
def test_max_delete_count(cli, s3, bucket, tmp_path, extra, code):
    write_tree(tmp_path / "src", {"keep": b"k"})
    _extras(s3, bucket, extra)
    r = cli("sync", str(tmp_path / "src"), f"s3://{bucket}/c/", "--delete", "--max-delete", "10", "--json")
    assert r.code == code, r
    left = len(tree(s3, bucket, "c/x"))
    if code:
        assert f"would delete {extra} objects, more than --max-delete 10" in one_error_line(r.err)
        assert left == extra, "nothing deleted"
        assert r.summary["ok"] is False
    else:
        assert left == 0 and r.summary["deleted"] == extra


def test_max_delete_percent(cli, s3, bucket, tmp_path):
    write_tree(tmp_path / "src", {f"k{i}": b"k" for i in range(5)})
    put_tree(s3, bucket, {f"c/k{i}": b"k" for i in range(5)})
    _extras(s3, bucket, 6)  # 6 of the 11 objects seen at DST: 54%
    r = cli("sync", str(tmp_path / "src"), f"s3://{bucket}/c/", "--delete", "--max-delete", "50%")
    assert r.code == 4 and "more than --max-delete 50%" in one_error_line(r.err), r
    assert len(tree(s3, bucket, "c/x")) == 6
    r = cli("sync", str(tmp_path / "src"), f"s3://{bucket}/c/", "--delete", "--max-delete", "60%")
    assert r.code == 0, r
    assert len(tree(s3, bucket, "c/x")) == 0


def test_max_delete_size(cli, s3, bucket, tmp_path):
    write_tree(tmp_path / "src", {"keep": b"k"})
    _extras(s3, bucket, 3, size=1000)
    r = cli("sync", str(tmp_path / "src"), f"s3://{bucket}/c/", "--delete", "--max-delete-size", "2KiB")
    assert r.code == 4 and "--max-delete-size" in one_error_line(r.err), r
    assert len(tree(s3, bucket, "c/x")) == 3
    r = cli("sync", str(tmp_path / "src"), f"s3://{bucket}/c/", "--delete", "--max-delete-size", "3000")
    assert r.code == 0, r
    assert len(tree(s3, bucket, "c/x")) == 0


def test_cap_options_checked(cli, tmp_path):
    (tmp_path / "src").mkdir()
    for args, says in ((["--max-delete", "10"], "go with --delete"),
                       (["--delete", "--max-delete", "ten"], "--max-delete must be"),
                       (["--delete", "--max-delete", "150%"], "--max-delete must be"),
                       (["--delete", "--delete-during", "--max-delete", "3"], "not --delete-during"),
                       (["--suffix", ".x"], "--suffix goes with --backup-dir")):
        r = cli("sync", str(tmp_path / "src"), str(tmp_path / "dst"), *args)
        assert r.code == 2 and says in r.err and "Traceback" not in r.err, (args, r)


@pytest.mark.parametrize("cap, code", [("10", 4), ("11", 0), ("50%", 4)])
def test_rm_max_delete(cli, s3, bucket, cap, code):
    put_tree(s3, bucket, {f"t/k{i:02d}": b"k" for i in range(11)})
    r = cli("rm", f"s3://{bucket}/t/", "--max-delete", cap)
    assert r.code == code, r
    left = len(tree(s3, bucket, "t/"))
    if code:
        assert "rm would delete 11 objects" in one_error_line(r.err)
        assert left == 11
    else:
        assert left == 0


# --- backups ---------------------------------------------------------------------------------------

def test_backup_dir_s3_to_s3_with_suffix(cli, s3, bucket, data_path):
    put_tree(s3, bucket, {"src/same": b"same", "src/changed": b"new body", "src/sub/new": b"n"})
    put_tree(s3, bucket, {"dst/same": b"same", "dst/changed": b"old", "dst/gone": b"was here",
                          "dst/sub/gone2": b"was here too"})
    r = cli("sync", f"s3://{bucket}/src/", f"s3://{bucket}/dst/", "--delete", "--backup-dir",
            f"s3://{bucket}/bk/", "--suffix", ".old", "--json", env=data_path)
    assert r.code == 0, r
    assert tree(s3, bucket, "dst/") == {"dst/same": b"same", "dst/changed": b"new body",
                                               "dst/sub/new": b"n"}
    assert tree(s3, bucket, "bk/") == {"bk/changed.old": b"old", "bk/gone.old": b"was here",
                                              "bk/sub/gone2.old": b"was here too"}
    assert f"3 objects backed up to s3://{bucket}/bk/" in r.err


def test_backup_dir_keeps_overwrites_without_delete(cli, s3, bucket, tmp_path):
    write_tree(tmp_path / "src", {"a": b"a, rewritten", "b": b"b"})
    put_tree(s3, bucket, {"o/a": b"a1", "o/c": b"only at DST"})
    r = cli("sync", str(tmp_path / "src"), f"s3://{bucket}/o/", "--backup-dir", f"s3://{bucket}/keep/")
    assert r.code == 0 and f"1 object backed up to s3://{bucket}/keep/ before it was" in r.err, r
    assert tree(s3, bucket) == {"o/a": b"a, rewritten", "o/b": b"b", "o/c": b"only at DST", "keep/a": b"a1"}


def test_backup_dir_local_to_s3(cli, s3, make_bucket, tmp_path):
    data, keep = make_bucket(), make_bucket()
    write_tree(tmp_path / "src", {"a": b"a, longer", "b": b"b"})
    put_tree(s3, data, {"m/a": b"a1", "m/old/x": b"x"})
    r = cli("sync", str(tmp_path / "src"), f"s3://{data}/m/", "--delete", "--backup-dir", f"s3://{keep}/trash")
    assert r.code == 0, r
    assert tree(s3, data) == {"m/a": b"a, longer", "m/b": b"b"}
    assert tree(s3, keep) == {"trash/a": b"a1", "trash/old/x": b"x"}


def test_backup_dir_refused_inside_dst_or_src(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {"src/a": b"a"})
    for backup, says in ((f"s3://{bucket}/dst/bk/", "is inside DST"), (f"s3://{bucket}/src/bk/", "overlaps SRC"),
                         (f"s3://{bucket}/", "holds DST")):
        r = cli("sync", f"s3://{bucket}/src/", f"s3://{bucket}/dst/", "--delete", "--backup-dir", backup)
        assert r.code == 2 and says in one_error_line(r.err), (backup, r)
    r = cli("sync", f"s3://{bucket}/src/", f"s3://{bucket}/dst/", "--delete", "--backup-dir",
            f"s3://{bucket}/dst/bk/", "--exclude", "bk/*")
    assert r.code == 0, "a backup dir DST's filters exclude is fine"
    r = cli("rm", f"s3://{bucket}/src/", "--backup-dir", f"s3://{bucket}/src/trash/")
    assert r.code == 2 and "inside" in one_error_line(r.err), r


def test_rm_backup_dir(cli, s3, make_bucket):
    data, keep = make_bucket(), make_bucket()
    put_tree(s3, data, {"t/a": b"a", "t/d/b": b"b", "u/c": b"c"})
    r = cli("rm", f"s3://{data}/t/", "--backup-dir", f"s3://{keep}/bk/", "--suffix", "~")
    assert r.code == 0, r
    assert tree(s3, data) == {"u/c": b"c"}
    assert tree(s3, keep) == {"bk/a~": b"a", "bk/d/b~": b"b"}


def test_backup_failure_deletes_nothing(cli, s3, bucket, tmp_path):
    """A backup that cannot be written (a file where the backup directory should be): the delete
    does not happen and the run fails."""
    write_tree(tmp_path / "src", {"keep": b"k"})
    put_tree(s3, bucket, {"b/keep": b"k", "b/x": b"extra"})
    (tmp_path / "blocked").write_bytes(b"a file, not a directory")
    r = cli("sync", str(tmp_path / "src"), f"s3://{bucket}/b/", "--delete", "--backup-dir",
            str(tmp_path / "blocked" / "bk"))
    assert r.code != 0, r
    assert "b/x" in tree(s3, bucket, "b/"), "not deleted without its backup"


# --- the Python API keeps step -----------------------------------------------------------------------

@pytest.mark.unit
def test_api_sync_guards(tmp_path):
    import s3bulk
    from s3bulk.errors import TooManyDeletes, UsageError

    write_tree(tmp_path / "src", {"a": b"a"})
    write_tree(tmp_path / "dst", {f"x{i}": b"x" for i in range(5)})
    summary = s3bulk.sync(str(tmp_path / "src"), str(tmp_path / "dst"), delete=True, max_delete=4)
    assert summary.fatal and summary.fatal_code == TooManyDeletes.exit_code and not summary.ok
    assert len([k for k in read_tree(tmp_path / "dst") if k.startswith("x")]) == 5
    with pytest.raises(UsageError):
        s3bulk.sync(str(tmp_path / "src"), str(tmp_path / "dst"), max_delete=4)
    summary = s3bulk.sync(str(tmp_path / "src"), str(tmp_path / "dst"), delete=True, max_delete="100%",
                          backup_dir=str(tmp_path / "bk"))
    assert summary.ok and summary.counters.deleted == 5
    assert read_tree(tmp_path / "bk") == {f"x{i}": b"x" for i in range(5)}


# --- the cluster and the watcher go through the same deferred deletes --------------------------------

def test_cluster_defers_deletes_and_skips_them_after_a_failure(cli, tmp_path):
    """--cluster local:2: a Dask task's Deletes messages reach the coordinator's spool like a worker
    process's; a failure deletes nothing, a clean run deletes after every copy."""
    pytest.importorskip("distributed")
    src, dst = tmp_path / "src", tmp_path / "dst"
    write_tree(src, {f"f{i:02d}": b"s" for i in range(30)})
    os.symlink(tmp_path / "nowhere", src / "f07x")
    write_tree(dst, {**{f"f{i:02d}y": b"extra" for i in range(20)}, "zz": b"extra"})
    args = ("sync", str(src), str(dst), "--delete", "--page-size", "5", "--cluster", "local:2", "--json", "-v")
    r = cli(*args)
    assert r.code == 1 and "21 deletes not done: 1 objects failed" in r.err, r
    assert len([k for k in read_tree(dst) if k.endswith("y")]) == 20
    os.unlink(src / "f07x")
    write_tree(src, {f"f{i:02d}": b"changed" for i in range(30)})  # copied again: the order shows
    r = cli(*args)
    assert r.code == 0, r
    kinds = [e["event"] for e in r.events if e["event"] in ("copied", "deleted")]
    assert kinds.count("deleted") == 21 and kinds.index("deleted") > max(
        i for i, k in enumerate(kinds) if k == "copied"), kinds
    assert sorted(read_tree(dst)) == [f"f{i:02d}" for i in range(30)]


def test_watch_batch_over_max_delete_deletes_nothing(s3, bucket, endpoint, tmp_path):
    """sync --watch --max-delete: a batch of changes that would delete more than the cap deletes
    nothing, and the watch ends with the cap's exit code and its line."""
    from test_watch import kill_group, start_watch, wait_for

    src = tmp_path / "src"
    write_tree(src, {f"f{i}": b"x" for i in range(6)})
    proc, out = start_watch(tmp_path, endpoint, str(src), f"s3://{bucket}/w/", "--delete", "--max-delete", "2")
    try:
        wait_for("the first full sync", lambda: len(tree(s3, bucket, "w/")) == 6, proc, out)
        for i in range(3):
            (src / f"f{i}").unlink()
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.returncode == 4, out.with_suffix(".err").read_text()
    finally:
        kill_group(proc)
    assert "more than --max-delete 2" in out.with_suffix(".err").read_text()
    assert len(tree(s3, bucket, "w/")) == 6, "nothing deleted"


@pytest.mark.unit
def test_key_spool_spills_to_disk_in_order(tmp_path):
    """A unit's keys: the first batch in memory, the rest in a temporary file, read back in order
    in batches of 1,000 (what the memory stays constant with)."""
    from s3bulk.engine.run.deletes import BATCH, KeySpool

    spool = KeySpool()
    for i in range(2500):
        spool.add(f"k{i:05d}\nodd", i)
    batches = list(spool.batches())
    assert [len(b) for b in batches] == [BATCH, BATCH, 500]
    assert [k for b in batches for k, _ in b] == [f"k{i:05d}\nodd" for i in range(2500)]
    assert spool.count == 2500 and spool.nbytes == sum(range(2500))
    spool.close()
    kept = KeySpool(str(tmp_path / "spool"))
    kept.extend([("a", 1), ("b", 2)])
    kept.close()
    again = KeySpool(str(tmp_path / "spool"))  # a resume counts what the file holds
    assert (again.count, again.nbytes) == (2, 3) and list(again.batches()) == [[("a", 1), ("b", 2)]]
    again.close(remove=True)
    assert not (tmp_path / "spool").exists()


@pytest.mark.unit
def test_spool_lines_round_trip_any_key():
    from hypothesis import given, settings, strategies as st

    from s3bulk.engine.run.deletes import _line, _row

    @settings(max_examples=300, derandomize=True)
    @given(st.text(alphabet=st.characters(codec=None, exclude_categories=()), min_size=1), st.integers(0, 2**62))
    def round_trip(key: str, size: int) -> None:
        line = _line(key, size)
        assert line.count(b"\n") == 1 and line.endswith(b"\n")
        assert _row(line) == (key, size)

    round_trip()
    for key in ("a\\nb", "a\nb", "\\\n", "\\\\n", "\n\\", "x\udc80y", "tab\tin key"):
        assert _row(_line(key, 3)) == (key, 3), key
    assert _row(b"12\tcut without its newline") is None
