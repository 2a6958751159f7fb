"""A request the server does not implement (501 NotImplemented) fails at once with one line.

Asking again cannot help, so it is not retried as a temporary server error: a server without
multipart uploads (bench/slow_s3.py, some small S3 gateways) used to cost five retries with backoff
before the object was reported failed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import slow_s3  # noqa: E402


def test_multipart_upload_to_a_server_without_it_fails_once_with_one_line(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(20 << 20))
    srv = slow_s3.start_thread("flat", keys=3, size=100)
    try:
        env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
                   AWS_DEFAULT_REGION="us-east-1")
        before = srv.backend.requests
        p = subprocess.run([sys.executable, "-m", "s3bulk", "copy", str(big), "s3://b/up/big.bin",
                            "--endpoint-url", srv.url, "--part-size", "5MiB", "--quiet"],
                           capture_output=True, text=True, env=env, timeout=120)
        sent = srv.backend.requests - before
    finally:
        srv.stop()
    assert p.returncode != 0
    errors = [line for line in p.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "does not implement" in errors[0] and "501" in errors[0], p.stderr
    assert "Traceback" not in p.stderr
    # the bucket check and one CreateMultipartUpload: no retries of the refused request
    assert sent <= 3, sent
