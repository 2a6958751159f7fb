"""`mv --backup-dir URL --suffix SUF` (and copy's, the same declaration): before an object DST
already holds is overwritten, it is first copied to the backup dir under its key relative to DST
plus the suffix (engine/transfer/backup.py, through one_object.Transfer). A backup that fails
overwrites nothing and, for mv, deletes no source. copy and mv list no DST, so the option costs
one HEAD per object, and only when given. Against LocalStack and local directories.
"""

from __future__ import annotations

import os

import pytest

from conftest import objects_under as tree, one_error_line
from conftest import put_tree, read_tree, write_tree


@pytest.fixture(params=["lean", "botocore"])
def data_path(request) -> dict[str, str]:
    """Both S3 data paths, as the env of each CLI run."""
    return {"S3BULK_DATA_PATH": request.param}


def heads(summary: dict) -> int:
    """HEAD requests a run sent, any status (the --json summary's `requests`)."""
    return sum(summary["requests"].get("HEAD", {}).values())


# --- what is overwritten is kept ------------------------------------------------------------------

def test_mv_local_to_s3_keeps_overwritten_objects(cli, s3, make_bucket, tmp_path, data_path):
    data, keep = make_bucket(), make_bucket()
    write_tree(tmp_path / "src", {"a": b"a, new", "sub/b": b"b, new", "c": b"c, only at SRC"})
    put_tree(s3, data, {"in/a": b"a, old", "in/sub/b": b"b, old", "in/d": b"only at DST"})
    r = cli("mv", str(tmp_path / "src"), f"s3://{data}/in/", "--backup-dir", f"s3://{keep}/bk/", "--suffix", ".old",
            "--json", env=data_path)
    assert r.code == 0, r
    assert tree(s3, data) == {"in/a": b"a, new", "in/sub/b": b"b, new", "in/c": b"c, only at SRC",
                              "in/d": b"only at DST"}
    assert tree(s3, keep) == {"bk/a.old": b"a, old", "bk/sub/b.old": b"b, old"}, "c had nothing to keep"
    assert read_tree(tmp_path / "src") == {}, "every source moved"
    assert f"2 objects backed up to s3://{keep}/bk/ before they were overwritten" in r.err
    assert r.summary["copied"] == 3 and r.summary["deleted"] == 3 and r.summary["failed"] == 0


def test_mv_s3_to_s3_keeps_overwritten_objects(cli, s3, make_bucket, data_path):
    data, keep = make_bucket(), make_bucket()
    put_tree(s3, data, {"src/a": b"a, new", "src/x/y": b"y, new", "src/z": b"z",
                        "dst/a": b"a, old", "dst/x/y": b"y, old"})
    r = cli("mv", f"s3://{data}/src/", f"s3://{data}/dst/", "--backup-dir", f"s3://{keep}/2026/",
            "--suffix", "~", env=data_path)
    assert r.code == 0, r
    assert tree(s3, data) == {"dst/a": b"a, new", "dst/x/y": b"y, new", "dst/z": b"z"}, "SRC gone, DST new"
    assert tree(s3, keep) == {"2026/a~": b"a, old", "2026/x/y~": b"y, old"}


def test_mv_one_object_to_a_new_name_keeps_its_old_body(cli, s3, bucket, data_path):
    """SRC and DST each name one object: the backup keeps DST's name (not its whole key as a prefix)."""
    put_tree(s3, bucket, {"in/report.csv": b"new", "out/latest.csv": b"old"})
    r = cli("mv", f"s3://{bucket}/in/report.csv", f"s3://{bucket}/out/latest.csv",
            "--backup-dir", f"s3://{bucket}/bk/", "--suffix", ".1", env=data_path)
    assert r.code == 0, r
    assert tree(s3, bucket) == {"out/latest.csv": b"new", "bk/latest.csv.1": b"old"}


def test_copy_local_to_local_keeps_overwritten_files(cli, tmp_path):
    """copy takes the same option (mv shares its declaration): DST's old files go to the backup dir."""
    write_tree(tmp_path / "src", {"a": b"a2", "d/b": b"b2", "c": b"c"})
    write_tree(tmp_path / "dst", {"a": b"a1", "d/b": b"b1", "e": b"e"})
    r = cli("copy", str(tmp_path / "src"), str(tmp_path / "dst"), "--backup-dir", str(tmp_path / "bk"))
    assert r.code == 0, r
    assert read_tree(tmp_path / "dst") == {"a": b"a2", "d/b": b"b2", "c": b"c", "e": b"e"}
    assert read_tree(tmp_path / "bk") == {"a": b"a1", "d/b": b"b1"}
    assert read_tree(tmp_path / "src") == {"a": b"a2", "d/b": b"b2", "c": b"c"}, "copy deletes nothing"


