"""What the torn-read tests share (test_torn_reads.py: downloads; test_torn_copies.py: streamed
and server-side copies): a gate in front of LocalStack that holds one request until the test has
overwritten the object, a run read event by event, the overwrite's helpers. Two modules so the
two halves can run in two test processes at once."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Iterator

import pytest

from conftest import ROOT
from faultproxy import FaultProxy, Gate, Request

MiB = 1024 * 1024
PART = 5 * MiB
SIZE = 4 * PART          # 4 parts of 5 MiB, two in flight (--max-buffer 10MiB)
PARTS = ["--part-size", "5MiB", "--max-buffer", "10MiB", "-w", "1"]
COPY_SIZE = 4 * PART     # a server-side copy: 4 parts of 5 MiB, three in flight
COPY_PARTS = ["--copy-threshold", "5MiB", "--copy-part-size", "5MiB", "--copy-concurrency", "3", "-c", "1",
              "--max-memory", "128MiB"]
DEADLINE = 300           # seconds for any one wait below (a busy 2-core machine)
MESSAGE = "source changed during the copy"


def wait_held(gate: Gate, run: "Running") -> threading.Event:
    """Until `gate` holds a request of `run` (set the Event to let it go); fails if the run ends first."""
    try:
        return gate.wait_held(run.proc)
    except AssertionError as exc:
        if run.proc.poll() is not None:
            run.finish()
        pytest.fail(f"{exc}: {run!r}")


@contextlib.contextmanager
def gated(endpoint: str, gate: Gate) -> Iterator[str]:
    """A FaultProxy to `endpoint` with `gate` in it (the held request reaches the server after
    the test's overwrite, so it asks for the version the run started with and gets 412): the URL."""
    proxy = FaultProxy.for_url(endpoint)
    proxy.hostile = gate
    with proxy:
        try:
            yield proxy.url
        finally:
            gate.open()


def range_start(req: Request) -> int | None:
    """The first byte a ranged GET asks for (None: not a ranged GET)."""
    value = req.headers.get("range", "")
    if req.method != "GET" or not value.startswith("bytes="):
        return None
    return int(value[len("bytes="):].split("-", 1)[0] or 0)


def ranged_get_at(start: int) -> Callable[[Request], bool]:
    """A ranged GET of bytes from `start` on (one per attempt: parts are cut at the part size): with
    two parts in flight, the third part's GET is sent once a part before it is done."""
    return lambda req: range_start(req) == start


def part_copy(number: int) -> Callable[[Request], bool]:
    """UploadPartCopy of part `number`: with three in flight, part 4 is asked once one of the
    first three was copied."""
    return lambda req: (req.method == "PUT" and "x-amz-copy-source" in req.headers
                        and f"partNumber={number}&" in req.target + "&")


class Running:
    """An `s3bulk` command running in the background, its --json events read as they come."""

    def __init__(self, args: list[str], state_home: str, env: dict[str, str] | None = None) -> None:
        full_env = dict(os.environ, XDG_STATE_HOME=state_home, **(env or {}))
        self.proc = subprocess.Popen([sys.executable, "-m", "s3bulk", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=full_env, cwd=ROOT)
        self.events: list[dict[str, Any]] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.err = ""
        threading.Thread(target=self._read_out, daemon=True).start()
        self._err_reader = threading.Thread(target=self._read_err, daemon=True)
        self._err_reader.start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        self.err = self.proc.stderr.read()

    def wait_for(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The next event `wanted` accepts; fails the test if the run ends first."""
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                self.proc.wait(60)
                self._err_reader.join(60)
                pytest.fail(f"the run ended (exit {self.proc.returncode}) before the awaited event; "
                            f"events {self.events[-5:]}, stderr {self.err[-2000:]!r}")
            if line.startswith("{"):
                event = json.loads(line)
                self.events.append(event)
                if wanted(event):
                    return event
        self.kill()
        pytest.fail("no awaited event before the deadline")

    def finish(self) -> int:
        """Wait for the run's end: its exit code (every event read)."""
        while True:
            try:
                line = self._lines.get(timeout=DEADLINE)
            except queue.Empty:
                self.kill()
                pytest.fail("the run did not end before the deadline")
            if line is None:
                break
            if line.startswith("{"):
                self.events.append(json.loads(line))
        code = self.proc.wait(60)
        self._err_reader.join(60)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(60)

    def restarted(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == "restarted"]

    def __repr__(self) -> str:
        return f"Running(code={self.proc.returncode}, events={self.events[-6:]!r}, err={self.err[-2000:]!r})"


def part_landed(event: dict[str, Any]) -> bool:
    """A --json progress event with bytes of some part moved (parts count as they land)."""
    return event.get("event") == "progress" and event["moved_bytes"] > 0


def one_line_failure(run: Running, code: int) -> None:
    """The object failed (exit 1) with the one line, and nothing else went wrong."""
    assert code == 1, run
    failures = [e for e in run.events if e.get("event") == "failure"]
    assert len(failures) == 1, run
    error = failures[0]["error"]
    assert error.endswith(MESSAGE) and "\n" not in error, run
    assert failures[0]["kind"] == "SourceChanged", run
    assert run.events[-1]["failed"] == 1 and "Traceback" not in run.err, run


def no_open_uploads(s3: Any, bucket: str) -> None:
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def _absent(s3: Any, bucket: str, key: str) -> bool:
    from botocore.exceptions import ClientError

    try:
        s3.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        return exc.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    return False


def _body(s3: Any, bucket: str, key: str) -> bytes:
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def put_unchecked(s3: Any, bucket: str, key: str, body: bytes) -> None:
    """Write `body` as most objects in real buckets are: a multipart ETag and no checksum a
    download can check whole (here a COMPOSITE CRC32 of parts of unequal sizes, which s3bulk
    leaves unchecked, saying so). LocalStack gives an object written by one PUT a FULL_OBJECT
    CRC64NVME, which s3bulk checks after the last part: a torn download of such an object fails
    that check and is read again, so only objects like these show what conditional reads add."""
    cut = len(body) // 2 - 4 * MiB  # part 1 smaller than part 2: not the equal parts a check needs
    upload = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32")["UploadId"]
    parts = []
    for number, chunk in enumerate((body[:cut], body[cut:]), 1):
        made = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=number, Body=chunk,
                              ChecksumAlgorithm="CRC32")
        parts.append({"PartNumber": number, "ETag": made["ETag"], "ChecksumCRC32": made["ChecksumCRC32"]})
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": parts})


def versions(n: int, size: int = SIZE) -> list[bytes]:
    """`n` contents of one size, each other bytes (an overwrite a size check cannot see)."""
    return [os.urandom(size) for _ in range(n)]


# ------------------------------------------------------------------------------------ downloads


