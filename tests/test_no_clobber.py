"""--no-clobber and --update: what DST already holds is kept (engine/transfer/guards.py,
stores/conditions.py NO_CLOBBER).

On LocalStack (which honours If-None-Match: * on PutObject, CompleteMultipartUpload and CopyObject)
on both S3 data paths, and on local directories: a copy onto existing objects replaces none of them
(a single PUT, a multipart upload, a server-side copy, a local file) and copies the missing ones; an
object that appears at DST after the run started and before its write is not replaced either (the
write itself carries the condition: the run is stopped with SIGSTOP while the object is written);
--update keeps a DST copy newer than the source."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from conftest import ROOT, bucket_tree, process_tree, put_tree, read_tree, stopped, write_tree

MiB = 1024 * 1024
SIZES = ("--multipart-threshold", "5MiB", "--part-size", "5MiB")
PATHS = pytest.mark.parametrize("data_path", ["lean", "botocore"])


def _env(data_path: str) -> dict[str, str]:
    return {"S3BULK_DATA_PATH": data_path}


def _open_uploads(s3, bucket: str) -> list:
    return s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])


@PATHS
def test_upload_no_clobber_keeps_existing_objects_single_and_multipart(cli, s3, bucket, tmp_path, data_path):
    src = {"small": b"new small", "big": os.urandom(6 * MiB), "fresh": b"only in SRC", "fresh-big": os.urandom(6 * MiB)}
    write_tree(tmp_path / "src", src)
    theirs = {"small": b"theirs", "big": b"their big one"}
    put_tree(s3, bucket, {f"p/{k}": v for k, v in theirs.items()})
    run = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/p/", "--no-clobber", "--json", "--no-journal", *SIZES,
              env=_env(data_path))
    assert run.code == 0, run
    assert bucket_tree(s3, bucket, "p/") == {**src, **theirs}
    assert run.summary["kept"] == 2 and run.summary["skipped"] == 2 and run.summary["copied"] == 2, run.summary
    assert run.summary["failed"] == 0
    assert _open_uploads(s3, bucket) == []
    # no part of the big one was sent in vain: one multipart upload only (the fresh one)
    assert run.summary["requests"].get("CREATE_MULTIPART", {}) == {"2xx": 1}, run.summary["requests"]


@PATHS
def test_server_side_copy_no_clobber_keeps_existing_objects(cli, s3, bucket, data_path):
    put_tree(s3, bucket, {"src/a": b"new a", "src/b": b"new b", "dst/a": b"theirs"})
    run = cli("copy", f"s3://{bucket}/src/", f"s3://{bucket}/dst/", "--no-clobber", "--json", "--no-journal",
              env=_env(data_path))
    assert run.code == 0, run
    assert bucket_tree(s3, bucket, "dst/") == {"a": b"theirs", "b": b"new b"}
    assert run.summary["kept"] == 1 and run.summary["server_side_copies"] == 1, run.summary


@PATHS
def test_download_no_clobber_keeps_local_files(cli, s3, bucket, tmp_path, data_path, no_leftovers):
    put_tree(s3, bucket, {"p/a": b"new a", "p/big": os.urandom(6 * MiB), "p/c": b"new c"})
    write_tree(tmp_path / "dst", {"a": b"mine", "big": b"my big one"})
    run = cli("copy", f"s3://{bucket}/p/", str(tmp_path / "dst"), "--no-clobber", "--json", "--no-journal", *SIZES,
              env=_env(data_path))
    assert run.code == 0, run
    got = read_tree(tmp_path / "dst")
    assert got == {"a": b"mine", "big": b"my big one", "c": b"new c"}
    assert run.summary["kept"] == 2
    no_leftovers(tmp_path / "dst")


def test_local_copy_no_clobber_keeps_files(cli, tmp_path):
    import json

    write_tree(tmp_path / "src", {"a": b"new a", "d/b": b"new b", "c": b"new c"})
    write_tree(tmp_path / "dst", {"a": b"mine", "d/b": b"mine too"})
    report = tmp_path / "report.jsonl"
    run = cli("copy", str(tmp_path / "src"), str(tmp_path / "dst"), "--no-clobber", "--json", "--no-journal",
              "--report", str(report))
    assert run.code == 0, run
    assert read_tree(tmp_path / "dst") == {"a": b"mine", "d/b": b"mine too", "c": b"new c"}
    assert run.summary["kept"] == 2 and run.summary["copied"] == 1
    rows = {r["dst"].rsplit("/dst/", 1)[1]: r for r in map(json.loads, report.read_text().splitlines())}
    assert rows["a"]["outcome"] == rows["d/b"]["outcome"] == "skipped", rows
    assert rows["a"]["error"] == "exists at DST (--no-clobber)" and rows["c"]["outcome"] == "copied", rows
    # without it the same copy replaces them: what the option changes
    run = cli("copy", str(tmp_path / "src"), str(tmp_path / "dst"), "--json", "--no-journal")
    assert read_tree(tmp_path / "dst") == {"a": b"new a", "d/b": b"new b", "c": b"new c"}


def test_mv_no_clobber_keeps_the_source_of_what_it_did_not_move(cli, tmp_path):
    write_tree(tmp_path / "src", {"a": b"new a", "b": b"new b"})
    write_tree(tmp_path / "dst", {"a": b"mine"})
    run = cli("mv", str(tmp_path / "src"), str(tmp_path / "dst"), "--no-clobber", "--json", "--no-journal")
    assert run.code == 0, run
    assert read_tree(tmp_path / "dst") == {"a": b"mine", "b": b"new b"}
    assert read_tree(tmp_path / "src") == {"a": b"new a"}  # not moved: its source stays


def test_sync_no_clobber_keeps_a_different_dst_copy(cli, s3, bucket, tmp_path):
    write_tree(tmp_path / "src", {"a": b"a newer and longer", "b": b"b"})
    put_tree(s3, bucket, {"p/a": b"theirs"})
    run = cli("sync", str(tmp_path / "src"), f"s3://{bucket}/p/", "--no-clobber", "--json", "--no-journal")
    assert run.code == 0, run
    assert bucket_tree(s3, bucket, "p/") == {"a": b"theirs", "b": b"b"}
    assert run.summary["kept"] == 1


def _race(cmd: list[str], env: dict[str, str], appeared, write_theirs, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `cmd`; once `appeared()` (the run has written its first object) stop the whole run
    (SIGSTOP), let `write_theirs()` put an object where the run will write later, continue it."""
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, **env), cwd=ROOT)
    try:
        until = time.monotonic() + timeout
        while not appeared():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < until, "the run wrote nothing"
            time.sleep(0.02)
        with stopped(process_tree(proc.pid)):
            write_theirs()
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@PATHS
def test_an_object_written_at_dst_during_the_run_is_not_replaced(endpoint, s3, bucket, tmp_path, state_home,
                                                                 data_path):
    """The copy lists no DST: only the conditional write keeps an object that appeared meanwhile."""
    write_tree(tmp_path / "src", {f"k{i:02}": b"ours %d" % i for i in range(20)})

    def appeared() -> bool:
        return s3.list_objects_v2(Bucket=bucket, Prefix="p/").get("KeyCount", 0) > 0

    def write_theirs() -> None:
        assert "Contents" not in s3.list_objects_v2(Bucket=bucket, Prefix="p/k19"), "the run was too quick to race"
        s3.put_object(Bucket=bucket, Key="p/k19", Body=b"theirs")

    done = _race(["copy", str(tmp_path / "src"), f"s3://{bucket}/p/", "--no-clobber", "--json", "--no-journal",
                  "-w", "1", "-c", "1", "--max-rps", "2", "--endpoint-url", endpoint],
                 {**_env(data_path), "XDG_STATE_HOME": state_home}, appeared, write_theirs)
    assert done.returncode == 0, done
    got = bucket_tree(s3, bucket, "p/")
    assert got["k19"] == b"theirs"
    assert got == {f"k{i:02}": b"ours %d" % i for i in range(19)} | {"k19": b"theirs"}
    assert '"kept": 1' in done.stdout


