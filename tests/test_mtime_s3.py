"""File times through S3 (issue 32 item 7): an upload from local disk keeps the file's time in
x-amz-meta-mtime (rclone's form), a download gives the file that time back, and sync stays
incremental both ways: local -> S3 -> local keeps times, and neither direction copies again.

On both S3 data paths (lean and botocore), against LocalStack.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from s3bulk.stores import file_times

MiB = 1024 * 1024
SMALL_PARTS = ["--multipart-threshold", "5MiB", "--part-size", "5MiB"]
# times well in the past, with a fraction: what a round trip must keep
TIMES = {"a.txt": 1_600_000_000.25, "d/b.txt": 1_500_000_000.123456, "d/e/c.bin": 1_400_000_000.0}


@pytest.fixture(params=["lean", "botocore"])
def data_path(request, monkeypatch):
    monkeypatch.setenv("S3BULK_DATA_PATH", request.param)
    return request.param


def _tree(root: Path, big: bool = False) -> dict[str, float]:
    times = dict(TIMES)
    if big:
        times["big.bin"] = 1_300_000_000.5
    for rel, when in times.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(os.urandom(6 * MiB) if rel == "big.bin" else rel.encode() * 3)
        os.utime(p, (when, when))
    return times


def _times(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime for p in root.rglob("*") if p.is_file()}


def _close(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(abs(a[k] - b[k]) < 2e-6 for k in a)


def test_round_trip_keeps_times_and_syncs_nothing_again(data_path, cli, s3, bucket, tmp_path):
    """local -> S3 -> local keeps times (small PUTs and one upload in parts, each way); a second
    sync in either direction, and syncing the second copy back, copy nothing."""
    one, two = tmp_path / "one", tmp_path / "two"
    times = _tree(one, big=True)
    dst = f"s3://{bucket}/p/"
    up = cli("sync", str(one), dst, "--json", *SMALL_PARTS)
    assert up.code == 0 and up.summary["copied"] == len(times), up
    for rel, when in times.items():
        meta = s3.head_object(Bucket=bucket, Key="p/" + rel)["Metadata"]
        assert re.fullmatch(r"\d+(\.\d+)?", meta["mtime"]), meta
        assert abs(float(meta["mtime"]) - when) < 1e-6
    assert s3.head_object(Bucket=bucket, Key="p/a.txt")["Metadata"]["mtime"] == "1600000000.25"

    down = cli("sync", dst, str(two), "--json", *SMALL_PARTS)
    assert down.code == 0 and down.summary["copied"] == len(times), down
    assert _close(_times(two), times), _times(two)

    for args in ((str(one), dst), (dst, str(two)), (str(two), dst)):
        again = cli("sync", *args, "--json", *SMALL_PARTS)
        assert again.code == 0, again
        assert (again.summary["copied"], again.summary["skipped"]) == (0, len(times)), (args, again.summary)
        # and the S3 -> local sync knew it without asking S3 for each object
        if args[0] == dst:
            assert "HeadObject" not in again.summary["requests"], again.summary["requests"]
    assert _close(_times(two), times)

    # an object rewritten at S3 (same size, its own time) is copied again, and gets its new time
    s3.put_object(Bucket=bucket, Key="p/a.txt", Body=b"A.TXTA.TXTA.TXT", Metadata={"mtime": "1700000000"})
    changed = cli("sync", dst, str(two), "--json")
    assert changed.code == 0 and changed.summary["copied"] == 1, changed.summary
    assert (two / "a.txt").read_bytes() == b"A.TXTA.TXTA.TXT"
    assert (two / "a.txt").stat().st_mtime == 1_700_000_000


def test_rclone_time_written_by_botocore_is_honoured(data_path, cli, s3, bucket, tmp_path):
    """Objects another tool wrote: rclone's nanosecond form, a plain integer, mc's attributes; a
    value that is not a time is ignored (LastModified, as before). A sync after copies nothing
    though the files were not downloaded by this run's marks (one HEAD each, then marked)."""
    s3.put_object(Bucket=bucket, Key="r/ns.txt", Body=b"ns", Metadata={"mtime": "1354040105.123456789"})
    s3.put_object(Bucket=bucket, Key="r/int.txt", Body=b"int", Metadata={"mtime": "1354040105"})
    s3.put_object(Bucket=bucket, Key="r/mc.txt", Body=b"mc", Metadata={
        "mc-attrs": "atime:1354040000#0/ctime:1354040000#0/gid:0/mode:33188/mtime:1354040106#500000000/uid:0"})
    s3.put_object(Bucket=bucket, Key="r/junk.txt", Body=b"junk", Metadata={"mtime": "yesterday"})
    out = tmp_path / "out"
    r = cli("copy", f"s3://{bucket}/r/", str(out), "--json")
    assert r.code == 0, r
    got = _times(out)
    assert abs(got["ns.txt"] - 1354040105.123456789) < 2e-6
    assert got["int.txt"] == 1354040105
    assert abs(got["mc.txt"] - 1354040106.5) < 2e-6
    assert got["junk.txt"] > 1_700_000_000  # LastModified: the object's write, this year

    # files with the stored time but no mark (as rclone leaves them): one HEAD each, then marked
    for name in ("ns.txt", "int.txt", "mc.txt"):
        os.removexattr(out / name, file_times.COPY_OF)
    first = cli("sync", f"s3://{bucket}/r/", str(out), "--json")
    assert first.code == 0 and first.summary["copied"] == 0, first.summary
    second = cli("sync", f"s3://{bucket}/r/", str(out), "--json")
    assert second.code == 0 and second.summary["copied"] == 0, second.summary
    assert "HeadObject" not in second.summary["requests"], second.summary["requests"]


