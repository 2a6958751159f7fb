"""A destination-wide problem stops the run at once instead of failing every remaining object with
the same message (issue 15): a filesystem that fills up mid-run gives one error line, exit 3, a
journal kept, and `--resume` after making room finishes the copy byte-identical."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import put_tree, read_tree


def test_full_disk_stops_once_and_resumes(cli, s3, bucket, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        objects = {f"f{i:04d}": os.urandom(20_000) for i in range(300)}  # ~6 MB: a third fits
        put_tree(s3, bucket, objects)
        dst, journal = mnt / "d", tmp_path / "j.sqlite"
        args = ["copy", f"s3://{bucket}/", str(dst), "--journal", str(journal), "-w", "2", "-c", "4"]
        r = cli(*args)
        assert r.code == 3, r
        lines = [line for line in r.err.splitlines() if line.strip()]
        assert len(lines) == 1 and "no space left on device" in lines[0] and "--resume" in lines[0], r
        assert journal.exists()
        copied = read_tree(dst)
        assert 0 < len(copied) < len(objects)
        assert all(objects[k] == v for k, v in copied.items())
        assert not [p for p in dst.rglob("*") if p.name.startswith(".s3bulk-")], "no partial files left"
        subprocess.run(["mount", "-o", "remount,size=16m", str(mnt)], check=True)
        r = cli(*args, "--resume", "--json")
        assert r.code == 0, r
        assert read_tree(dst) == objects
        assert r.summary["copied"] == len(objects) - len(copied), r.summary
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_progress_moves_during_one_big_object(cli, s3, bucket, tmp_path):
    """One 40 MiB upload in 8 MiB parts, paced at 8 MiB/s: --json progress events show bytes moving
    before the object is done (parts as they land), and the final summary counts the object once."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "big.bin").write_bytes(os.urandom(40 * 1024 * 1024))
    r = cli("copy", str(src), f"s3://{bucket}/", "--json", "--max-bandwidth", "8MiB", "--part-size", "8MiB",
            "--no-journal")
    assert r.code == 0, r
    moving = [e["moved_bytes"] for e in r.events if e.get("event") == "progress" and e["copied"] == 0]
    assert any(0 < b < 40 * 1024 * 1024 for b in moving), moving
    assert r.summary["copied_bytes"] == 40 * 1024 * 1024