@pytest.mark.unit
def test_api_move_backup_dir(tmp_path):
    import s3bulk
    from s3bulk.errors import UsageError

    write_tree(tmp_path / "src", {"a": b"new"})
    write_tree(tmp_path / "dst", {"a": b"old"})
    summary = s3bulk.move(str(tmp_path / "src"), str(tmp_path / "dst"), backup_dir=str(tmp_path / "bk"),
                          suffix=".bak")
    assert summary.ok and summary.counters.deleted == 1, summary
    assert read_tree(tmp_path / "dst") == {"a": b"new"} and read_tree(tmp_path / "bk") == {"a.bak": b"old"}
    with pytest.raises(UsageError):
        s3bulk.move(str(tmp_path / "dst"), str(tmp_path / "x"), suffix=".bak")
    with pytest.raises(UsageError, match="inside DST"):
        s3bulk.copy(str(tmp_path / "dst"), str(tmp_path / "x"), backup_dir=str(tmp_path / "x" / "bk"))
    with pytest.raises(UsageError, match="SyncOptions"):  # sync's backup_dir is its own keyword
        s3bulk.sync(str(tmp_path / "dst"), str(tmp_path / "x"), options=s3bulk.TransferOptions(backup_dir="bk"))


# --- a backup that fails: nothing overwritten, nothing deleted --------------------------------------

def test_failed_backup_overwrites_nothing_and_keeps_the_source(cli, s3, bucket, tmp_path, data_path):
    """The backup of `a` cannot be written (a directory stands where its file would go): `a` at DST
    keeps its old body, its source stays, the run exits 1 naming why; the others move as asked."""
    write_tree(tmp_path / "src", {"a": b"a, new", "b": b"b, new", "c": b"c"})
    put_tree(s3, bucket, {"m/a": b"a, old", "m/b": b"b, old"})
    (tmp_path / "bk" / "a").mkdir(parents=True)
    r = cli("mv", str(tmp_path / "src"), f"s3://{bucket}/m/", "--backup-dir", str(tmp_path / "bk"), "--json",
            env=data_path)
    assert r.code == 1, r
    assert tree(s3, bucket) == {"m/a": b"a, old", "m/b": b"b, new", "m/c": b"c"}
    assert read_tree(tmp_path / "src") == {"a": b"a, new"}, "the source whose DST could not be backed up stays"
    assert read_tree(tmp_path / "bk") == {"b": b"b, old"}
    assert r.summary["failed"] == 1 and r.summary["deleted"] == 2, r.summary
    assert "not overwritten: its backup failed" in r.out and "Traceback" not in r.err
    r = cli("mv", str(tmp_path / "src"), f"s3://{bucket}/m/", "--backup-dir", str(tmp_path / "bk"), env=data_path)
    assert r.code == 1 and "not overwritten: its backup failed" in r.err, r


def test_backup_bucket_missing_changes_nothing(cli, s3, bucket, tmp_path, data_path):
    """A backup dir in a bucket that does not exist: refused before any object is copied (one line,
    as sync refuses it), DST and SRC as they were."""
    write_tree(tmp_path / "src", {"a": b"new", "b": b"b"})
    put_tree(s3, bucket, {"m/a": b"old"})
    r = cli("mv", str(tmp_path / "src"), f"s3://{bucket}/m/", "--backup-dir", f"s3://{bucket}-no-such-bucket/bk/",
            env=data_path)
    assert r.code != 0 and "bucket does not exist" in one_error_line(r.err), r
    assert tree(s3, bucket) == {"m/a": b"old"}
    assert read_tree(tmp_path / "src") == {"a": b"new", "b": b"b"}


# --- where a backup dir may be, and what goes with it ----------------------------------------------------

def test_backup_dir_refused_inside_dst_or_src(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {"src/a": b"a", "dst/a": b"old"})
    for backup, says in ((f"s3://{bucket}/dst/bk/", "is inside DST"), (f"s3://{bucket}/src/bk/", "overlaps SRC"),
                         (f"s3://{bucket}/", "holds DST")):
        r = cli("mv", f"s3://{bucket}/src/", f"s3://{bucket}/dst/", "--backup-dir", backup)
        assert r.code == 2 and says in one_error_line(r.err), (backup, r)
    write_tree(tmp_path / "src", {"a": b"a"})
    r = cli("copy", str(tmp_path / "src"), str(tmp_path / "dst"), "--backup-dir", str(tmp_path / "dst" / "old"))
    assert r.code == 2 and "is inside DST" in one_error_line(r.err), r
    assert tree(s3, bucket) == {"src/a": b"a", "dst/a": b"old"} and not (tmp_path / "dst").exists()


