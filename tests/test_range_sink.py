"""Ranges of a multipart download written into the file as they arrive (stores/files/filesink.py), against
LocalStack (behind tests/faultproxy.py where a connection has to break mid-body)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Awaitable, Callable

import pytest

from conftest import ROOT

MiB = 1024 * 1024
PART = 5 * MiB
OPTS = ["--part-size", "5MiB", "--multipart-threshold", "6MiB", "--no-journal"]


def _answering(next_answer: Callable[[], bytes], piece: int) -> Callable[..., Awaitable[None]]:
    """A test server's connection handler: every request (until the client closes the connection)
    answered with next_answer(), written `piece` bytes at a time."""
    from test_httpclient import read_request

    async def handler(reader: Any, writer: Any) -> None:
        while True:
            await read_request(reader)
            answer = next_answer()
            for at in range(0, len(answer), piece):
                writer.write(answer[at:at + piece])
                await writer.drain()

    return handler


def _copy(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "s3bulk", "copy", *args], capture_output=True, text=True,
                          env=env or dict(os.environ), cwd=ROOT, timeout=300)


def test_a_range_cut_mid_body_is_fetched_again_from_its_start_and_the_file_is_identical(
        s3, bucket, tmp_path, make_fault_proxy, endpoint, no_leftovers):
    body = os.urandom(3 * PART + 4321)  # 4 parts, the last one short
    s3.put_object(Bucket=bucket, Key="big.bin", Body=body)
    cut: list[str] = []

    def cut_part_two_once(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        # the first GET of part 2 gets a 206 head and half of a body that is not the object's, then
        # the connection closes: those bytes reached the file (and the part's checksum) already
        rng = headers.get("range", "")
        if method != "GET" or not rng.startswith(f"bytes={PART}-") or cut:
            return None
        cut.append(rng)
        first, last = (int(x) for x in rng[len("bytes="):].split("-"))
        length = last - first + 1
        head = (f"HTTP/1.1 206 Partial Content\r\nContent-Length: {length}\r\n"
                f"Content-Range: bytes {first}-{last}/{len(body)}\r\nConnection: close\r\n\r\n").encode()
        return head + b"\xa5" * (length // 2)

    proxy = make_fault_proxy(endpoint, [cut_part_two_once])
    out = tmp_path / "out.bin"
    r = _copy([f"s3://{bucket}/big.bin", str(out), "--endpoint-url", proxy.url, *OPTS, "--json"])
    assert r.returncode == 0, r.stderr
    assert cut, "the part was never cut"
    assert out.read_bytes() == body  # the range was written again from its first byte
    no_leftovers(tmp_path)


_PEAK = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:]).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(code)
"""


def _peak_rss_kib(args: list[str]) -> int:
    """The largest peak RSS of the s3bulk processes (coordinator, worker) of one copy."""
    r = subprocess.run([sys.executable, "-c", _PEAK, sys.executable, "-m", "s3bulk", "copy", *args],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.strip().splitlines()[-1])


def test_a_multipart_download_to_a_file_holds_no_part_buffers(s3, bucket, tmp_path, endpoint):
    # all parts of an object are in flight at once: received into 8 MiB part buffers, 6 parts
    # peaked ~24-32 MiB above 2 parts; written into the file as they arrive, both hold about one
    # 1 MiB receive buffer
    s3.put_object(Bucket=bucket, Key="six.bin", Body=os.urandom(48 * MiB))
    s3.put_object(Bucket=bucket, Key="two.bin", Body=os.urandom(16 * MiB + 1))
    common = ["--endpoint-url", endpoint, "--no-journal", "--part-size", "8MiB", "--multipart-threshold", "16MiB"]
    # a first run on a bucket resolves its address with botocore (+20 MiB): not in the comparison
    _peak_rss_kib([f"s3://{bucket}/two.bin", str(tmp_path / "warm.bin"), *common])
    two = _peak_rss_kib([f"s3://{bucket}/two.bin", str(tmp_path / "two.bin"), *common])
    six = _peak_rss_kib([f"s3://{bucket}/six.bin", str(tmp_path / "six.bin"), *common])
    assert (tmp_path / "six.bin").stat().st_size == 48 * MiB
    assert six - two < 12 * 1024, f"peak RSS {two} KiB for 2 parts, {six} KiB for 6"


