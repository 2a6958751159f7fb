"""Ctrl-C twice (issue 15): the stop is immediate, and the summary's copied count is still exactly
the files on disk. Before, objects that landed in the quarter second before the workers were
killed were on disk but not counted (a run counted 315 copies with 320 files on disk).
Real CLI, S3 (LocalStack) to local disk, paced with --max-rps so the signals come mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import ROOT

N_SMALL, N_BIG, BIG = 500, 6, 1_200_000  # the big ones are written from a thread (over 1 MiB)


@pytest.mark.parametrize("workers", ["2", "1"])
def test_double_ctrl_c_counts_exactly_the_files_on_disk(cli, bucket, tmp_path, endpoint, workers):
    src = tmp_path / "src"
    src.mkdir()
    bodies = {f"s{i:04d}": os.urandom(100 + i % 50) for i in range(N_SMALL)}
    bodies.update({f"b{i}": os.urandom(BIG) for i in range(N_BIG)})
    for name, body in bodies.items():
        (src / name).write_bytes(body)
    assert cli("copy", str(src), f"s3://{bucket}/", "-q").code == 0

    dst = tmp_path / "dst"
    proc = subprocess.Popen(
        [sys.executable, "-m", "s3bulk", "copy", f"s3://{bucket}/", str(dst), "--json", "-w", workers,
         "--max-rps", "120", "--endpoint-url", endpoint],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True,
        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state")))
    try:
        for line in proc.stdout:  # wait until copies are landing
            event = json.loads(line)
            if event["event"] == "progress" and event["copied"] >= 20:
                break
        os.killpg(proc.pid, signal.SIGINT)   # Ctrl-C reaches the whole process group
        for line in proc.stderr:              # the graceful stop has begun...
            if line.startswith("s3bulk: stopping"):
                break
        os.killpg(proc.pid, signal.SIGINT)   # ...and the second Ctrl-C makes it immediate
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "Traceback" not in err, err
    summary = [json.loads(x) for x in out.splitlines() if '"summary"' in x][-1]
    assert summary["interrupted"] is True
    names = sorted(os.listdir(dst))
    assert not [n for n in names if n.startswith(".s3bulk-")], "temporary files left behind"
    assert 0 < len(names) < len(bodies), "interrupted midway"
    for name in names:
        assert (dst / name).read_bytes() == bodies[name], f"{name} is not whole"
    assert summary["copied"] == len(names), (summary["copied"], len(names))
    assert summary["copied_bytes"] == sum(len(bodies[n]) for n in names)
