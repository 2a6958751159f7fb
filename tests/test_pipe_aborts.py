"""A stdin upload that fails stays aborted (issue 33, item 4, for pipes).

`s3bulk copy - s3://b/k` cuts a stream of unknown length into parts (engine/transfer/pipes.py).
When one part failed, the others in flight used to be cancelled mid-request and the abort sent at
once; their bodies, already in buffers between s3bulk and the server, could then reach the server
after the abort and bring the upload back (versitygw does; AWS says an upload may need aborting
more than once). Now the parts in flight end first (stores/base.py PartTasks), then the abort.

Against versitygw behind tests/faultproxy.py, whose hostile handler answers 500 to UploadPart 3
every time (`--retries 0`: the object fails for good) and holds every other UploadPart until an
AbortMultipartUpload arrives (or a few seconds passed), then forwards it: the order the proxy saw
is the mechanism, checked without racing a clock (a part forwarded after the abort fails the
test whatever the timing), and the server's state after the run is the outcome."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
import uuid
from typing import Iterator

import pytest

from conftest import ROOT, DyingProducer
from versitygw import started as versitygw_started

MiB = 1024 * 1024
REFUSED = 3   # the UploadPart answered 500 every time
HOLD = 5.0    # seconds a part waits at the proxy for an abort that, fixed, never comes before it ends


@pytest.fixture(scope="module")
def versitygw(tmp_path_factory) -> Iterator[str]:
    server = versitygw_started(tmp_path_factory, access="test", secret="test")
    yield server.url
    server.stop()


def _client(url: str):
    import botocore.session

    return botocore.session.get_session().create_client("s3", endpoint_url=url, region_name="us-east-1",
                                                        aws_access_key_id="test", aws_secret_access_key="test")


def _part_number(target: str) -> int | None:
    if "uploadId=" not in target:
        return None
    for pair in target.partition("?")[2].split("&"):
        name, _, value = pair.partition("=")
        if name == "partNumber":
            return int(value)
    return None


class HoldParts:
    """The faultproxy's hostile handler: UploadPart `refused` answered 500; every other UploadPart
    held until an abort arrived (or HOLD seconds), then forwarded. `seen` is the order of what
    reached the server: ("part", n) when forwarded, ("abort", 0) when an abort arrived."""

    def __init__(self, refused: int | None = REFUSED) -> None:
        self.refused = refused
        self.seen: list[tuple[str, int]] = []
        self.aborted: asyncio.Event | None = None  # made on the proxy's loop

    async def __call__(self, req, forward, writer) -> bool | None:
        from faultproxy import s3_error

        if self.aborted is None:
            self.aborted = asyncio.Event()
        number = _part_number(req.target)
        if req.method == "DELETE" and "uploadId=" in req.target:
            self.seen.append(("abort", 0))
            self.aborted.set()
            return None
        if req.method != "PUT" or number is None:
            return None
        if number == self.refused:
            writer.write(s3_error(500, "Internal Server Error", "InternalError", "refused by the test"))
            await writer.drain()
            return False
        try:
            await asyncio.wait_for(self.aborted.wait(), HOLD)
        except TimeoutError:
            pass
        self.seen.append(("part", number))
        answer = await forward()
        writer.write(answer.raw(True))
        await writer.drain()
        return True


def _wait(condition, what: str, deadline: float = 120) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, f"no {what} within {deadline} s"
        time.sleep(0.05)


def _proxied(versitygw: str, make_fault_proxy, hold: HoldParts):
    """(a botocore client of versitygw, a new bucket in it, a faultproxy in front with `hold`)."""
    s3 = _client(versitygw)
    bucket = f"t-{uuid.uuid4().hex[:20]}"
    s3.create_bucket(Bucket=bucket)
    proxy = make_fault_proxy(versitygw)
    proxy.hostile = hold
    return s3, bucket, proxy


def _check_order(hold: HoldParts) -> None:
    """The abort came, and no UploadPart reached the server after it; some were held in flight
    when the upload failed (so the order says something)."""
    seen = list(hold.seen)
    assert ("abort", 0) in seen, seen
    first_abort = seen.index(("abort", 0))
    late = [n for kind, n in seen[first_abort:] if kind == "part"]
    assert not late, f"UploadPart {late} reached the server after the abort: {seen}"
    assert any(kind == "part" for kind, _ in seen[:first_abort]), seen


@pytest.mark.parametrize("data_path", ["lean", "botocore"])
def test_a_failed_stdin_upload_sends_its_abort_after_the_parts_in_flight(data_path, versitygw,
                                                                         make_fault_proxy, tmp_path):
    """Through the CLI: 6 parts of stdin, UploadPart 3 answered 500 (`--retries 0`), parts 1 and 2
    held in flight meanwhile. Before: parts 1, 2 and 4 reached the server after the abort."""
    hold = HoldParts()
    s3, bucket, proxy = _proxied(versitygw, make_fault_proxy, hold)
    run = subprocess.run(
        [sys.executable, "-m", "s3bulk", "copy", "-", f"s3://{bucket}/piped.bin", "--part-size", "5MiB",
         "--retries", "0", "--endpoint-url", proxy.url],
        input=random.Random(5).randbytes(6 * 5 * MiB), capture_output=True, cwd=ROOT, timeout=300,
        env=dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", S3BULK_DATA_PATH=data_path,
                 XDG_STATE_HOME=str(tmp_path / "state")))
    err = run.stderr.decode()
    assert run.returncode != 0, err
    assert len(err.splitlines()) == 1 and err.startswith("s3bulk: error:") and "Traceback" not in err, err
    _wait(lambda: proxy.connections_open == 0, "end of the proxy's last request")  # nothing more can land
    _check_order(hold)
    assert not s3.list_multipart_uploads(Bucket=bucket, Prefix="piped.bin").get("Uploads")
    assert not s3.list_objects_v2(Bucket=bucket).get("Contents")


@pytest.mark.parametrize("data_path", ["lean", "botocore"])
def test_a_part_refused_while_stdin_is_silent_ends_the_upload_at_once(data_path, versitygw, make_fault_proxy,
                                                                     tmp_path):
    """Three parts and a byte written, stdin then kept open and silent: UploadPart 2 answered 500
    ends the run (exit non-zero, one line, the upload aborted) without waiting for more input: the
    wait for the stream's next bytes ends at a part's failure, as the parts' TaskGroup did."""
    hold = HoldParts(refused=2)
    s3, bucket, proxy = _proxied(versitygw, make_fault_proxy, hold)
    up = subprocess.Popen(
        [sys.executable, "-m", "s3bulk", "copy", "-", f"s3://{bucket}/silent.bin", "--part-size", "5MiB",
         "--retries", "0", "--endpoint-url", proxy.url], stdin=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        env=dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", S3BULK_DATA_PATH=data_path,
                 XDG_STATE_HOME=str(tmp_path / "state")))
    try:
        up.stdin.write(random.Random(6).randbytes(3 * 5 * MiB + 1))
        up.stdin.flush()
        code = up.wait(120)  # stdin still open: only the failure can end the run
        err = up.stderr.read().decode()
    finally:
        if up.poll() is None:
            up.kill()
        up.stdin.close()
    assert code != 0, err
    assert len(err.splitlines()) == 1 and err.startswith("s3bulk: error:") and "Traceback" not in err, err
    _wait(lambda: proxy.connections_open == 0, "end of the proxy's last request")
    _check_order(hold)
    assert not s3.list_multipart_uploads(Bucket=bucket, Prefix="silent.bin").get("Uploads")


