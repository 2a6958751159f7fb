"""The hostile-server suite: a proxy in front of the test LocalStack that misbehaves in one way at a
time, and the real command line run through it on both data paths (lean and botocore).

Each mode bends a deterministic subset of requests (the first attempt of each object's GET, each
listing page, the first PUT of each key, ...), so a client that retries well can still end right.
For every mode and data path (and, for listings, both a local and an S3 destination) the run must
end with the data right (exit 0, DST checked byte for byte) or refuse with one line and a non-zero
exit; in every case nothing wrong under a final name, nothing outside DST, no traceback and no
hang (a hard subprocess timeout, and a bounded `--retry-max-time`).

The listings are made by the proxy itself from the source bucket's real objects (keys, sizes,
ETags), so a mode can repeat, reorder, loop or cut them at will; object GETs go on to LocalStack
(bent on the way back), except for the few keys a listing mode invents, which the proxy serves.
docs/reference/guarantees.md keeps the table of these modes and the count of hostile cases.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import socket
import struct
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, quote, unquote, urlsplit
from xml.sax.saxutils import escape

import pytest

from conftest import ROOT
from faultproxy import Answer, FaultProxy, Request, s3_error

PATHS = ("lean", "botocore")
MiB = 1024 * 1024
RETRY_MAX_TIME = "20"
TIMEOUT = 60  # seconds a run may take before it counts as a hang

SOURCE = {
    "a.txt": os.urandom(3000),
    "b/c.bin": os.urandom(5000),
    "d": os.urandom(7000),
    "e%41f": os.urandom(100),     # a literal percent sign: read raw or url-decoded, it differs
    "g": os.urandom(4000),
    "big.bin": os.urandom(3 * MiB),  # downloaded in ranges
}
UPLOAD = {
    "one": os.urandom(2000),
    "two": os.urandom(3000),
    "sub/three": os.urandom(4000),
    "big": os.urandom(11 * MiB),  # uploaded in 3 parts of 5 MiB
}
ERROR_XML = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
             b"<Message>We encountered an internal error. Please try again.</Message>"
             b"<RequestId>hostile</RequestId></Error>")


# ---------------------------------------------------------------------------- the modes


@dataclass
class Mode:
    id: str
    kind: str                  # "get", "list" or "put": which requests it bends, which runs it gets
    what_s3_does: str          # for the guarantees page's table
    outcome: str               # "right": must end exit 0 with the data right; "refused": must refuse
                               # with a non-zero exit; "either": right or refused
    needle: str = ""           # a refusal's one line says this
    xfail: str | None = None
    args: tuple[str, ...] = ()
    timeout: float = TIMEOUT


MODES: list[Mode] = []


def mode(*a: Any, **kw: Any) -> Mode:
    m = Mode(*a, **kw)
    MODES.append(m)
    return m


# GETs of objects: each bends the first attempt of each object (or range) only
mode("get-truncated-length-kept", "get", "never", "right")
mode("get-content-length-larger", "get", "never", "right")
mode("get-content-length-smaller", "get", "never", "right")
# on the botocore path aiohttp reads the extra bytes as the next answer on that connection, and
# answers drift one request behind until it is dropped: the lengths, ETags and prefixes s3bulk
# checks make it retry or fail the object, never write wrong bytes here (a same-size object's bytes
# answered for another request would not be caught: see the guarantees page)
mode("get-bytes-after-body", "get", "never", "either")
mode("get-200-error-body", "get", "a 200 whose body is an error: only for CopyObject and "
     "CompleteMultipartUpload, never a GET", "right")
mode("get-wrong-etag", "get", "never (the ETag names the bytes sent)", "right")
mode("get-206-other-range", "get", "never", "right")
mode("get-range-ignored", "get", "never (a server without Range support does)", "right")
mode("get-stall-mid-body", "get", "rarely (a slow disk, a lost connection)", "right", args=("--request-timeout", "2"))
mode("get-headers-dribbled", "get", "never", "right", timeout=90, args=("--request-timeout", "2"))
mode("get-gzip-label-plain-bytes", "get", "only if the object was stored with Content-Encoding: gzip", "right")
mode("get-bad-chunk-size", "get", "never", "right")
mode("get-two-content-lengths", "get", "never", "right")
mode("get-http10-closed-early", "get", "never", "right")
mode("get-503-storm", "get", "yes: SlowDown under load (long storms: s10-abort's tests)", "right")
mode("get-500", "get", "yes, rarely: InternalError, retry", "right")
mode("get-reset-before-headers", "get", "yes, rarely (a load balancer closing)", "right")
# listings: every page is made by the proxy
mode("list-repeated-entries", "list", "never", "right")
mode("list-truncated-without-token", "list", "never (ListObjectsV2 always gives the token)", "right")
mode("list-token-loops", "list", "never", "refused", "tokens loop")
mode("list-out-of-order", "list", "never (keys in UTF-8 binary order)", "refused", "out of key order")
mode("list-labelled-url-but-raw", "list", "never", "either")
mode("list-url-encoded-unlabelled", "list", "never", "either")
mode("list-keycount-lies", "list", "never", "right")
mode("list-xml-cut-once", "list", "rarely (a connection cut mid-answer)", "right")
mode("list-xml-cut-always", "list", "never", "refused", "list")
mode("list-empty-pages-forever", "list", "a few empty truncated pages, rarely; never endless", "refused",
     "never ends")
mode("list-same-page-forever", "list", "never", "refused", "listing")
mode("list-keys-climb-out", "list", "keys may hold `..` and a leading `/`: S3 keys are not paths",
     "refused", "outside the destination")
mode("list-file-and-directory", "list", "yes: `a` and `a/b` are two keys", "refused", "the directory is kept")
# uploads
mode("put-complete-200-error", "put", "yes: CompleteMultipartUpload may answer 200 and fail in the body",
     "right")
mode("put-part-wrong-etag", "put", "never", "either")
mode("put-200-stores-nothing", "put", "never (a broken gateway or proxy can)", "right", args=("--verify",))
mode("put-500-after-stored", "put", "yes, rarely: the write landed, the answer was lost", "right")
mode("put-complete-500-after-done", "put", "yes, rarely", "either")
mode("put-503", "put", "yes: SlowDown", "right")
mode("put-reset", "put", "yes, rarely", "right")

# listing modes whose keys only make sense for a local DST
# a PUT stored as sent but answered naming another ETag or checksum (a gateway that acknowledges
# one thing and stores another): the header each rewrites, and its value
ANSWER_BENT = {
    "answer-other-etag": ("ETag", '"0123456789abcdef0123456789abcdef"'),
    "answer-other-checksum": ("x-amz-checksum-crc32", "AAAAAA=="),
}
LOCAL_ONLY = {"list-keys-climb-out", "list-file-and-directory"}
INVENTED = {  # keys a listing mode adds that the source bucket does not hold: the proxy serves them
    "list-keys-climb-out": {"../x": b"climb", "a/../../x": b"climb2", "/abs": b"absolute"},
    "list-file-and-directory": {"d/inner": b"under d"},
}


# ---------------------------------------------------------------------------- the proxy's side


def _answer(status: int, body: bytes, headers: dict[str, str] | None = None, keep: bool = True,
            reason: str = "X") -> bytes:
    head = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(body)}",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
            f"Connection: {'keep-alive' if keep else 'close'}", "", ""]
    return "\r\n".join(head).encode("latin-1") + body


def _reset(writer: asyncio.StreamWriter) -> bool:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
    return False


def _with_header(answer: Answer, name: str, value: str | None) -> Answer:
    lines = [x for x in answer.lines if x.split(":", 1)[0].strip().lower() != name.lower()]
    if value is not None:
        lines.append(f"{name}: {value}")
    headers = {k: v for k, v in answer.headers.items() if k != name.lower()}
    if value is not None:
        headers[name.lower()] = value
    return Answer(answer.status_line, lines, headers, answer.body)


@dataclass
class Listed:
    key: str
    size: int
    etag: str
    modified: str


class Hostile:
    """The proxy's handler: the source bucket's listings made here, each mode's bending."""

    def __init__(self, src: str, dst: str, listed: list[Listed]) -> None:
        self.src, self.dst, self.real = src, dst, listed
        self.mode = ""
        self.seen: Counter[tuple] = Counter()
        self.part_etags: dict[str, str] = {}
        self.invented: dict[str, bytes] = {}
        self.listings = 0

    def set(self, mode: str) -> None:
        self.mode = mode
        self.seen.clear()
        self.part_etags.clear()
        self.invented = dict(INVENTED.get(mode, {}))
        self.listings = 0

    def first(self, *what: Any, times: int = 1) -> bool:
        """True for the first `times` requests for `what` (then the client's retries go through)."""
        self.seen[what] += 1
        return self.seen[what] <= times

    async def __call__(self, req: Request, forward: Callable, writer: asyncio.StreamWriter) -> bool | None:
        path, _, query = req.target.partition("?")
        bucket, _, key = path.lstrip("/").partition("/")
        key = unquote(key)
        params = {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}
        if bucket == self.src and not key and req.method == "GET" and params.get("list-type") == "2":
            return await self.listing(params, writer)
        if bucket == self.src and key in self.invented:
            return await self.invented_object(req, key, writer)
        if bucket == self.src and key and req.method == "GET" and self.mode.startswith("get-"):
            return await self.get(req, key, forward, writer)
        if bucket == self.dst and key and req.method == "HEAD" and self.mode == "write-only":
            writer.write(s3_error(403, "Forbidden", "AccessDenied", "Access Denied", keep_alive=True, head_only=True))
            await writer.drain()
            return True
        if bucket == self.dst and key and req.method in ("PUT", "POST") and self.mode.startswith(("put-", "swallow", "answer-")):
            return await self.put(req, key, params, forward, writer)
        return None

    # ------------------------------------------------------------------------ listings

    def _entries(self) -> list[Listed]:
        out = list(self.real)
        for k, body in self.invented.items():
            out.append(Listed(k, len(body), hashlib.md5(body).hexdigest(), "2024-01-01T00:00:00.000Z"))
        return sorted(out, key=lambda e: e.key.encode())

    async def listing(self, params: dict[str, str], writer: asyncio.StreamWriter) -> bool:
        m = self.mode
        self.listings += 1
        prefix = params.get("prefix", "")
        limit = int(params.get("max-keys", "1000"))
        token = params.get("continuation-token")
        encode = params.get("encoding-type") == "url"
        start = token[2:] if token and token.startswith("k:") else params.get("start-after", "")
        keys = [e for e in self._entries() if e.key.startswith(prefix)]
        if m == "list-token-loops":
            nxt = {None: "loopA", "loopA": "loopB", "loopB": "loopA"}[token]
            return await self._send_list(writer, prefix, [], True, nxt, limit, encode)
        if m == "list-empty-pages-forever":
            n = int(token[1:]) if token and token.startswith("t") else 0
            return await self._send_list(writer, prefix, [], True, f"t{n + 1}", limit, encode)
        if m == "list-same-page-forever":
            page = keys[:limit]
            return await self._send_list(writer, prefix, page, True, f"k:{page[-1].key}", limit, encode)
        rest = [e for e in keys if e.key.encode() > start.encode()]
        if m == "list-repeated-entries" and start:
            before = [e for e in keys if e.key.encode() <= start.encode()]
            rest = before[-2:] + rest  # the end of the page before, again
            limit += 2
        page, more = rest[:limit], len(rest) > limit
        nxt = f"k:{page[-1].key}" if more and page else None
        if m == "list-truncated-without-token":
            nxt = None
        if m == "list-out-of-order":
            page = list(reversed(page))
        if m == "list-xml-cut-once" and self.first("list", prefix, start, token):
            return await self._send_list(writer, prefix, page, more, nxt, limit, encode, cut=True)
        if m == "list-xml-cut-always":
            return await self._send_list(writer, prefix, page, more, nxt, limit, encode, cut=True)
        return await self._send_list(writer, prefix, page, more, nxt, limit, encode)

    async def _send_list(self, writer: asyncio.StreamWriter, prefix: str, page: list[Listed], truncated: bool,
                         token: str | None, limit: int, encode: bool, cut: bool = False) -> bool:
        m = self.mode
        label = encode or m == "list-labelled-url-but-raw"
        if m == "list-labelled-url-but-raw":
            encode = False
        elif m == "list-url-encoded-unlabelled":
            encode, label = True, False

        def k(text: str) -> str:
            return escape(quote(text, safe="/~") if encode else text)

        rows = "".join(f"<Contents><Key>{k(e.key)}</Key><LastModified>{e.modified}</LastModified>"
                       f"<ETag>&quot;{e.etag}&quot;</ETag><Size>{e.size}</Size>"
                       f"<StorageClass>STANDARD</StorageClass></Contents>" for e in page)
        count = 999 if m == "list-keycount-lies" else len(page)
        xml = ('<?xml version="1.0" encoding="UTF-8"?>\n'
               '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
               f"<Name>{self.src}</Name><Prefix>{k(prefix)}</Prefix><KeyCount>{count}</KeyCount>"
               f"<MaxKeys>{limit}</MaxKeys>" + ("<EncodingType>url</EncodingType>" if label else "")
               + f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>"
               + (f"<NextContinuationToken>{escape(token)}</NextContinuationToken>" if token else "")
               + rows + "</ListBucketResult>").encode()
        if cut:
            xml = xml[:xml.rfind(b"<Key>") + 7] if b"<Key>" in xml else xml[:len(xml) // 2]
        writer.write(_answer(200, xml, {"Content-Type": "application/xml"}))
        await writer.drain()
        return True

    async def invented_object(self, req: Request, key: str, writer: asyncio.StreamWriter) -> bool:
        body = self.invented[key]
        headers = {"ETag": f'"{hashlib.md5(body).hexdigest()}"', "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT",
                   "Content-Type": "application/octet-stream"}
        if req.method == "HEAD":
            writer.write(_answer(200, b"", headers).replace(b"Content-Length: 0", f"Content-Length: {len(body)}".encode()))
        else:
            writer.write(_answer(200, body, headers))
        await writer.drain()
        return True

    # ------------------------------------------------------------------------ object GETs

    async def get(self, req: Request, key: str, forward: Callable, writer: asyncio.StreamWriter) -> bool | None:
        m = self.mode
        rng = req.headers.get("range", "")
        if m == "get-503-storm":
            if not self.first(key, rng, times=3):
                return None
            writer.write(s3_error(503, "Slow Down", "SlowDown", "Please reduce your request rate.", keep_alive=True))
            await writer.drain()
            return True
        if not self.first(key, rng):
            return None
        if m == "get-500":
            writer.write(s3_error(500, "Internal Server Error", "InternalError", "Try again.", keep_alive=True))
            await writer.drain()
            return True
        if m == "get-reset-before-headers":
            return _reset(writer)
        if m == "get-206-other-range":
            if not rng:
                return None
            first_byte, last_byte = (int(x) for x in rng.split("=", 1)[1].split("-"))
            n = last_byte - first_byte + 1
            other = first_byte + n if first_byte + 2 * n <= len(SOURCE[key]) else max(0, first_byte - n)
            ans = await forward({"Range": f"bytes={other}-{other + n - 1}"})
            if ans.status == 206:  # the bytes of another range, labelled as the range asked for
                ans = _with_header(ans, "Content-Range", f"bytes {first_byte}-{last_byte}/{len(SOURCE[key])}")
            writer.write(ans.raw())
            await writer.drain()
            return True
        if m == "get-range-ignored":
            if not rng:
                return None
            ans = await forward({"Range": "bytes=0-"})  # the whole object, as a 200
            whole = _with_header(Answer("HTTP/1.1 200 OK", ans.lines, ans.headers, ans.body), "Content-Range", None)
            whole = _with_header(whole, "Content-Length", str(len(ans.body)))
            writer.write(whole.raw())
            await writer.drain()
            return True
        ans = await forward()
        if ans.status not in (200, 206) or not ans.body:
            writer.write(ans.raw())
            await writer.drain()
            return True
        body = ans.body
        if m == "get-truncated-length-kept":
            writer.write(ans.head(keep=False) + body[:len(body) // 2])
            await writer.drain()
            return False
        if m == "get-content-length-larger":
            writer.write(_with_header(ans, "Content-Length", str(len(body) + 100)).head(keep=False) + body)
            await writer.drain()
            return False
        if m == "get-content-length-smaller":
            writer.write(_with_header(ans, "Content-Length", str(max(1, len(body) - 100))).head() + body)
            await writer.drain()
            return True
        if m == "get-bytes-after-body":
            writer.write(ans.raw() + b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nGHOST")
            await writer.drain()
            return True
        if m == "get-bytes-after-body-apart":  # not a mode of the table: the drift test below
            # the extra bytes sent once the client has taken the body and put the connection back in
            # its pool (a late write, as a server's second thread would make it): read then as the
            # answer of the next request sent on that connection
            writer.write(ans.raw())
            await writer.drain()
            try:
                await asyncio.sleep(0.3)
            except asyncio.CancelledError:  # the proxy stopped meanwhile
                return False
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nGHOST")
            await writer.drain()
            return True
        if m == "get-200-error-body":
            bent = _with_header(ans, "Content-Length", str(len(ERROR_XML)))
            writer.write(_with_header(bent, "Content-Type", "application/xml").head() + ERROR_XML)
            await writer.drain()
            return True
        if m == "get-wrong-etag":
            writer.write(_with_header(ans, "ETag", '"0123456789abcdef0123456789abcdef"').raw())
            await writer.drain()
            return True
        if m == "get-stall-mid-body":
            writer.write(ans.head(keep=False) + body[:len(body) // 2])
            await writer.drain()
            await _until_closed(writer, 30)
            return False
        if m == "get-headers-dribbled":
            for b in ans.raw(keep=False):
                writer.write(bytes([b]))
                await writer.drain()
                await asyncio.sleep(0.5)
            return False
        if m == "get-gzip-label-plain-bytes":
            writer.write(_with_header(ans, "Content-Encoding", "gzip").raw())
            await writer.drain()
            return True
        if m == "get-bad-chunk-size":
            chunked = _with_header(_with_header(ans, "Content-Length", None), "Transfer-Encoding", "chunked")
            writer.write(chunked.head(keep=False) + b"zz\r\n" + body[:10] + b"\r\n0\r\n\r\n")
            await writer.drain()
            return False
        if m == "get-two-content-lengths":
            head = ans.head(keep=False).replace(b"\r\n\r\n", f"\r\nContent-Length: {len(body) + 7}\r\n\r\n".encode())
            writer.write(head + body)
            await writer.drain()
            return False
        if m == "get-http10-closed-early":
            lines = [x for x in ans.lines if not x.lower().startswith(("content-length:", "connection:"))]
            head = "\r\n".join(["HTTP/1.0 " + ans.status_line.split(" ", 1)[1], *lines, "", ""]).encode("latin-1")
            writer.write(head + body[:len(body) // 2])
            await writer.drain()
            return False
        raise AssertionError(m)

    # ------------------------------------------------------------------------ writes

    async def put(self, req: Request, key: str, params: dict[str, str], forward: Callable,
                  writer: asyncio.StreamWriter) -> bool | None:
        m = self.mode
        complete = req.method == "POST" and "uploadId" in params
        part = req.method == "PUT" and "partNumber" in params
        single = req.method == "PUT" and not part and "x-amz-copy-source" not in req.headers
        if m == "put-503" and self.first(req.method, key, params.get("partNumber"), "uploadId" in params):
            writer.write(s3_error(503, "Slow Down", "SlowDown", "Please reduce your request rate.", keep_alive=True))
            await writer.drain()
            return True
        if m == "put-reset" and self.first(req.method, key, params.get("partNumber"), "uploadId" in params):
            return _reset(writer)
        if m == "put-complete-200-error" and complete and self.first(key):
            writer.write(_answer(200, ERROR_XML, {"Content-Type": "application/xml"}))
            await writer.drain()
            return True
        if m == "put-complete-500-after-done" and complete and self.first(key):
            await forward()
            writer.write(s3_error(500, "Internal Server Error", "InternalError", "Try again.", keep_alive=True))
            await writer.drain()
            return True
        if m == "put-500-after-stored" and single and self.first(key):
            await forward()
            writer.write(s3_error(500, "Internal Server Error", "InternalError", "Try again.", keep_alive=True))
            await writer.drain()
            return True
        if m == "swallow-every-put" and single:  # not a mode of the table: the --verify tests below
            writer.write(_answer(200, b"", {"ETag": f'"{hashlib.md5(req.body).hexdigest()}"'}))
            await writer.drain()
            return True
        if m in ANSWER_BENT and single:  # not modes of the table: the --verify tests below
            ans = await forward()
            if ans.status == 200:  # stored as sent, answered as if something else had been
                name, value = ANSWER_BENT[m]
                ans = _with_header(ans, name, value)
            writer.write(ans.raw())
            await writer.drain()
            return True
        if m == "put-200-stores-nothing" and single and self.first(key):
            etag = hashlib.md5(req.body).hexdigest() if "aws-chunked" not in req.headers.get("content-encoding", "") \
                else "0" * 32
            writer.write(_answer(200, b"", {"ETag": f'"{etag}"'}))
            await writer.drain()
            return True
        if m == "put-part-wrong-etag" and part:
            ans = await forward()
            n = params["partNumber"]
            upload = params.get("uploadId", "")
            if ans.status == 200:
                self.part_etags.setdefault(upload + "/1", ans.headers.get("etag", "")) if n == "1" else None
                if n == "2" and self.first(key, "part2"):
                    other = self.part_etags.get(upload + "/1") or '"00000000000000000000000000000000"'
                    ans = _with_header(ans, "ETag", other)
            writer.write(ans.raw())
            await writer.drain()
            return True
        return None


async def _until_closed(writer: asyncio.StreamWriter, limit: float) -> None:
    """Wait (bounded) until the client gives up on this connection."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and not writer.is_closing():
        try:
            writer.write(b"")
            await writer.drain()
        except (ConnectionError, OSError):
            return
        await asyncio.sleep(0.1)
        transport = writer.transport
        sock = transport.get_extra_info("socket")
        if sock is None:
            return
        try:
            if sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                return  # EOF: the client closed
        except BlockingIOError:
            pass
        except OSError:
            return


# ---------------------------------------------------------------------------- fixtures and runs


@dataclass
class World:
    endpoint: str
    src: str
    dst: str
    listed: list[Listed]
    s3: Any
    upload_dir: Path

    def proxy(self, mode: str) -> FaultProxy:
        """A proxy of its own for one run (runs go side by side), bending as `mode` says."""
        u = urlsplit(self.endpoint)
        proxy = FaultProxy(u.hostname or "127.0.0.1", u.port or 80).start()
        hostile = Hostile(self.src, self.dst, self.listed)
        hostile.set(mode)
        proxy.hostile = hostile
        return proxy


@pytest.fixture(scope="module")
def world(s3, endpoint, tmp_path_factory):
    stamp = f"{os.getpid()}-{time.time_ns() % 10**9}"
    src, dst = f"hs-src-{stamp}", f"hs-dst-{stamp}"
    s3.create_bucket(Bucket=src)
    s3.create_bucket(Bucket=dst)
    for key, body in SOURCE.items():
        s3.put_object(Bucket=src, Key=key, Body=body)
    listed = [Listed(o["Key"], o["Size"], o["ETag"].strip('"'),
                     o["LastModified"].strftime("%Y-%m-%dT%H:%M:%S.000Z"))
              for o in s3.list_objects_v2(Bucket=src)["Contents"]]
    assert sorted(o.key for o in listed) == sorted(SOURCE)
    up = tmp_path_factory.mktemp("upload")
    for key, body in UPLOAD.items():
        (up / key).parent.mkdir(parents=True, exist_ok=True)
        (up / key).write_bytes(body)
    return World(endpoint, src, dst, listed, s3, up)


def _run(args: list[str], data_path: str, timeout: float) -> subprocess.CompletedProcess | None:
    """The run's result, or None when it did not end within `timeout` (killed: a hang)."""
    env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
               S3BULK_DATA_PATH=data_path)
    env.pop("AWS_ENDPOINT_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors="replace", env=env, cwd=ROOT, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        return None
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def _local_tree(root: Path) -> dict[str, bytes]:
    """Every file under root by its final name (a failed download's temporary `.s3bulk.part`
    files, kept for --resume, are no final name)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and not p.name.endswith(".s3bulk.part")}


def _s3_tree(s3: Any, bucket: str, prefix: str) -> dict[str, bytes]:
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []):
            out[o["Key"][len(prefix):]] = s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
    return out


def runs_of(m: Mode) -> list[tuple[str, str]]:
    """(direction, data path) of every run a mode gets."""
    directions = {"get": ["to-local"], "put": ["to-s3"],
                  "list": ["to-local"] if m.id in LOCAL_ONLY else ["to-local", "s3-to-s3"]}[m.kind]
    return [(d, p) for d in directions for p in PATHS]


def one_run(w: World, m: Mode, direction: str, data_path: str, box: Path) -> None:
    """One run of mode `m` through a proxy of its own; raises AssertionError saying what went wrong."""
    proxy = w.proxy(m.id)
    try:
        _check_run(w, m, direction, data_path, box, proxy)
    finally:
        proxy.stop()


def _check_run(w: World, m: Mode, direction: str, data_path: str, box: Path, proxy: FaultProxy) -> None:
    (box / "outside").mkdir(parents=True)
    (box / "outside" / "sentinel").write_bytes(b"untouched")
    dst_local = box / "in" / "dst"
    prefix = f"{m.id}/{direction}/{data_path}/{time.time_ns()}/"
    common = ["--endpoint-url", proxy.url, "--retry-max-time", RETRY_MAX_TIME, "--workers", "1", *m.args]
    if direction == "to-s3":
        args = ["copy", str(w.upload_dir), f"s3://{w.dst}/{prefix}", "--multipart-threshold", "5MiB",
                "--part-size", "5MiB", *common]
        expected = UPLOAD
    else:
        dst = str(dst_local) if direction == "to-local" else f"s3://{w.dst}/{prefix}"
        args = ["copy", f"s3://{w.src}/", dst, "--page-size", "2", "--multipart-threshold", "1MiB", *common]
        expected = SOURCE
    label = f"{m.id} {direction} {data_path}"
    run = _run(args, data_path, m.timeout)
    assert run is not None, f"{label}: hang: no end within {m.timeout} s"
    where = f"{label}: exit {run.returncode}\n--- stdout\n{run.stdout[-2000:]}\n--- stderr\n{run.stderr[-2000:]}"
    assert "Traceback" not in run.stderr + run.stdout and "internal error" not in run.stderr, where

    got = _local_tree(dst_local) if direction == "to-local" else _s3_tree(w.s3, w.dst, prefix)
    invented = INVENTED.get(m.id, {})
    # nothing wrong under a final name: every file or object DST holds is its source's bytes
    wrong = sorted(k for k, v in got.items() if expected.get(k, invented.get(k)) != v)
    assert not wrong, f"wrong data under a final name: {wrong}\n{where}"
    # nothing outside DST: the sentinel beside it untouched, nothing new beside or above it
    assert _local_tree(box / "outside") == {"sentinel": b"untouched"}, where
    assert sorted(p.name for p in box.iterdir()) in (["outside"], ["in", "outside"]), where
    if (box / "in").exists():
        assert sorted(p.name for p in (box / "in").iterdir()) in ([], ["dst"]), where
    assert not Path("/abs").exists(), where

    lines = [x for x in run.stderr.splitlines() if x.strip()]
    if run.returncode == 0:
        assert m.outcome in ("right", "either"), f"should have been refused\n{where}"
        assert got == expected, f"exit 0 without every object: missing {sorted(set(expected) - set(got))}\n{where}"
        return
    assert m.outcome in ("refused", "either"), f"should have ended right\n{where}"
    # a refusal: one line for a run that stops, or one ERROR line per object that failed
    assert lines, where
    if lines[0].startswith("s3bulk: error: "):
        assert len(lines) == 1, where
    else:
        assert all(x.startswith("ERROR ") for x in lines), where
    if m.needle:
        assert any(m.needle.lower() in x.lower() for x in lines), where


def _params() -> list[Any]:
    return [pytest.param(m, id=m.id, marks=[pytest.mark.xfail(strict=False, reason=m.xfail)] if m.xfail else [])
            for m in MODES]


@pytest.mark.parametrize("m", _params())
def test_hostile_mode(m: Mode, world: World, tmp_path: Path):
    """Every run of one mode (its directions x both data paths), side by side, each through its own proxy."""
    runs = runs_of(m)
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = [pool.submit(one_run, world, m, d, p, tmp_path / f"{d}-{p}") for d, p in runs]
        problems = []
        for f in futures:
            try:
                f.result()
            except AssertionError as exc:
                problems.append(str(exc))
    assert not problems, "\n\n".join(problems)


def hostile_case_count() -> int:
    """The runs this file makes: modes x directions x data paths (the guarantees page counts them)."""
    return sum(len(runs_of(m)) for m in MODES)


@pytest.mark.unit
def test_there_are_at_least_30_modes():
    assert len({m.id for m in MODES}) == len(MODES) >= 30
    assert {m.kind for m in MODES} == {"get", "list", "put"}


# ---------------------------------------------------------------------------- --verify


def _copy_small_through(w: World, tmp_path: Path, mode: str, label: str, data_path: str,
                        *extra: str) -> tuple[subprocess.CompletedProcess[str] | None, str, dict[str, bytes]]:
    """The objects of UPLOAD under 1 MiB, written to a local SRC and copied to a fresh prefix of the
    DST bucket through a proxy bending requests by `mode`, one worker: (the run or None on a hang,
    the prefix, the objects)."""
    src = tmp_path / "src"
    small = {k: v for k, v in UPLOAD.items() if len(v) < MiB}
    for key, body in small.items():
        (src / key).parent.mkdir(parents=True, exist_ok=True)
        (src / key).write_bytes(body)
    proxy = w.proxy(mode)
    try:
        prefix = f"{label}/{time.time_ns()}/"
        run = _run(["copy", str(src), f"s3://{w.dst}/{prefix}", "--endpoint-url", proxy.url, "--workers", "1",
                    "--retry-max-time", RETRY_MAX_TIME, *extra], data_path, TIMEOUT)
    finally:
        proxy.stop()
    return run, prefix, small


@pytest.mark.parametrize("data_path", PATHS)
@pytest.mark.parametrize("verify", [False, True], ids=["default", "verify"])
def test_a_gateway_that_stores_nothing_is_noticed(world: World, tmp_path: Path, data_path: str, verify: bool):
    """Every PUT answered 200 with the right ETag and nothing stored: by default the first object
    the worker writes is read back and the run fails (exit 1, not 0 with nothing there); with
    --verify every object is, each failing with one line after its second write."""
    w = world
    run, prefix, small = _copy_small_through(w, tmp_path, "swallow-every-put", f"swallow/{data_path}/{verify}",
                                             data_path, *(["--verify"] if verify else []))
    assert run is not None, "hang"
    where = f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    assert run.returncode == 1, where
    assert _s3_tree(w.s3, w.dst, prefix) == {}
    lines = [x for x in run.stderr.splitlines() if x.strip()]
    assert lines and all(x.startswith("ERROR ") and "does not have the object" in x for x in lines), where
    assert len(lines) == (len(small) if verify else 1), where


@pytest.mark.parametrize("data_path", PATHS)
@pytest.mark.parametrize("verify", [False, True], ids=["default", "verify"])
def test_credentials_that_may_write_but_not_read_back(world: World, tmp_path: Path, data_path: str, verify: bool):
    """A backup bucket's write-only policy: every HEAD at DST is AccessDenied. The default sample
    checks nothing then (the run ends right, exit 0); --verify, asked for, fails each object saying so."""
    w = world
    run, prefix, small = _copy_small_through(w, tmp_path, "write-only", f"write-only/{data_path}/{verify}",
                                             data_path, *(["--verify"] if verify else []))
    assert run is not None, "hang"
    where = f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    assert _s3_tree(w.s3, w.dst, prefix) == small, where  # written either way, and whole
    lines = [x for x in run.stderr.splitlines() if x.strip()]
    if not verify:
        assert run.returncode == 0 and lines == [], where
        return
    assert run.returncode == 1, where
    assert len(lines) == len(small) and all(x.startswith("ERROR ") and "access denied" in x.lower()
                                            for x in lines), where


@pytest.mark.parametrize("data_path", PATHS)
@pytest.mark.parametrize("bent", sorted(ANSWER_BENT))
def test_verify_holds_the_object_to_what_its_write_answered(world: World, tmp_path: Path, data_path: str,
                                                             bent: str):
    """Every PUT stored as sent but answered with another ETag (or another CRC32): the object is
    there, with its size, but not what the answer named. --verify's HEAD compares the ETag the
    write answered (and, asked with checksum mode, the checksum): each object is written again,
    then fails with one line naming what differs (exit 1), whatever the encryption (the ETag is
    compared with the server's own answer, never with an MD5 computed here)."""
    w = world
    run, prefix, small = _copy_small_through(w, tmp_path, bent, f"{bent}/{data_path}", data_path, "--verify")
    assert run is not None, "hang"
    where = f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    assert run.returncode == 1, where
    assert _s3_tree(w.s3, w.dst, prefix) == small, where  # stored as sent: the answers lied
    what = "ETag" if bent == "answer-other-etag" else "CRC32"
    lines = [x for x in run.stderr.splitlines() if x.strip()]
    assert len(lines) == len(small), where
    assert all(x.startswith("ERROR ") and what in x and "its answer named" in x for x in lines), where


SAME_SIZE = {f"same/{i:02d}": os.urandom(4096) for i in range(12)}  # the drift's victims: equal lengths


@pytest.fixture(scope="module")
def same_size_world(world: World) -> World:
    """A source bucket of objects that all have one length: an answer drifted to another of them
    passes every length check."""
    w = world
    src = f"{w.src}-same"
    w.s3.create_bucket(Bucket=src)
    for key, body in SAME_SIZE.items():
        w.s3.put_object(Bucket=src, Key=key, Body=body)
    listed = [Listed(o["Key"], o["Size"], o["ETag"].strip('"'), o["LastModified"].strftime("%Y-%m-%dT%H:%M:%S.000Z"))
              for o in w.s3.list_objects_v2(Bucket=src)["Contents"]]
    return World(w.endpoint, src, w.dst, listed, w.s3, w.upload_dir)


@pytest.mark.parametrize("data_path", PATHS)
def test_a_drifted_answer_is_never_written_under_another_name(same_size_world: World, tmp_path: Path,
                                                              data_path: str):
    """Bytes after each first GET's body, sent once the client has put the connection back in its
    pool: aiohttp (botocore) reads them as the answer of the next request on that connection, and
    answers drift one request behind, so a GET is answered with another object's body. All objects
    here have one length, so only the answer's ETag, held to the listing's, tells (one connection,
    --concurrency 1, so that the drift reaches the next object); the run must end right, never
    write one object's bytes under another's name (DST checked byte for byte)."""
    w = same_size_world
    proxy = w.proxy("get-bytes-after-body-apart")
    dst = tmp_path / "dst"
    try:
        run = _run(["copy", f"s3://{w.src}/", str(dst), "--endpoint-url", proxy.url, "--workers", "1",
                    "--concurrency", "1", "--retry-max-time", RETRY_MAX_TIME], data_path, TIMEOUT)
    finally:
        proxy.stop()
    assert run is not None, "hang"
    where = f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    assert "Traceback" not in run.stderr, where
    got = _local_tree(dst) if dst.exists() else {}
    wrong = sorted(k for k, v in got.items() if SAME_SIZE.get(k) != v)
    assert not wrong, f"another object's bytes under {wrong}\n{where}"
    assert run.returncode == 0 and got == SAME_SIZE, where


@pytest.mark.unit
def test_the_guarantees_page_lists_every_mode_and_counts_the_cases():
    page = (ROOT / "docs" / "reference" / "guarantees.md").read_text()
    assert [m.id for m in MODES if f"| `{m.id}` |" not in page] == []
    cli_cases = len(re.findall(r'^@case\("', (ROOT / "tests" / "test_hostile.py").read_text(), re.M))
    # test_a_gateway_that_stores_nothing_is_noticed and test_credentials_that_may_write_but_not_read_back:
    # each 2 data paths x with and without --verify
    gateway = 8
    total = cli_cases + hostile_case_count() + gateway
    assert total > 150
    assert (f"**The tests run {total} hostile cases through the real command line:** the {cli_cases} cases above, "
            f"{hostile_case_count()} runs") in " ".join(page.split()), total
