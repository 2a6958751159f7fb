"""Lambda-sized memory: --max-memory, the Lambda handler, and runs under a hard 128 MiB memory cgroup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import ROOT, write_tree
from test_listget import served

CGROUP = Path("/sys/fs/cgroup/memory")
MiB = 1024 * 1024


@pytest.mark.unit
def test_handler_import_is_light():
    code = ("import sys, s3bulk.aws_lambda; "
            "print(sorted(m for m in ('rich', 'typer', 'multiprocessing', 's3bulk.engine.run.launch', 'aiobotocore') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


def test_too_small_budget_is_refused_up_front(cli, tmp_path):
    run = cli("copy", str(tmp_path), str(tmp_path / "d"), "--max-memory", "40MiB")
    assert run.code == 2, run
    assert "cannot hold one 5 MiB part" in run.err and "give at least" in run.err
    assert not (tmp_path / "d").exists()


class FakeContext:
    """What the handler uses of Lambda's context object: a deadline."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self.deadline - time.monotonic()) * 1000)


def test_handler_stops_before_the_deadline_and_continues(tmp_path, monkeypatch):
    from s3bulk.aws_lambda import handler

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
    dst = tmp_path / "dst"
    with served("--synthetic", "30000", "--size", "50", "--page-size", "200", "--processes", "1") as url:
        event = {"source": url, "destination": str(dst), "stop_before_deadline_ms": 1000,
                 "options": {"concurrency": 16}}
        first = handler(event, FakeContext(2.0))  # the deadline falls in the middle of the copy
        assert first["ok"] and not first["complete"], first
        assert 0 < first["copied"] < 30000
        assert first["continue"] is not None
        json.dumps(first)  # the result is plain JSON
        calls, result = 1, first
        while not result["complete"]:
            result = handler({**event, "continue": result["continue"]}, FakeContext(600))
            calls += 1
            assert result["ok"], result
    files = os.listdir(dst)
    assert len(files) == 30000
    assert calls == 2
    # the first call finished the units it had started, and the second began with the next one:
    # nothing was copied twice
    assert first["copied"] + result["copied"] == 30000
    assert (dst / "f000000029999").read_bytes() == (b"f000000029999\n" * 4)[:50]


@pytest.mark.unit
def test_handler_reports_bad_events():
    from s3bulk.aws_lambda import handler

    assert handler({}, None)["ok"] is False
    bad = handler({"source": "s3://", "destination": "/tmp/x"}, None)
    assert bad["ok"] is False and "bucket" in bad["error"]
    unknown = handler({"source": "/tmp", "destination": "/tmp/x", "options": {"turbo": True}}, None)
    assert unknown["ok"] is False and "turbo" in unknown["error"]


def _cgroup_or_skip() -> Path:
    if not (CGROUP / "cgroup.procs").exists() or not os.access(CGROUP, os.W_OK):
        pytest.skip("needs a writable cgroup v1 memory controller (root)")
    group = CGROUP / f"s3bulk-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    (group / "memory.limit_in_bytes").write_text(str(128 * MiB))
    swap = group / "memory.memsw.limit_in_bytes"
    if swap.exists():
        try:
            swap.write_text(str(128 * MiB))
        except OSError:
            pass
    return group


def _run_capped(group: Path, args: list[str]) -> tuple[subprocess.CompletedProcess, int]:
    script = f'echo $$ > {group}/cgroup.procs && exec "$@"'
    proc = subprocess.run(["sh", "-c", script, "sh", sys.executable, "-m", "s3bulk", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=1200)
    peak = int((group / "memory.max_usage_in_bytes").read_text())
    return proc, peak


def _remove(group: Path) -> None:
    for _ in range(50):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def test_100000_objects_under_a_hard_128_mib_cap(tmp_path):
    group = _cgroup_or_skip()
    try:
        with served("--synthetic", "100000", "--size", "100") as url:
            proc, peak = _run_capped(group, ["copy", url, str(tmp_path / "dst"), "--max-memory", "128MiB",
                                             "--json"])
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
        summary = json.loads(proc.stdout.splitlines()[-1])
        assert summary["copied"] == 100000 and summary["workers"] == 1
        assert len(os.listdir(tmp_path / "dst")) == 100000
        print(f"cgroup peak (RSS + page cache): {peak / MiB:.1f} MiB; s3bulk peak RSS "
              f"{summary['peak_rss_bytes'] / MiB:.1f} MiB")
        assert summary["peak_rss_bytes"] < 128 * MiB
    finally:
        _remove(group)


def test_1_gib_object_under_a_hard_128_mib_cap(tmp_path):
    group = _cgroup_or_skip()
    src = tmp_path / "src"
    src.mkdir()
    big = src / "big.bin"
    with open(big, "wb") as f:  # 1 GiB with a pattern at every MiB, so misplaced parts show
        for i in range(1024):
            f.write(i.to_bytes(4, "big") * (MiB // 4))
    try:
        with served(str(src), "--processes", "1") as url:
            proc, peak = _run_capped(group, ["copy", url, str(tmp_path / "dst"), "--max-memory", "128MiB",
                                             "--json"])
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
        summary = json.loads(proc.stdout.splitlines()[-1])
        assert summary["copied"] == 1 and summary["copied_bytes"] == 1024 * MiB
        assert summary["peak_rss_bytes"] < 128 * MiB
        with open(tmp_path / "dst" / "big.bin", "rb") as got:
            for i in range(1024):
                block = got.read(MiB)
                assert block[:4] == i.to_bytes(4, "big") and block[-4:] == i.to_bytes(4, "big"), i
    finally:
        _remove(group)
