"""An object overwritten while it is read in several requests never lands torn (issue 24).

Each case copies one object through toxiproxy (tests/toxiproxy.py) in front of LocalStack, with
links slow enough that its parts are read over several seconds, and overwrites the object (same
size, other bytes, one PUT straight to LocalStack) once some part of it has landed and before its
last part is asked for. Without conditional reads the copy ends with exit 0 and an object mixed
from the two versions; with them every request names the version the run listed (If-Match,
x-amz-copy-source-if-match), the 412 restarts the object once from its new version (a `restarted`
event in --json) and it lands whole; changed again during that second attempt, it fails with one
line and nothing under its name (no file, no object, no open multipart upload).

No case races a clock: the overwrite waits for a part to have landed (a --json progress event
with bytes moved, or a part listed in the destination's multipart upload), and the links are slow
enough (several parts in flight at a few MB/s, or a second of latency per answer for a server-side
copy) that the last parts start seconds after the first landed.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from typing import Any, Callable, Iterator

import pytest

from conftest import ROOT, process_tree, stopped
from toxiproxy import started

MiB = 1024 * 1024
SIZE = 40 * MiB          # 8 parts of 5 MiB, two in flight (--max-buffer 10MiB): four rounds of parts
RATE = 1536              # KB/s per connection: a part takes ~3.4 s, an attempt ~14 s
PARTS = ["--part-size", "5MiB", "--max-buffer", "10MiB", "-w", "1"]
COPY_SIZE = 60 * MiB     # a server-side copy: 12 parts of 5 MiB
COPY_LATENCY = 2500      # ms before each answer of the server-side copy's endpoint
# three parts in flight: the 12 UploadPartCopy requests go in four rounds, each a COPY_LATENCY
# long, so parts are copied for seconds after the first one landed: 3 x COPY_LATENCY for the test
# to see a part and stop the run before the last round is asked (on a busy machine LocalStack takes
# seconds to copy a round; with eight parts in flight, two rounds, a late look found the second one
# already copied from the old version: a whole object, and no change to see)
COPY_PARTS = ["--copy-threshold", "5MiB", "--copy-part-size", "5MiB", "--copy-concurrency", "3", "-c", "1",
              "--max-memory", "128MiB"]
DEADLINE = 300           # seconds for any one wait below (a busy 2-core machine)
MESSAGE = "source changed during the copy"


@pytest.fixture(scope="module")
def toxiproxy(tmp_path_factory):
    server = started(tmp_path_factory)
    yield server
    server.stop()


class Running:
    """An `s3bulk` command running in the background, its --json events read as they come."""

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The run's processes stopped (SIGSTOP) inside, continued after: an overwrite made inside
        lands before the run sends its next request, whatever the machine's load. (A part seen at
        DST is one the server has answered; the run sends the next parts once those answers reach
        it, which the link delays by seconds, but a busy CI machine once took longer than that to
        PUT the new version.)"""
        with stopped(process_tree(self.proc.pid)):
            yield

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


def slow_link(toxiproxy: Any, endpoint: str, rate: int = RATE) -> str:
    """A proxy to LocalStack giving each connection `rate` KB/s each way: the URL to use."""
    name = f"slow-{uuid.uuid4().hex[:8]}"
    url = toxiproxy.proxy(name, endpoint)
    for stream in ("downstream", "upstream"):
        toxiproxy.toxic(name, "bandwidth", stream, rate=rate)
    return url


def laggy_link(toxiproxy: Any, endpoint: str, latency: int = COPY_LATENCY) -> str:
    """A proxy to LocalStack that holds every answer `latency` ms (requests reach it at once)."""
    name = f"lag-{uuid.uuid4().hex[:8]}"
    url = toxiproxy.proxy(name, endpoint)
    toxiproxy.toxic(name, "latency", "downstream", latency=latency)
    return url


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


@pytest.mark.parametrize("path", ["lean", "botocore", "spread"])
def test_a_download_in_ranges_overwritten_meanwhile_restarts_and_lands_whole(path, toxiproxy, endpoint, s3, bucket,
                                                                            tmp_path, state_home):
    """Ranges received into the file as they arrive (lean), read whole through botocore, or
    fetched by a forked helper process as well (spread): the object overwritten after its first
    part landed lands whole, as the new version, after one `restarted` event."""
    env = {"lean": {}, "botocore": {"S3BULK_DATA_PATH": "botocore"},
           "spread": {"S3BULK_SPREAD_ABOVE": "1MiB", "S3BULK_SPREAD_PROCESSES": "2"}}[path]
    old, new = versions(2)
    put_unchecked(s3, bucket, "big.bin", old)
    dst = tmp_path / "dst"
    run = Running(["copy", f"s3://{bucket}/big.bin", str(dst) + "/", "--json", *PARTS,
                   "--endpoint-url", slow_link(toxiproxy, endpoint)], state_home, env)
    try:
        run.wait_for(part_landed)
        s3.put_object(Bucket=bucket, Key="big.bin", Body=new)
        code = run.finish()
    finally:
        run.kill()
    assert code == 0, run
    assert [p.name for p in dst.iterdir()] == ["big.bin"], run  # no temporary file or record left
    got = (dst / "big.bin").read_bytes()
    assert got == new, f"{'a torn file' if got != old else 'the old version'}: {run!r}"
    assert [e["src"] for e in run.restarted()] == [f"s3://{bucket}/big.bin"], run


