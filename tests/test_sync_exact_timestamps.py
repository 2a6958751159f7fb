"""`sync --exact-timestamps` against LocalStack: idempotent in both directions, as aws-cli's option
(found by bench/compat.py: an upload was copied again on every run, on every server)."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import write_tree

TREE = {"a.txt": b"alpha", "d/b.txt": b"bravo"}


def test_exact_timestamps_second_sync_copies_nothing_both_ways(cli, bucket, tmp_path: Path):
    write_tree(tmp_path / "src", TREE)
    for p in (tmp_path / "src").rglob("*.txt"):
        os.utime(p, (1_600_000_000, 1_600_000_000))  # older than the upload, and not its time
    up = ["sync", str(tmp_path / "src"), f"s3://{bucket}/x/", "--exact-timestamps", "--json"]
    assert cli(*up).summary["copied"] == len(TREE)
    again = cli(*up)
    assert (again.summary["copied"], again.summary["skipped"]) == (0, len(TREE)), again

    down = ["sync", f"s3://{bucket}/x/", str(tmp_path / "dst"), "--exact-timestamps", "--json"]
    assert cli(*down).summary["copied"] == len(TREE)
    assert cli(*down).summary["copied"] == 0
    # same size, another time (1_600_000_000 is the file's own time, which the download gave back
    # from x-amz-meta-mtime: tests/test_mtime_s3.py)
    os.utime(tmp_path / "dst" / "a.txt", (1_650_000_000, 1_650_000_000))
    fixed = cli(*down)
    assert (fixed.summary["copied"], fixed.summary["skipped"]) == (1, 1), fixed
