"""Ctrl-C and SIGTERM stop a run cleanly: exit 130 (143 for SIGTERM), a line saying how to resume, no partial file under
a final name, no temporary files left, and no worker left running (resuming: test_resume.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import ROOT


@pytest.fixture(scope="module")
def three_thousand(s3, endpoint, tmp_path_factory) -> tuple[str, dict[str, bytes]]:
    """(a bucket, its 3,000 objects by key): uploaded once for the module's cases, which only read it
    (3,000 PUTs to LocalStack were most of each case's time)."""
    bucket = f"t-{uuid.uuid4().hex[:20]}"
    s3.create_bucket(Bucket=bucket)
    src = tmp_path_factory.mktemp("three-thousand")
    bodies = {f"f{i:05d}": os.urandom(1000 + i) for i in range(3000)}
    for name, body in bodies.items():
        (src / name).write_bytes(body)
    up = subprocess.run([sys.executable, "-m", "s3bulk", "copy", str(src), f"s3://{bucket}/", "-q", "--no-journal",
                         "--endpoint-url", endpoint], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert up.returncode == 0, up.stderr
    return bucket, bodies


@pytest.mark.parametrize("sig,workers", [(signal.SIGINT, "2"), (signal.SIGTERM, "2"), (signal.SIGINT, "1")])
def test_interrupted_copy_leaves_only_whole_files(three_thousand, tmp_path, endpoint, sig, workers):
    bucket, bodies = three_thousand

    dst = tmp_path / "dst"
    proc = subprocess.Popen(
        [sys.executable, "-m", "s3bulk", "copy", f"s3://{bucket}/", str(dst), "--json", "-w", workers,
         "--endpoint-url", endpoint],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True,
        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state")))
    try:
        for line in proc.stdout:
            event = json.loads(line)
            if event["event"] == "progress" and event["copied"] > 0:
                break
        # Ctrl-C reaches the whole foreground process group; SIGTERM only the coordinator
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130), (proc.returncode, err)
    assert "Traceback" not in err, err
    # a graceful stop: one line saying what was done and how to go on (the journal is kept)
    assert "s3bulk: interrupted: " in err and "resume with: s3bulk copy" in err, err
    summary = [json.loads(x) for x in out.splitlines() if '"summary"' in x][-1]
    assert summary["interrupted"] is True
    names = sorted(os.listdir(dst))
    assert not [n for n in names if n.startswith(".s3bulk-")], "temporary files left behind"
    assert 0 < len(names) < len(bodies), "interrupted midway"
    for name in names:
        assert (dst / name).read_bytes() == bodies[name], f"{name} is not whole"
    time.sleep(0.5)
    leftover = subprocess.run(["pgrep", "-f", f"s3bulk.*{bucket}"], capture_output=True, text=True).stdout
    assert not leftover.strip(), f"processes still running: {leftover}"