def test_a_file_written_at_a_local_dst_during_the_run_is_not_replaced(endpoint, s3, bucket, tmp_path, state_home):
    put_tree(s3, bucket, {f"p/k{i:02}": b"ours %d" % i for i in range(20)})
    dst = tmp_path / "dst"

    def appeared() -> bool:
        return dst.is_dir() and any(not p.name.startswith(".") for p in dst.iterdir())

    def write_theirs() -> None:
        assert not (dst / "k19").exists(), "the run was too quick to race"
        (dst / "k19").write_bytes(b"theirs")

    done = _race(["copy", f"s3://{bucket}/p/", str(dst), "--no-clobber", "--json", "--no-journal",
                  "-w", "1", "-c", "1", "--max-rps", "2", "--endpoint-url", endpoint],
                 {"XDG_STATE_HOME": state_home}, appeared, write_theirs)
    assert done.returncode == 0, done
    assert read_tree(dst) == {f"k{i:02}": b"ours %d" % i for i in range(19)} | {"k19": b"theirs"}


@PATHS
def test_update_skips_objects_newer_at_dst(cli, s3, bucket, tmp_path, data_path):
    """S3's LastModified is the upload time: a source file older than it is skipped, one from the
    future is copied. Then the other way, to local files, with copy and sync."""
    put_tree(s3, bucket, {"p/old": b"theirs, newer", "p/new": b"theirs, older"})
    write_tree(tmp_path / "src", {"old": b"ours, old", "new": b"ours, newest", "fresh": b"fresh"})
    os.utime(tmp_path / "src" / "old", (946684800, 946684800))  # 2000-01-01
    future = time.time() + 3600
    os.utime(tmp_path / "src" / "new", (future, future))
    run = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/p/", "--update", "--json", "--no-journal",
              env=_env(data_path))
    assert run.code == 0, run
    assert bucket_tree(s3, bucket, "p/") == {"old": b"theirs, newer", "new": b"ours, newest", "fresh": b"fresh"}
    assert run.summary["kept"] == 1 and run.summary["copied"] == 2

    for command in ("copy", "sync"):
        down = tmp_path / f"down-{command}"
        write_tree(down, {"old": b"mine, from the future", "new": b"mine, old"})
        os.utime(down / "old", (future, future))
        os.utime(down / "new", (946684800, 946684800))
        run = cli(command, f"s3://{bucket}/p/", str(down), "--update", "--json", "--no-journal",
                  env=_env(data_path))
        assert run.code == 0, run
        assert read_tree(down) == {"old": b"mine, from the future", "new": b"ours, newest", "fresh": b"fresh"}, command
        assert run.summary["kept"] == 1, (command, run.summary)


