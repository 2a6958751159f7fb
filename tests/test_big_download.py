"""One big object downloaded into a local file (issue 17): a disk without room for it. Against
LocalStack behind the fault proxy, which records the ranges asked for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

MiB = 1024 * 1024


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "s3bulk", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def _recording(make_fault_proxy, endpoint) -> tuple[object, list[str]]:
    ranges: list[str] = []

    def record(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if method == "GET" and "range" in headers:
            ranges.append(headers["range"])
        return None

    return make_fault_proxy(endpoint, [record]), ranges


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mounts a tmpfs")
def test_a_big_object_that_cannot_fit_fails_before_any_range_is_read(s3, bucket, tmp_path, make_fault_proxy,
                                                                     endpoint):
    # the file is no longer preallocated whole (on tmpfs that zeroed every page before the first
    # GET); the filesystem's free space is checked instead, so a full disk still costs no download
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(small)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        s3.put_object(Bucket=bucket, Key="big.bin", Body=os.urandom(21 * MiB))
        proxy, ranges = _recording(make_fault_proxy, endpoint)
        run = _run(["copy", f"s3://{bucket}/big.bin", str(small / "out.bin"), "--endpoint-url", proxy.url,
                    "--no-journal"])
        assert run.returncode == 3, run.stderr
        assert "no space left on device" in run.stderr
        assert "Traceback" not in run.stderr
        assert ranges == [], "the object was read although it could not be written"
        assert sorted(p.name for p in Path(small).iterdir()) == [], "no partial or temporary file is left"
    finally:
        subprocess.run(["umount", "-l", str(small)], capture_output=True)
