"""One big object spread over processes (engine/transfer/spread.py), against LocalStack behind a proxy.

The object is made small (21 MiB in 5 MiB parts), the threshold lowered with S3BULK_SPREAD_ABOVE
and two processes asked for with S3BULK_SPREAD_PROCESSES (the default is half the cores: none on a
2-core machine), so the same code path runs as for a 1 GiB object, in seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT, child_pids
from faultproxy import s3_error

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="helpers are forked (Linux)")

MiB = 1024 * 1024
PART = 5 * MiB
OPTS = ["--part-size", "5MiB", "--multipart-threshold", "6MiB", "--no-journal", "--json"]


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "s3bulk", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def test_one_big_object_is_moved_by_several_processes_byte_for_byte(s3, bucket, tmp_path, make_fault_proxy,
                                                                     endpoint, no_leftovers):
    body = os.urandom(4 * PART + 12345)  # 5 parts, the last one short
    s3.put_object(Bucket=bucket, Key="big.bin", Body=body)
    gate = threading.Event()

    def hold_ranged_gets(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        # parts wait here until the test has seen a helper process: the run cannot finish first
        if method == "GET" and "range" in headers:
            gate.wait(120)
        return None

    proxy = make_fault_proxy(endpoint, [hold_ranged_gets])
    env = dict(os.environ, S3BULK_SPREAD_ABOVE="8MiB", S3BULK_SPREAD_PROCESSES="2")
    proc = _start(["copy", f"s3://{bucket}/big.bin", str(tmp_path / "out.bin"), "--endpoint-url", proxy.url, *OPTS],
                  env)
    helpers: set[int] = set()
    deadline = time.monotonic() + 120
    while not helpers and proc.poll() is None and time.monotonic() < deadline:
        helpers = child_pids(proc.pid)
        time.sleep(0.01)
    gate.set()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert helpers, "no helper process was started for the big object"
    assert (tmp_path / "out.bin").read_bytes() == body
    no_leftovers(tmp_path)
    import json

    summary = json.loads(out.strip().splitlines()[-1])
    # the helpers' parts counted too, and the GET that found the object (its body refused after the head)
    assert summary["requests"]["GET"] == {"2xx": 6}, summary["requests"]


def test_a_part_failing_in_a_helper_fails_the_object_and_leaves_no_file(s3, bucket, tmp_path, make_fault_proxy,
                                                                       endpoint):
    body = os.urandom(4 * PART + 1)
    s3.put_object(Bucket=bucket, Key="big.bin", Body=body)

    def refuse_part_two(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        # part 2 is dealt to the first helper (parts go round-robin, part 1 to the run's own process)
        if method == "GET" and headers.get("range", "").startswith(f"bytes={PART}-"):
            return s3_error(403, "Forbidden", "AccessDenied", "part two is not for you")
        return None

    proxy = make_fault_proxy(endpoint, [refuse_part_two])
    env = dict(os.environ, S3BULK_SPREAD_ABOVE="8MiB", S3BULK_SPREAD_PROCESSES="2")
    proc = _start(["copy", f"s3://{bucket}/big.bin", str(tmp_path / "out.bin"), "--endpoint-url", proxy.url, *OPTS],
                  env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert "AccessDenied" in out or "denied" in (out + err).lower(), (out, err)
    assert "Traceback" not in err
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == [], "no partial or temporary file is left"