@pytest.mark.parametrize("args, says", [
    (["--suffix", ".x"], "--suffix goes with --backup-dir"),
    (["--backup-dir", "http://127.0.0.1:1/x/"], "must be writable"),
])
def test_backup_options_misused(cli, tmp_path, args, says):
    write_tree(tmp_path / "src", {"a": b"a"})
    r = cli("mv", str(tmp_path / "src"), str(tmp_path / "dst"), *args)
    assert r.code == 2 and says in one_error_line(r.err), r
    assert read_tree(tmp_path / "src") == {"a": b"a"}


def test_backup_dir_not_with_a_pipe(cli, tmp_path):
    r = cli("copy", "-", str(tmp_path / "x"), "--backup-dir", str(tmp_path / "bk"))
    assert r.code == 2 and "--backup-dir" in one_error_line(r.err), r


def test_no_clobber_and_update_back_up_only_what_is_overwritten(cli, s3, bucket, tmp_path):
    """--no-clobber overwrites nothing: nothing is backed up. --update keeps a newer DST copy, so
    that one is not backed up either (the same HEAD decides both)."""
    write_tree(tmp_path / "src", {"a": b"a, new", "b": b"b, new"})
    now = os.path.getmtime(tmp_path / "src" / "a")
    # a at SRC an hour ahead, b an hour behind: DST's copies are written after the files, within
    # the same second or not, so only times well apart decide --update without racing the clock
    os.utime(tmp_path / "src" / "a", (now + 3600, now + 3600))
    os.utime(tmp_path / "src" / "b", (now - 3600, now - 3600))  # b at SRC is older than DST's
    put_tree(s3, bucket, {"m/a": b"a, old", "m/b": b"b, at DST"})
    r = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/m/", "--backup-dir", f"s3://{bucket}/bk/", "--no-clobber")
    assert r.code == 0 and not tree(s3, bucket, "bk/"), r
    r = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/m/", "--backup-dir", f"s3://{bucket}/bk/", "--update")
    assert r.code == 0, r
    assert tree(s3, bucket) == {"m/a": b"a, new", "m/b": b"b, at DST", "bk/a": b"a, old"}


# --- the cost: a HEAD per object only with the option -----------------------------------------------

def test_heads_only_with_backup_dir(cli, s3, bucket, tmp_path, data_path):
    """The default mv sends no HEAD per object (at most the one read-back of its first write:
    engine/transfer/verify.py); with --backup-dir each object costs one more."""
    n = 6
    write_tree(tmp_path / "one", {f"k{i}": b"new" for i in range(n)})
    put_tree(s3, bucket, {f"p/k{i}": b"old" for i in range(n)})
    r = cli("mv", str(tmp_path / "one"), f"s3://{bucket}/p/", "-w", "1", "--json", env=data_path)
    assert r.code == 0 and r.summary["deleted"] == n, r
    assert heads(r.summary) <= 1, r.summary["requests"]
    plain = heads(r.summary)
    write_tree(tmp_path / "two", {f"k{i}": b"newer" for i in range(n)})
    r = cli("mv", str(tmp_path / "two"), f"s3://{bucket}/p/", "-w", "1", "--json", "--backup-dir",
            f"s3://{bucket}/bk/", env=data_path)
    assert r.code == 0, r
    assert heads(r.summary) >= plain + n, r.summary["requests"]
    assert r.summary["requests"]["COPY"] == {"2xx": n}, "the backups' own requests (server-side) count too"
    assert tree(s3, bucket, "bk/") == {f"bk/k{i}": b"new" for i in range(n)}


def test_dry_run_backs_up_nothing_and_counts_the_heads(cli, s3, bucket, tmp_path):
    write_tree(tmp_path / "src", {"a": b"new", "b": b"b"})
    put_tree(s3, bucket, {"m/a": b"old"})
    r = cli("mv", str(tmp_path / "src"), f"s3://{bucket}/m/", "--backup-dir", f"s3://{bucket}/bk/", "--dry-run",
            "--json", "-w", "1")
    assert r.code == 0, r
    assert tree(s3, bucket) == {"m/a": b"old"} and read_tree(tmp_path / "src") == {"a": b"new", "b": b"b"}
    plain = cli("mv", str(tmp_path / "src"), f"s3://{bucket}/m/", "--dry-run", "--json", "-w", "1")
    assert r.summary["estimate"]["requests"].get("HEAD", 0) == \
        plain.summary["estimate"]["requests"].get("HEAD", 0) + 2, (r.summary["estimate"], plain.summary["estimate"])