def test_no_clobber_with_a_pipe_is_refused_in_one_line(cli, bucket):
    run = cli("copy", "-", f"s3://{bucket}/x", "--no-clobber")
    assert run.code == 2 and "Traceback" not in run.err, run
    assert run.err.strip().count("\n") == 0 and "--no-clobber" in run.err


from versitygw import versitygw  # noqa: E402,F401  (one server for this module: tests/versitygw.py)


@PATHS
def test_no_clobber_on_versitygw(cli, versitygw, tmp_path, data_path):
    """versitygw 1.8 honours If-None-Match on PutObject and CompleteMultipartUpload and ignores it on
    CopyObject: the HEAD the S3 store sends before a conditional copy keeps the object there too."""
    s3 = versitygw.client()
    bucket = f"nc-{data_path}"
    s3.create_bucket(Bucket=bucket)
    src = {"small": b"new small", "big": os.urandom(6 * MiB), "fresh": b"only in SRC"}
    write_tree(tmp_path / "src", src)
    theirs = {"small": b"theirs", "big": b"their big one"}
    put_tree(s3, bucket, {f"p/{k}": v for k, v in theirs.items()})
    env = {**_env(data_path), **versitygw.env}
    run = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/p/", "--no-clobber", "--json", "--no-journal", *SIZES,
              "--endpoint-url", versitygw.url, "--path-style", env=env)
    assert run.code == 0, run
    assert bucket_tree(s3, bucket, "p/") == {**src, **theirs}
    assert run.summary["kept"] == 2, run.summary
    run = cli("copy", f"s3://{bucket}/p/", f"s3://{bucket}/q/", "--json", "--no-journal", "--endpoint-url", versitygw.url,
              "--path-style", env=env)
    assert run.code == 0, run
    s3.put_object(Bucket=bucket, Key="q/small", Body=b"theirs at q")
    run = cli("copy", f"s3://{bucket}/p/", f"s3://{bucket}/q/", "--no-clobber", "--json", "--no-journal",
              "--endpoint-url", versitygw.url, "--path-style", env=env)
    assert run.code == 0, run
    assert run.summary["kept"] == 3 and run.summary["server_side_copies"] == 0, run.summary
    assert bucket_tree(s3, bucket, "q/")["small"] == b"theirs at q"


@PATHS
def test_a_server_refusing_if_none_match_gets_a_head_before_each_write(cli, endpoint, s3, bucket, tmp_path,
                                                                       make_fault_proxy, data_path):
    """A server that answers 501 to If-None-Match (as some gateways do): the run says once that it
    falls back to a HEAD per write, keeps what exists, copies the rest, and keeps its checksum
    headers (the 501 was the condition's, not theirs)."""
    from faultproxy import s3_error

    sent: list[dict[str, str]] = []

    def refuse_conditions(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if method in ("PUT", "POST"):
            sent.append(dict(headers))
        if "if-none-match" in headers:
            return s3_error(501, "Not Implemented", "NotImplemented", "A header you provided implies "
                            "functionality that is not implemented", keep_alive=True)
        return None

    proxy = make_fault_proxy(endpoint, [refuse_conditions])
    write_tree(tmp_path / "src", {"a": b"ours a", "b": b"ours b", "c": b"ours c"})
    put_tree(s3, bucket, {"p/a": b"theirs"})
    run = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/p/", "--no-clobber", "--json", "--no-journal",
              "-w", "1", "--endpoint-url", proxy.url, env=_env(data_path))
    assert run.code == 0, run
    assert bucket_tree(s3, bucket, "p/") == {"a": b"theirs", "b": b"ours b", "c": b"ours c"}
    assert run.summary["kept"] == 1 and run.summary["copied"] == 2, run.summary
    assert run.err.count("refuses conditional writes") == 1, run.err
    landed = [h for h in sent if "if-none-match" not in h]
    assert len(landed) == 2 and all("x-amz-checksum-crc32" in h for h in landed), landed