def test_a_download_whose_object_changes_again_after_its_restart_fails_with_nothing_left(toxiproxy, endpoint, s3,
                                                                                         bucket, tmp_path,
                                                                                         state_home):
    """Overwritten during the first attempt and again during the second: exit 1, the one line,
    no file under the name (nor a temporary file or a record of parts)."""
    old, new, newer = versions(3)
    put_unchecked(s3, bucket, "big.bin", old)
    dst = tmp_path / "dst"
    run = Running(["copy", f"s3://{bucket}/big.bin", str(dst) + "/", "--json", *PARTS,
                   "--endpoint-url", slow_link(toxiproxy, endpoint)], state_home)
    try:
        run.wait_for(part_landed)
        s3.put_object(Bucket=bucket, Key="big.bin", Body=new)
        run.wait_for(lambda e: e.get("event") == "restarted")
        run.wait_for(part_landed)  # the first attempt's bytes were taken back: this is the second's
        s3.put_object(Bucket=bucket, Key="big.bin", Body=newer)
        code = run.finish()
    finally:
        run.kill()
    one_line_failure(run, code)
    assert not dst.exists() or list(dst.iterdir()) == [], run


# ------------------------------------------------------------------------------------ copies


def test_a_streamed_copy_in_parts_overwritten_meanwhile_restarts_and_lands_whole(toxiproxy, endpoint, s3,
                                                                                make_bucket, state_home):
    """S3 to S3 on two endpoints (no server-side copy: ranges read, parts uploaded): the source
    overwritten after the first part was uploaded lands whole at DST, as the new version."""
    src, dst = make_bucket(), make_bucket()
    old, new = versions(2)
    put_unchecked(s3, src, "big.bin", old)
    run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *PARTS,
                   "--src-endpoint-url", slow_link(toxiproxy, endpoint), "--dst-endpoint-url", endpoint],
                  state_home)
    try:
        wait_for_a_part(s3, dst, run)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=new)
        code = run.finish()
    finally:
        run.kill()
    assert code == 0, run
    got = _body(s3, dst, "big.bin")
    assert got == new, f"{'a torn object' if got != old else 'the old version'}: {run!r}"
    assert [e["src"] for e in run.restarted()] == [f"s3://{src}/big.bin"], run
    no_open_uploads(s3, dst)


def test_a_streamed_copy_whose_source_changes_again_fails_with_no_object_and_no_upload(toxiproxy, endpoint, s3,
                                                                                      make_bucket, state_home):
    src, dst = make_bucket(), make_bucket()
    old, new, newer = versions(3)
    put_unchecked(s3, src, "big.bin", old)
    run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *PARTS,
                   "--src-endpoint-url", slow_link(toxiproxy, endpoint), "--dst-endpoint-url", endpoint],
                  state_home)
    try:
        first = wait_for_a_part(s3, dst, run)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=new)
        wait_for_a_part(s3, dst, run, other_than=first)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=newer)
        code = run.finish()
    finally:
        run.kill()
    one_line_failure(run, code)
    assert _absent(s3, dst, "big.bin"), run
    no_open_uploads(s3, dst)


def test_a_server_side_copy_in_parts_overwritten_meanwhile_restarts_and_lands_whole(toxiproxy, endpoint, s3,
                                                                                   make_bucket, state_home):
    """UploadPartCopy (same endpoint: the bytes never leave the server): the source overwritten
    after the first part was copied lands whole at DST, as the new version."""
    src, dst = make_bucket(), make_bucket()
    old, new = versions(2, COPY_SIZE)
    s3.put_object(Bucket=src, Key="big.bin", Body=old)
    run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *COPY_PARTS,
                   "--endpoint-url", laggy_link(toxiproxy, endpoint)], state_home)
    try:
        wait_for_a_part(s3, dst, run)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=new)
        code = run.finish()
    finally:
        run.kill()
    assert code == 0, run
    got = _body(s3, dst, "big.bin")
    assert got == new, f"{'a torn object' if got != old else 'the old version'}: {run!r}"
    assert [e["src"] for e in run.restarted()] == [f"s3://{src}/big.bin"], run
    no_open_uploads(s3, dst)


def test_a_server_side_copy_whose_source_changes_again_fails_with_no_object_and_no_upload(toxiproxy, endpoint, s3,
                                                                                         make_bucket, state_home):
    src, dst = make_bucket(), make_bucket()
    old, new, newer = versions(3, COPY_SIZE)
    s3.put_object(Bucket=src, Key="big.bin", Body=old)
    # two windows to hit, one per attempt (each three rounds long, as above)
    run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *COPY_PARTS,
                   "--endpoint-url", laggy_link(toxiproxy, endpoint)], state_home)
    try:
        first = wait_for_a_part(s3, dst, run)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=new)
        wait_for_a_part(s3, dst, run, other_than=first)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=newer)
        code = run.finish()
    finally:
        run.kill()
    one_line_failure(run, code)
    assert _absent(s3, dst, "big.bin"), run
    no_open_uploads(s3, dst)


def wait_for_a_part(s3: Any, bucket: str, run: Running, other_than: str | None = None) -> str:
    """Until a multipart upload open in `bucket` (not `other_than`) holds a part: its upload id.
    Asked of LocalStack directly, a few times a second."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        for upload in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
            if upload["UploadId"] == other_than:
                continue
            parts = s3.list_parts(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"]).get("Parts", [])
            if parts:
                return str(upload["UploadId"])
        if run.proc.poll() is not None:
            run.finish()
            pytest.fail(f"the run ended before a part of an upload was seen: {run!r}")
        time.sleep(0.05)
    pytest.fail(f"no part landed before the deadline: {run!r}")