@pytest.mark.parametrize("data_path", ["lean", "botocore"])
def test_a_stream_that_breaks_aborts_after_the_parts_in_flight(data_path, versitygw, make_fault_proxy,
                                                               monkeypatch):
    """The stream itself fails (a read error after two parts, through the API): the parts already
    sent end before the abort too, and the read error is what is raised."""
    from s3bulk import api
    from s3bulk.config.urls import S3Options
    from s3bulk.engine.plan import TransferOptions
    from s3bulk.errors import StreamFailed

    monkeypatch.setenv("S3BULK_DATA_PATH", data_path)
    hold = HoldParts(refused=None)
    s3, bucket, proxy = _proxied(versitygw, make_fault_proxy, hold)
    dies = DyingProducer(10 * MiB + 1, OSError(5, "the producer went away"))  # two parts and a little more
    with pytest.raises(StreamFailed, match="the producer went away"):
        api.upload_stream(dies, f"s3://{bucket}/broken.bin", s3=S3Options(endpoint_url=proxy.url),
                          options=TransferOptions(part_size="5MiB", part_concurrency=3, retries=0))
    _wait(lambda: proxy.connections_open == 0, "end of the proxy's last request")
    _check_order(hold)
    assert not s3.list_multipart_uploads(Bucket=bucket, Prefix="broken.bin").get("Uploads")
    assert not s3.list_objects_v2(Bucket=bucket).get("Contents")
