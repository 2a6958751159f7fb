"""A request the server does not implement (501 NotImplemented) fails at once with one line.

Asking again cannot help, so it is not retried as a temporary server error: a server without
multipart uploads (bench/slow_s3.py, some small S3 gateways) used to cost five retries with backoff
before the object was reported failed."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from s3bulk.errors import StoreError
from s3bulk.model import WorkUnit
from s3bulk.stores import ResilienceOptions, StoreOptions, open_store, unwrap
from s3bulk.stores.resilient import RetriedUpload
from s3bulk.stores.s3.store import S3Multipart
from s3bulk.stores.reading import read_all, read_range, read_with_props
from s3bulk.config.urls import S3Options, parse_location

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


# Every request the stores make, by the HTTP method a server refuses it on: (name, call(store, inner)).
# `store` is the store as the engine has it (wrapped for retries, --retries 3 here), `inner` the S3
# store under it, for a multipart upload's own requests (an upload the server never opened).
_KEY = "obj-0000001"
_OPS = {
    "GET": [("get", lambda s, i: read_all(s, _KEY)), ("ranged get", lambda s, i: read_range(s, _KEY, 0, 10)),
            ("get with properties", lambda s, i: read_with_props(s, _KEY)),
            ("list", lambda s, i: s.list_page("", WorkUnit(), 10)),
            ("list versions", lambda s, i: s.list_versions_page("", None, None, 10)),
            ("list parts", lambda s, i: s.list_parts(_KEY, "u1")),
            ("list multipart uploads", lambda s, i: s.list_uploads(""))],
    "HEAD": [("head", lambda s, i: s.head(_KEY)), ("head properties", lambda s, i: s.read_props(_KEY)),
             ("head checksum", lambda s, i: s.object_checksum(_KEY))],
    "PUT": [("put", lambda s, i: s.put("new", b"x" * 10)),
            ("upload part", lambda s, i: RetriedUpload(s, S3Multipart(i, "big", "u1")).put_part(1, 0, b"x" * 10)),
            ("copy", lambda s, i: s.copy_from(s, _KEY, "copied", 100))],
    "POST": [("create multipart upload", lambda s, i: s.start_multipart("big", 20 << 20, 8 << 20)),
             ("complete multipart upload", lambda s, i: RetriedUpload(s, S3Multipart(i, "big", "u1")).complete())],
    "DELETE": [("abort multipart upload", lambda s, i: s.abort_multipart(_KEY, "u1"))],
}
# sent with a checksum header: a 501 to it may refuse the header alone
_CHECKSUMMED = {"put", "upload part", "create multipart upload"}


@pytest.mark.parametrize("lean", [True, False], ids=["lean", "botocore"])
def test_every_request_refused_with_501_fails_at_once_with_one_line(lean: bool) -> None:
    """A 501 NotImplemented is final for every request on both data paths: no retry (a request
    carrying a checksum header is sent once more without it, which is how a server that refuses
    only the header is told apart), one non-retryable error whose one line names the 501."""
    srv = slow_s3.start_thread("flat", keys=3, size=100)
    env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)

    async def run() -> list[str]:
        wrong: list[str] = []
        for method, ops in _OPS.items():
            for name, call in ops:
                # a store of its own each time: what one request taught it (checksums refused) is not carried over
                store = await open_store(parse_location("s3://b/", S3Options(endpoint_url=srv.url)),
                                         StoreOptions(lean=lean, resilience=ResilienceOptions(retries=3)))
                srv.backend.not_implemented = {method}
                before = srv.backend.requests
                try:
                    await call(store, unwrap(store))
                    wrong.append(f"{name}: no error")
                except StoreError as exc:
                    sent = srv.backend.requests - before
                    if exc.retryable or "501" not in str(exc) or "\n" in str(exc) or \
                            sent > (2 if name in _CHECKSUMMED else 1):
                        wrong.append(f"{name}: {type(exc).__name__} after {sent} requests: {exc}")
                finally:
                    srv.backend.not_implemented = set()
                    await store.close()
        return wrong

    try:
        wrong = asyncio.run(run())
    finally:
        srv.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert not wrong, wrong