def test_user_metadata_mtime_wins(data_path, cli, s3, bucket, tmp_path):
    """--metadata mtime=... is the user's word: kept as given; other --metadata keys leave the
    file's time to be stamped beside them."""
    src = tmp_path / "src"
    _tree(src)
    r = cli("copy", str(src / "a.txt"), f"s3://{bucket}/mine.txt", "--metadata", "mtime=1234")
    assert r.code == 0, r
    assert s3.head_object(Bucket=bucket, Key="mine.txt")["Metadata"] == {"mtime": "1234"}
    r = cli("copy", str(src / "a.txt"), f"s3://{bucket}/other.txt", "--metadata", "owner=ana")
    assert r.code == 0, r
    assert s3.head_object(Bucket=bucket, Key="other.txt")["Metadata"] == {"owner": "ana", "mtime": "1600000000.25"}


def test_s3_to_s3_keeps_the_source_time(data_path, cli, s3, bucket, make_bucket, tmp_path):
    """A server-side copy keeps x-amz-meta-mtime as it keeps all metadata; so does a download after."""
    src = tmp_path / "src"
    times = _tree(src)
    assert cli("copy", str(src), f"s3://{bucket}/a/").code == 0
    other = make_bucket()
    r = cli("copy", f"s3://{bucket}/a/", f"s3://{other}/b/", "--json")
    assert r.code == 0, r
    assert cli("copy", f"s3://{other}/b/", str(tmp_path / "back")).code == 0
    assert _close(_times(tmp_path / "back"), times)


@pytest.mark.unit
def test_format_is_rclones():
    """Fixed point, trailing zeros dropped; rclone's nine decimals read back; other forms refused."""
    assert file_times.format_mtime(1700000000.0) == "1700000000"
    assert file_times.format_mtime(1700000000.5) == "1700000000.5"
    assert file_times.parse_mtime("1354040105.123456789") == pytest.approx(1354040105.123456789)
    assert file_times.parse_mtime("1e9") is None and file_times.parse_mtime("") is None


def test_the_downloads_mark_is_not_uploaded_as_metadata(cli, s3, bucket, make_bucket, tmp_path):
    """--preserve-xattrs uploads a file's user.* attributes as metadata, but not s3bulk's own mark."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"body", Metadata={"mtime": "1500000000.5", "owner": "ana"})
    down = tmp_path / "down"
    assert cli("copy", f"s3://{bucket}/", str(down), "--preserve-xattrs").code == 0
    assert os.getxattr(down / "k", file_times.COPY_OF)  # marked
    other = make_bucket()
    assert cli("copy", str(down), f"s3://{other}/", "--preserve-xattrs").code == 0
    assert s3.head_object(Bucket=other, Key="k")["Metadata"] == {"owner": "ana", "mtime": "1500000000.5"}


def test_a_folder_marker_with_a_file_time_becomes_a_directory(data_path, cli, s3, bucket, tmp_path):
    """A zero-byte "dir/" object carrying x-amz-meta-mtime (rclone writes its directory markers so)
    downloads as a directory, as a marker without one does, beside the files that carry times."""
    s3.put_object(Bucket=bucket, Key="p/dir/", Body=b"", Metadata={"mtime": "1500000000.25"})
    s3.put_object(Bucket=bucket, Key="p/dir/f", Body=b"f", Metadata={"mtime": "1500000001.5"})
    out = tmp_path / "out"
    down = cli("sync", f"s3://{bucket}/p/", str(out), "--json")
    assert down.code == 0 and down.summary["copied"] == 2, down
    assert (out / "dir").is_dir() and (out / "dir" / "f").read_bytes() == b"f"
    assert abs((out / "dir" / "f").stat().st_mtime - 1500000001.5) < 2e-6
