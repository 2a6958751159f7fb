"""A destination-wide problem stops the run at once instead of failing every remaining object with
the same message (issue 15): a filesystem that fills up mid-run gives one error line, exit 3, a
journal kept, and `--resume` after making room finishes the copy byte-identical."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, put_tree, read_tree


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


def test_progress_moves_during_one_big_object(s3, bucket, endpoint, state_home, tmp_path):
    """One 20 MiB upload in 5 MiB parts, paced to a part every 2.5 s: once a part has landed at the
    destination (ListParts says so), --json progress shows bytes moving before the object is done,
    and the final summary counts the object once.

    The test waits on the part landing, not on the pacing: the parts after the first leave seconds
    in which the once-a-second progress events must show it, however busy the machine."""
    size = 20 * 1024 * 1024
    src = tmp_path / "src"
    src.mkdir()
    (src / "big.bin").write_bytes(os.urandom(size))
    proc = subprocess.Popen(
        [sys.executable, "-m", "s3bulk", "copy", str(src), f"s3://{bucket}/", "--json", "--max-bandwidth", "2MiB",
         "--part-size", "5MiB", "--no-journal", "--endpoint-url", endpoint],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env=dict(os.environ, XDG_STATE_HOME=state_home))
    events: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [events.put(json.loads(line)) for line in proc.stdout if line.startswith("{")]
                     + [events.put(None)], daemon=True).start()
    try:
        deadline = time.monotonic() + 120
        while not _parts_landed(s3, bucket, "big.bin"):  # the condition: a part is at the destination
            assert proc.poll() is None and time.monotonic() < deadline, "no part landed while the upload ran"
            time.sleep(0.05)
        moving: list[int] = []
        summary = None
        while summary is None:
            event = events.get(timeout=120)
            assert event is not None, "the output ended without a summary"
            if event["event"] == "progress" and event["copied"] == 0:
                moving.append(event["moved_bytes"])
            elif event["event"] == "summary":
                summary = event
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert any(0 < b < size for b in moving), moving
    assert summary["copied_bytes"] == size


def _parts_landed(s3, bucket: str, key: str) -> bool:
    """Whether an open multipart upload of key holds a part."""
    for upload in s3.list_multipart_uploads(Bucket=bucket, Prefix=key).get("Uploads", []):
        if upload["Key"] == key and s3.list_parts(Bucket=bucket, Key=key, UploadId=upload["UploadId"]).get("Parts"):
            return True
    return False