@pytest.mark.unit
def test_only_a_206_of_the_range_s_length_is_written_into_the_file_and_a_failing_write_fails_the_request(tmp_path):
    """The client hands a body to the file only when it is the range (206, its exact length): an
    error answer's body, or an answer of another length, never lands in the file. A write that
    fails (a full disk) fails the request with its own error, and the connection is not reused."""
    import asyncio

    from test_httpclient import serving

    from s3bulk.http.client import HttpClient
    from s3bulk.stores.files.filesink import RangeSink

    body = bytes(range(256)) * 4096  # 1 MiB
    answers = [b"HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nforbidden",
               b"HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\n\r\n0123456789",
               b"HTTP/1.1 206 Partial Content\r\nContent-Length: %d\r\n\r\n" % len(body) + body,
               b"HTTP/1.1 206 Partial Content\r\nContent-Length: %d\r\n\r\n" % len(body) + body]

    handler = _answering(lambda: answers.pop(0), 100_000)  # in pieces, as a network delivers it

    class DiskFull(Exception):
        pass

    async def main() -> None:
        path = tmp_path / "f.bin"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.ftruncate(fd, 3 * len(body))
        try:
            async with serving(handler) as (port, conns):
                client = HttpClient("127.0.0.1", port)
                sink = RangeSink(fd, len(body), 2 * len(body))
                for status in (403, 206):  # an error, then a 206 of another length: kept in memory
                    sink.begin()
                    resp = await asyncio.wait_for(client.request("GET", "/k", sink=sink), 30)
                    assert resp.status == status and resp.body and sink.written == 0
                sink.begin()
                resp = await asyncio.wait_for(client.request("GET", "/k", sink=sink), 30)
                assert resp.status == 206 and resp.body == b"" and sink.written == len(body)
                assert os.pread(fd, 3 * len(body), 0) == bytes(len(body)) + body + bytes(len(body))

                class Full(RangeSink):
                    def write(self, chunk: memoryview) -> None:
                        raise DiskFull("no space left on device")

                failing = Full(fd, 0, len(body))
                failing.begin()
                with pytest.raises(DiskFull):
                    await asyncio.wait_for(client.request("GET", "/k", sink=failing), 30)
                answers.append(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                resp = await asyncio.wait_for(client.request("GET", "/k"), 30)
                assert resp.body == b"ok"
                assert len(conns) == 2, "the connection whose body was not read was reused"
                await client.close()
        finally:
            os.close(fd)

    asyncio.run(main())


@pytest.mark.unit
def test_chunks_written_by_the_writer_thread_land_whole_with_the_same_checksum_and_a_failed_write_fails(tmp_path):
    """With use_thread() the chunks are received into the pool's buffers and pwritten by another
    thread: after settle() the file holds the range and its CRC is the one an on-loop sink takes;
    a write that fails there (here: a file opened read-only) fails the request with the sink's
    own error, raised on the loop, and no write is left pending."""
    import asyncio

    from test_httpclient import serving

    from s3bulk.http.client import HttpClient
    from s3bulk.stores.files.filesink import RangeSink

    body = os.urandom(3 * (1 << 20) + 12345)  # several pool buffers, the last one short
    answer = b"HTTP/1.1 206 Partial Content\r\nContent-Length: %d\r\n\r\n" % len(body) + body

    handler = _answering(lambda: answer, 1 << 20)  # big pieces: most reads go to the writer thread

    class Refused(Exception):
        pass

    async def main() -> None:
        path = tmp_path / "f.bin"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.ftruncate(fd, 7 + len(body))
        ro = os.open(path, os.O_RDONLY)
        try:
            async with serving(handler) as (port, _conns):
                client = HttpClient("127.0.0.1", port)
                crcs = []
                for threaded in (True, False):
                    sink = RangeSink(fd, 7, 7 + len(body), "CRC32")
                    if threaded:
                        sink.use_thread()
                    sink.begin()
                    resp = await asyncio.wait_for(client.request("GET", "/k", sink=sink), 30)
                    sink.settle()
                    assert resp.status == 206 and sink.written == len(body) and sink.queued == 0
                    assert os.pread(fd, len(body), 7) == body
                    crcs.append(sink.crc())
                assert crcs[0] == crcs[1] != 0
                failing = RangeSink(ro, 7, 7 + len(body), on_error=lambda exc: Refused(str(exc)))
                failing.use_thread()
                failing._allocated = True  # (allocating the range would fail first, on the loop)
                failing.begin()
                with pytest.raises(Refused):
                    await asyncio.wait_for(client.request("GET", "/k", sink=failing), 30)
                    failing.settle()
                failing.settle(quiet=True)
                assert failing.queued == 0
                await client.close()
        finally:
            os.close(fd)
            os.close(ro)

    asyncio.run(main())
