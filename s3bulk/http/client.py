"""A small HTTP/1.1 client on asyncio protocols: keep-alive connections, optional TLS, request
bodies, Content-Length, chunked and close-delimited response bodies, interim (1xx) answers skipped.

Why not aiohttp: for 100-byte files the layers cost more than the work (seed 001 found the same
for large bodies). One request here is one write and usually one read on the socket, the head is
parsed once, and a body with a known length is filled into one preallocated buffer.

Heads and chunked bodies are parsed by llhttp (httptools, the parser under uvloop and Node.js), so
1xx answers, chunk extensions and trailers, header syntax and malformed answers are handled by a
parser written to RFC 9112 and used by far more traffic than ours, at about the CPU of the
hand-written one it replaced (bench/http_parser_bench.py). It sees only the bytes of the head (and
of chunked bodies): a body with a Content-Length is received straight into its buffer by
get_buffer, and one delimited by the end of the connection is collected here A caller with a
BodySink (a ranged download into a file) has such a body handed to it chunk by chunk instead.

Timeouts are limits on silence, as in every HTTP client users know: `connect_timeout` for the TCP
(and TLS) set-up, and `timeout` for a request during which no byte arrived and no byte of the
request body left (was acknowledged by the peer) for that many seconds. A transfer that keeps
moving is never cut off however slow the link; a stalled one fails with ReadTimeout/WriteTimeout.
One deadline besides: the response head must be whole within `timeout` seconds of the peer having
taken the whole request (HeadTimeout, a ReadTimeout). A head is a few hundred bytes that a server
sends at once; one arriving a byte every few seconds would otherwise keep the silence timeout from
ever firing and hold the request for as long as the server likes.

Request bodies are written in chunks of _SEND_CHUNK bytes, each after the transport has drained
below its high-water mark (pause_writing/resume_writing): a body never sits in the transport's
buffer as a second copy, and a body that is not in memory (a BodySource: a file range, see
stores/files/bodies.py) is read only as fast as the socket takes it.

Proxies: with `proxy` (an http:// URL, credentials in it as user:password@), requests to an
http:// origin go to the proxy in absolute form and an https:// origin is reached through a
CONNECT tunnel, as botocore does; proxy_for() picks the proxy from HTTP(S)_PROXY/NO_PROXY exactly
as botocore does for the same URL. An https:// proxy (TLS to the proxy) is not supported here:
callers fall back to botocore for it.

Every failure is one of these types (callers decide by type, never by message text):

    HttpError                    any transport failure; nothing here is an HTTP status
    ├── ConnectError             no connection: refused, unreachable, name not resolved
    │   ├── ConnectTimeout       no connection within connect_timeout
    │   ├── ProxyError           the proxy refused the CONNECT tunnel (`status` of its answer)
    │   └── TLSError             the TLS handshake failed (`certificate` says whether it was not trusted)
    ├── Timeout                  a connection went silent for `timeout` seconds
    │   ├── ReadTimeout          nothing arrived while waiting for (the rest of) the answer
    │   │   └── HeadTimeout      the head not whole `timeout` seconds after the request was
    │   └── WriteTimeout         the request body made no progress
    ├── ConnectionDropped        the peer closed or reset the connection before the answer was whole
    │   ├── DroppedBeforeAnswer  not one byte of the answer had arrived
    │   └── DroppedMidAnswer     part of the head or body had arrived (`received` bytes of the body)
    └── ProtocolError            the answer is not HTTP/1.1: garbage, bad framing, bad chunking
"""

from __future__ import annotations

import asyncio
import os
import ssl
import base64
import struct
import sys
import threading
from collections import deque
from typing import AsyncGenerator, AsyncIterator, Callable, NamedTuple, Protocol, Union, cast
from urllib.parse import unquote, urlsplit

import httptools

from .dates import http_date_seconds

try:  # Linux: bytes the kernel still holds for the peer, so progress hidden in socket buffers counts
    import fcntl
    import termios

    _OUTQ = getattr(termios, "TIOCOUTQ", None)
except ImportError:  # pragma: no cover - not Linux
    fcntl = None  # type: ignore[assignment]
    _OUTQ = None


class HttpError(Exception):
    """Transport-level failure (never an HTTP status: those are answers)."""


class ConnectError(HttpError):
    """The connection could not be made."""


class ConnectTimeout(ConnectError):
    """No connection within the connect timeout."""


class ProxyError(ConnectError):
    """The proxy answered CONNECT with something other than 2xx (407: it wants other credentials)."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class TLSError(ConnectError):
    """The TLS handshake failed; `certificate` is True when the server's certificate was not trusted
    (retrying will not help)."""

    def __init__(self, message: str, *, certificate: bool = False) -> None:
        super().__init__(message)
        self.certificate = certificate


class Timeout(HttpError):
    """A request went silent for longer than the timeout."""


class ReadTimeout(Timeout):
    """No byte of the answer arrived for `timeout` seconds."""


class HeadTimeout(ReadTimeout):
    """The response head was not whole `timeout` seconds after the request was (bytes of it may
    have trickled in meanwhile)."""


class WriteTimeout(Timeout):
    """No byte of the request body was taken by the peer for `timeout` seconds."""


class ConnectionDropped(HttpError):
    """The connection ended before the answer was complete."""


class DroppedBeforeAnswer(ConnectionDropped):
    """The connection ended before any byte of the answer (a stale keep-alive connection, a reset)."""


class DroppedMidAnswer(ConnectionDropped):
    """The connection ended inside the answer; `received` body bytes had arrived."""

    def __init__(self, message: str, *, received: int = 0) -> None:
        super().__init__(message)
        self.received = received


class ProtocolError(HttpError):
    """The answer breaks HTTP/1.1 framing: not a status line, bad headers, bad length or chunks."""


class Response(NamedTuple):
    status: int
    headers: dict[str, str]  # lower-case names; repeated headers keep the last value
    body: bytes | bytearray  # a large body is the buffer it was received into, not a copy


class BodySource(Protocol):
    """A request body that is produced as it is sent (a file range): its length is known up front,
    and every chunks() starts over from its first byte (a retried request sends it again)."""

    def __len__(self) -> int: ...

    def chunks(self) -> AsyncIterator[bytes | bytearray | memoryview]: ...


Body = Union[bytes, bytearray, memoryview, BodySource]


class BodySink(Protocol):
    """Where the body of an answer goes as it arrives instead of into memory (request(sink=...)):
    each chunk received is handed to write() at once, in order, from the scratch buffer the socket
    was read into, while it is still in the CPU's cache (stores/files/filesink.py writes it at its file
    offset). write() runs on the event loop and nothing is read from the connection meanwhile: a
    slow sink slows the reading, and the socket's buffer then the peer (TCP), never memory here.

    A sink with `off_thread` true also has room(): the buffer the next read goes into, which it
    then hands to write() and keeps until its own thread has written it (so the loop's core
    receives while the other writes); write() then returns before the bytes are in place, and the
    sink waits for them itself before the range counts as done."""

    def accepts(self, status: int, length: int, headers: dict[str, str]) -> bool:
        """Whether the answer with this status, Content-Length and head (lower-case names; read,
        not kept past the request) goes to the sink (anything else, an error answer above all, is
        received into memory as usual)."""
        ...

    def write(self, chunk: memoryview) -> None:
        """The next bytes of the body (a view valid only during the call); may raise, which fails
        the request and closes the connection."""
        ...


def retry_after(headers: dict[str, str]) -> float | None:
    """Seconds a 503/429 answer asks us to wait (Retry-After as seconds or an HTTP date), or None."""
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        import time

        return max(0.0, http_date_seconds(value) - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def proxy_for(url: str) -> str | None:
    """The proxy botocore uses for `url` from the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY,
    either case), or None: botocore.utils.get_environ_proxies, then ProxyConfiguration.proxy_url_for
    (the proxy of the URL's scheme, "http://" added when it has no scheme)."""
    from urllib.request import getproxies, proxy_bypass

    netloc = urlsplit(url).netloc
    try:
        if proxy_bypass(netloc):
            return None
    except (TypeError, OSError):
        pass
    proxy = getproxies().get(urlsplit(url).scheme)
    if not proxy:
        return None
    if proxy.startswith(("http:", "https:")):
        return proxy
    return "http:" + proxy if proxy.startswith("//") else "http://" + proxy


_COPY_BELOW = 65536  # smaller bodies are returned as bytes; larger ones keep their preallocated buffer
_MAX_HEAD = 65536    # bytes of status line and headers (each interim head counts alone)

_SEND_CHUNK = 256 * 1024  # a request body goes to the transport this much at a time, after it drained

_SCRATCH = 256 * 1024
# One scratch buffer per thread (event loop), not per connection: with selector loops and uvloop,
# get_buffer, the recv into it and buffer_updated (which copies the bytes out at once) run back to
# back for one connection, so connections can take turns with it. Per connection it cost 256 KiB of
# touched memory each, ~26 MiB per worker at 64 transfers + listings (in the process tree's PSS). Windows'
# proactor keeps the buffer across an overlapped read: there each connection keeps its own.
_SHARED_SCRATCH = sys.platform != "win32"
_scratch_local = threading.local()


_SINK_SCRATCH = 1024 * 1024
# A body going to a sink (BodySink) is received into its own per-thread scratch of 1 MiB, made on
# the first such body: measured against versitygw on loopback, receiving 1 GiB and pwriting it
# into tmpfs took 0.73 / 0.62 / 0.53 / 0.54 / 0.60 s of system CPU with 64 KiB / 256 KiB / 1 MiB /
# 2 MiB / 4 MiB reads (fewer syscalls, until the chunk no longer stays in the core's 2 MiB L2).


def thread_sink_scratch() -> memoryview:
    """This thread's scratch buffer for sunk bodies, made on first use; also what a sink that
    hands out its own buffers (stores/files/filesink.py) gives for small reads: each is written
    before the next read, so one buffer a thread serves both."""
    try:
        return cast(memoryview, _scratch_local.sink)
    except AttributeError:
        buf = _scratch_local.sink = memoryview(bytearray(_SINK_SCRATCH))
        return buf


def _thread_scratch() -> bytearray:
    """This thread's scratch buffer, made on first use."""
    try:
        return cast(bytearray, _scratch_local.buf)
    except AttributeError:
        buf = _scratch_local.buf = bytearray(_SCRATCH)
        return buf


class _Extra(Exception):
    """Raised from a parser callback to stop llhttp at bytes that follow the answer."""


def _new_parser(conn: _Conn) -> httptools.HttpResponseParser:
    """A parser for one answer (its interim heads count alone). Not one per connection: after a
    head with a Content-Length the body bypasses the parser, which would then wait for it."""
    parser = httptools.HttpResponseParser(conn)
    # RFC 9112 6.3: with both Transfer-Encoding and Content-Length, chunked wins (and the
    # connection is closed after it, see _parse_head); llhttp refuses such answers by default
    parser.set_dangerous_leniencies(lenient_chunked_length=True)
    return parser


_NAMES: dict[bytes, str] = {}  # header name as sent -> lower-case str: decoding them was 1/3 of a head


def _name(raw: bytes) -> str:
    """`raw` as a dict key, remembered: servers send the same few names in every answer (a server
    sending ever new ones fills the table only so far)."""
    name = raw.decode("latin-1").lower()
    if len(_NAMES) < 512:
        _NAMES[raw] = name
    return name


def _feed(parser: httptools.HttpResponseParser, data: bytes | bytearray) -> None:
    """The one place llhttp's errors become ProtocolError."""
    try:
        parser.feed_data(data)
    except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
        if parser.get_status_code() == 101:  # llhttp stops there: we never ask to switch protocols
            raise ProtocolError("unexpected status 101") from exc
        raise ProtocolError(f"malformed answer: {exc}") from exc


STALE_AFTER = 2.0  # seconds idle after which a connection closed under us is retried here, silently


class _Conn(asyncio.BufferedProtocol):
    """One connection. The transport reads a response head into a scratch buffer and a body of
    known length straight into its final buffer (the caller's, when it gave one): no chunk
    objects, no joining, no second copy."""

    __slots__ = ("transport", "buf", "waiter", "head", "need", "body", "filled", "chunked", "closed",
                 "head_only", "keep_alive", "scratch", "into", "view", "idle_since", "rx", "rx_start",
                 "mark", "quiet_since", "fd", "paused", "drained", "parser", "fields", "head_seen",
                 "chunks_done", "sink", "sinking", "sent", "head_by", "sink_room", "sink_view")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.scratch = _thread_scratch() if _SHARED_SCRATCH else bytearray(_SCRATCH)
        self.into: memoryview | None = None  # where the caller wants the body, if it has a place
        self.view: memoryview | None = None  # the body buffer being filled
        self.buf = bytearray()
        self.waiter: asyncio.Future[Response] | None = None
        self.closed = False
        self.idle_since = 0.0
        self.rx = 0             # bytes received on this connection, ever: the watchdog's sign of life
        self.rx_start = 0       # rx when the current request was sent
        self.mark: tuple[int, int] = (0, 0)  # (rx, bytes not yet taken by the peer) at the last look
        self.quiet_since = 0.0  # when the watchdog last saw the mark move
        self.fd = -1
        self.paused = False     # the transport's write buffer is above its high-water mark
        self.drained: asyncio.Future[None] | None = None  # set when it is below again (or the connection ends)
        self.fields: dict[str, str] = {}  # the headers of the head being parsed
        self.head_seen = False    # llhttp reached the end of the head it was given
        self.chunks_done = False  # the chunked answer is whole: more bytes are not ours
        self.sink: BodySink | None = None  # where the caller wants the body's bytes, if it has a sink
        self.sink_room: Callable[[], memoryview] = thread_sink_scratch  # what a sunk body is received into
        self.sink_view: memoryview | None = None  # the part of it the last read was given
        self.sent = False     # the whole request was handed to the transport
        self.head_by = 0.0    # loop time by which the head must be whole (0: not counting yet)
        self._reset()

    def _reset(self) -> None:
        self.head: tuple[int, dict[str, str]] | None = None
        self.need = -1
        self.body: bytearray | memoryview | None = None
        self.view = None
        self.sinking = False  # this answer's body goes to self.sink
        self.filled = 0
        self.chunked = False
        self.head_only = False
        self.keep_alive = True
        self.parser: httptools.HttpResponseParser | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream connection's: create_connection made it
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                self.fd = sock.fileno()
            except (OSError, ValueError):
                self.fd = -1

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        d = self.drained
        if d is not None and not d.done():
            d.set_result(None)

    async def writable(self, answer: asyncio.Future[Response]) -> None:
        """Wait until the transport takes more, or the answer is settled (an early answer, a
        timeout, a drop): a body the peer stopped taking must not hold the request forever."""
        if not self.paused or self.closed:
            return
        d = self.drained = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait((d, answer), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.drained = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.resume_writing()  # a sender waiting for the buffer to drain: it never will
        w = self.waiter
        if w is None or w.done():
            return
        why = f" ({exc})" if exc else ""
        if self.head is not None and self.need < 0 and not self.chunked:
            # body delimited by the end of the connection
            w.set_result(Response(self.head[0], self.head[1], bytes(self.buf)))
        elif self.rx == self.rx_start:
            w.set_exception(DroppedBeforeAnswer(f"connection closed before any answer{why}"))
        elif self.head is None:
            w.set_exception(DroppedMidAnswer(f"connection closed inside the answer's head{why}"))
        else:
            got = self.filled if not self.chunked else len(self.body or b"")
            total = f" of {self.need}" if self.need >= 0 else ""
            w.set_exception(DroppedMidAnswer(f"connection closed after {got}{total} body bytes{why}",
                                             received=got))

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.sinking:  # never past this body, as below
            room = self.sink_room()
            view = self.sink_view = room[:min(len(room), self.need - self.filled)]
            return view
        if self.view is not None:
            return self.view[self.filled:self.need]  # never past this body: the next bytes are not ours
        return memoryview(self.scratch)

    def buffer_updated(self, nbytes: int) -> None:
        self.rx += nbytes
        if self.sinking:
            self._to_sink(cast(memoryview, self.sink_view)[:nbytes])
            return
        if self.view is not None:
            self.filled += nbytes
            if self.filled == self.need:
                self._body_done()
            return
        self.data_received(self.scratch[:nbytes])

    def _body_done(self) -> None:
        body: bytes | bytearray | memoryview | None = self.body
        assert body is not None  # set when the head announced a body
        self.view = None
        if isinstance(body, bytearray) and self.need < _COPY_BELOW:
            body = bytes(body)
        self._finish(body)

    def data_received(self, data: bytes | bytearray) -> None:
        if self.waiter is None:
            # bytes nobody asked for (a 408 before an idle close, junk): this connection is done
            self.closed = True
            if self.transport is not None:
                self.transport.close()
            return
        try:
            if self.chunked and self.head is not None:  # inside a chunked body: straight to llhttp
                self._feed_chunks(data)
                return
            self.buf += data
            self._parse()
        except HttpError as exc:
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_exception(exc)
            self.closed = True
            if self.transport is not None:
                self.transport.close()

    def _parse(self) -> None:
        if self.head is None and self._parse_head():  # a chunked body starts after the head
            rest = bytes(self.buf)
            self.buf.clear()
            self._feed_chunks(rest)

    def _parse_head(self) -> bool:
        """Parse the final head (skipping 1xx ones) with llhttp and set up the body; False while
        incomplete. Only the head's bytes go to the parser: a body with a Content-Length is filled
        straight into its buffer (get_buffer), a chunked one is fed to the same parser after it."""
        buf = self.buf
        while True:
            if len(buf) >= 5 and not buf.startswith(b"HTTP/"):
                raise ProtocolError(f"answer is not HTTP: {bytes(buf[:40])!r}")
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _MAX_HEAD:
                    raise ProtocolError("response head too large")
                return False
            if buf.startswith(b"HTTP/1.1 "):  # llhttp would also take HTTP/2.0 or /0.9 here
                http11 = True
            elif buf.startswith(b"HTTP/1.0 "):
                http11 = False
            else:
                raise ProtocolError(f"unsupported HTTP version in {bytes(buf[:min(end, 40)])!r}")
            parser = self.parser = _new_parser(self)
            self.fields = {}
            self.head_seen = self.chunks_done = False
            _feed(parser, buf[:end + 4])
            del buf[:end + 4]
            if not self.head_seen:  # the parser wants more than the blank line we saw
                raise ProtocolError("malformed response head")
            status = parser.get_status_code()
            if status < 200:  # (101 was refused in _feed)
                if status < 100:
                    raise ProtocolError(f"unexpected status {status}")
                continue  # 100 Continue, 102 Processing, 103 Early Hints: the final answer follows
            break
        headers = self.fields
        self.head = (status, headers)
        conn = headers.get("connection", "").lower()
        self.keep_alive = "close" not in conn if http11 else "keep-alive" in conn
        if self.head_only or status in (204, 304):
            self._finish(b"")
            return False
        te = headers.get("transfer-encoding")
        if te is not None:
            if te.lower() != "chunked":
                raise ProtocolError(f"unsupported Transfer-Encoding {te[:40]!r}")
            if "content-length" in headers:
                self.keep_alive = False  # both framings: chunked wins, and the connection is not reused
            self.chunked = True
            self.body = bytearray()
            return True
        self.parser = None  # the body, if any, is framed here, not by the parser
        length = headers.get("content-length")
        if length is None:
            self.keep_alive = False  # body runs to the end of the connection
            return False
        if not (length.isascii() and length.isdigit()):  # llhttp checked it; int() alone takes "1_0"
            raise ProtocolError(f"malformed Content-Length {length[:40]!r}")
        self.need = int(length)
        # (not on Windows: its proactor keeps a read's buffer across the wait, so the per-thread
        # sink scratch cannot be shared; the body is received into memory and handed over whole)
        if self.sink is not None and _SHARED_SCRATCH and self.sink.accepts(status, self.need, headers):
            self._start_sink()
            return False
        n = min(len(buf), self.need)
        into = self.into
        if n == self.need and (into is None or n < _COPY_BELOW):
            body = bytes(buf[:n])
            del buf[:n]
            self._finish(body)
            return False
        if into is not None and len(into) >= self.need:
            self.body = into[:self.need]
        else:
            self.body = bytearray(self.need)
        view = self.view = memoryview(self.body) if isinstance(self.body, bytearray) else self.body
        view[:n] = buf[:n]
        self.filled = n
        del buf[:n]
        if n == self.need:
            self._body_done()
        return False

    def _start_sink(self) -> None:
        """The body goes to the sink: what came with the head first, the rest as it arrives."""
        self.sinking = True
        # a sink that writes off the loop's thread hands out the buffers it receives into (it keeps
        # each until its write is done); any other takes its chunks from this thread's scratch
        room = getattr(self.sink, "room", None)
        self.sink_room = room if room is not None and getattr(self.sink, "off_thread", False) else thread_sink_scratch
        buf = self.buf
        n = min(len(buf), self.need)
        if n:
            first = bytes(buf[:n])
            del buf[:n]
            self._to_sink(memoryview(first))
        elif self.need == 0:
            self._finish(b"")

    def _to_sink(self, chunk: memoryview) -> None:
        """One received chunk of a sunk body; the answer (with an empty body) once all arrived. A
        failing sink fails the request (its error as is) and closes the connection: the rest of
        the body is not read."""
        self.filled += len(chunk)
        sink = self.sink
        if sink is None:  # it failed on an earlier chunk: the connection is closing
            return
        try:
            sink.write(chunk)
        except Exception as exc:
            self.sink = None
            self.closed = True
            w = self.waiter
            if w is not None and not w.done():
                w.set_exception(exc)
            if self.transport is not None:
                self.transport.close()
            return
        if self.filled >= self.need:
            self._finish(b"")

    def _feed_chunks(self, data: bytes | bytearray) -> None:
        """Give what arrived of a chunked body to llhttp; on_body collects it, on_message_complete
        answers. Bytes after the last chunk stop the parser (on_message_begin) and retire the
        connection, as they would any other."""
        parser = self.parser
        assert parser is not None
        try:
            _feed(parser, data)
        except ProtocolError:
            if not self.chunks_done:
                raise
            self.keep_alive = False

    # llhttp's callbacks (httptools looks them up by name on this protocol object)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.head is None:  # after the head: trailers of a chunked body, not kept
            self.fields[_NAMES.get(name) or _name(name)] = value.decode("latin-1").strip(" \t")

    def on_headers_complete(self) -> None:
        self.head_seen = True

    def on_body(self, data: bytes) -> None:
        cast(bytearray, self.body).extend(data)  # only chunked bodies reach the parser

    def on_message_begin(self) -> None:
        if self.chunks_done:
            raise _Extra  # bytes after the chunked answer: not a second answer we asked for

    def on_message_complete(self) -> None:
        if self.chunked:  # a 1xx head completes too: it has no body, the final one follows
            body = self.body
            assert isinstance(body, bytearray)
            self.chunks_done = True
            self._finish(bytes(body) if len(body) < _COPY_BELOW else body)

    def _finish(self, body: bytes | bytearray | memoryview) -> None:
        head = self.head
        assert head is not None
        w = self.waiter
        keep = self.keep_alive
        self._reset()
        self.keep_alive = keep
        if w is not None and not w.done():
            w.set_result(Response(head[0], head[1], body))

    def unsent(self) -> int:
        """Request bytes not yet taken by the peer: in the transport's buffer and, on Linux, in the
        kernel's send queue (sent but not acknowledged)."""
        t = self.transport
        n = t.get_write_buffer_size() if t is not None else 0
        if _OUTQ is not None and self.fd >= 0:
            try:
                n += struct.unpack("i", fcntl.ioctl(self.fd, _OUTQ, b"\0\0\0\0"))[0]
            except OSError:
                pass
        return n


class HttpClient:
    """Keep-alive connections to one host:port, at most `max_connections` at once.

    `timeout` is seconds of silence (nothing received, no body progress) before a request fails;
    `connect_timeout` bounds setting up a connection."""

    def __init__(self, host: str, port: int, *, max_connections: int = 64, timeout: float = 60.0,
                 connect_timeout: float = 10.0, tls: ssl.SSLContext | None = None,
                 proxy: str | None = None) -> None:
        self.host, self.port = host, port
        self.tls = tls
        # as botocore signs it (auth._host_from_url): an IPv6 address in brackets, the default port left out
        shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
        self.host_header = shown if port == (443 if tls else 80) else f"{shown}:{port}"
        self.proxy: tuple[str, int] | None = None
        self._proxy_auth = ""  # a Proxy-Authorization header line, when the proxy URL has credentials
        self._origin = ""      # what precedes the path in a request line: the origin, for a plain-http proxy
        if proxy:
            p = urlsplit(proxy if "://" in proxy else "http://" + proxy)
            if p.scheme != "http" or not p.hostname:
                raise ValueError(f"unsupported proxy {p.scheme}://{p.hostname or ''} (only http:// proxies)")
            self.proxy = (p.hostname, p.port or 80)
            if p.username and p.password:  # as botocore: credentials only when both are there
                cred = f"{unquote(p.username)}:{unquote(p.password or '')}".encode()
                self._proxy_auth = f"Proxy-Authorization: Basic {base64.b64encode(cred).decode()}\r\n"
            if tls is None:
                self._origin = f"http://{self.host_header}"
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._tick = min(1.0, max(0.05, timeout / 4))  # how often the watchdog looks for silence
        self._idle: deque[_Conn] = deque()
        self._busy: set[_Conn] = set()
        self._watchdog: asyncio.TimerHandle | None = None
        self._slots = asyncio.Semaphore(max_connections)
        if "S3BULK_LOG_REQUESTS" in os.environ:  # --log-requests (requestlog.py): this client's requests logged
            from .requestlog import current

            log = current()
            if log is not None:
                setattr(self, "request", log.wrap(self))  # an instance's own: a client without pays nothing

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        where = self.host_header
        try:
            async with asyncio.timeout(self.connect_timeout):
                if self.proxy is None:
                    _, proto = await loop.create_connection(
                        _Conn, self.host, self.port, ssl=self.tls, server_hostname=self.host if self.tls else None)
                else:
                    where = f"{where} through the proxy {self.proxy[0]}:{self.proxy[1]}"
                    _, proto = await loop.create_connection(_Conn, *self.proxy)
                    if self.tls is not None:
                        await self._tunnel(loop, proto)
        except TimeoutError as exc:  # before OSError: TimeoutError is one
            raise ConnectTimeout(f"cannot connect to {where}: no connection within "
                                 f"{self.connect_timeout:g} s") from exc
        except ssl.SSLCertVerificationError as exc:
            raise TLSError(f"TLS with {where} failed: {exc.verify_message or exc}", certificate=True) from exc
        except ssl.SSLError as exc:
            raise TLSError(f"TLS with {where} failed: {exc.reason or exc}") from exc
        except OSError as exc:
            raise ConnectError(f"cannot connect to {where}: {exc.strerror or exc}") from exc
        return proto

    async def _tunnel(self, loop: asyncio.AbstractEventLoop, conn: _Conn) -> None:
        """CONNECT through the proxy, then TLS with the origin inside the tunnel."""
        fut: asyncio.Future[Response] = loop.create_future()
        conn.waiter, conn.head_only = fut, True  # a 2xx answer to CONNECT has no body
        assert conn.transport is not None
        authority = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        conn.transport.write(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{self._proxy_auth}\r\n"
                             .encode("utf-8"))
        try:
            resp = await fut
        except BaseException:
            conn.transport.close()
            raise
        finally:
            conn.waiter, conn.head_only = None, False
        if not 200 <= resp.status < 300 or conn.buf:
            conn.transport.close()
            proxy = cast(tuple[str, int], self.proxy)  # a CONNECT is made only through one
            raise ProxyError(f"the proxy {proxy[0]}:{proxy[1]} refused CONNECT {authority} "
                             f"({resp.status})", status=resp.status)
        plain = conn.transport
        assert plain is not None  # connected above
        try:
            conn.transport = await loop.start_tls(plain, conn, self.tls,  # type: ignore[arg-type]
                                                  server_hostname=self.host)
        except BaseException:
            plain.close()
            raise

    async def request(self, method: str, target: str, headers: dict[str, str] | None = None,
                      body: Body | None = None, into: memoryview | None = None,
                      sink: BodySink | None = None) -> Response:
        """Send one request and return the whole response. A body is sent with its Content-Length;
        small ones go out in the same write as the head, larger ones (and a BodySource) in chunks as
        the socket takes them. With `into`, a response body that fits is received straight into it
        and returned as a memoryview of it. With `sink`, a body of known length that the sink
        accepts is handed to it chunk by chunk as it arrives, and the response's body is empty."""
        extra = "".join([f"{k}: {v}\r\n" for k, v in headers.items()]) if headers else ""  # a list: no generator
        if body is not None:
            extra += f"Content-Length: {len(body)}\r\n"
        raw = (f"{method} {self._origin}{target} HTTP/1.1\r\nHost: {self.host_header}\r\n"
               f"{self._proxy_auth if self._origin else ''}{extra}\r\n").encode("utf-8")
        if isinstance(body, (bytes, bytearray, memoryview)) and len(body) < _COPY_BELOW:
            raw += body
            body = None
        async with self._slots:
            loop = asyncio.get_running_loop()
            for attempt in (0, 1):
                conn = None
                while self._idle:
                    c = self._idle.pop()
                    if not c.closed:
                        conn = c
                        break
                # only a connection that sat idle a while may have been closed by the server meanwhile
                reused = conn is not None and loop.time() - conn.idle_since > STALE_AFTER
                if conn is None:
                    conn = await self._connect()
                fut: asyncio.Future[Response] = loop.create_future()
                conn.waiter = fut
                conn.into = into
                conn.sink = sink
                conn.head_only = method == "HEAD"
                conn.rx_start = conn.rx
                transport = conn.transport
                assert transport is not None
                transport.write(raw)
                conn.mark = (conn.rx, -1)  # unsent bytes not looked at yet
                conn.quiet_since = loop.time()
                self._busy.add(conn)
                self._ensure_watchdog(loop)
                sent_all = True
                try:
                    if body is not None:
                        sent_all = await _send_body(conn, transport, body, fut)
                    conn.sent = True  # the watchdog starts the head's deadline once the peer took it all
                    resp = await fut
                except DroppedBeforeAnswer:
                    transport.close()
                    if reused and attempt == 0:
                        continue  # a connection the server closed while it sat idle: try a fresh one
                    # anything else (a reset on a busy connection) is the caller's to retry, and count
                    raise
                except BaseException:
                    transport.close()
                    if fut.done() and not fut.cancelled():
                        fut.exception()  # settled while the body failed to send: retrieved, not logged
                    raise
                finally:
                    conn.waiter = None
                    conn.into = None
                    conn.sink = None
                    conn.sent, conn.head_by = False, 0.0
                    self._busy.discard(conn)
                if (conn.keep_alive and sent_all and not conn.closed and not conn.buf
                        and not transport.get_write_buffer_size()):
                    conn.idle_since = loop.time()
                    self._idle.append(conn)
                else:  # also when the answer came before the whole body was sent: the rest would be a request
                    transport.close()
                return resp
        raise AssertionError("unreachable")

    def _ensure_watchdog(self, loop: asyncio.AbstractEventLoop) -> None:
        """One timer per client, not one per request: fails requests that went silent."""
        if self._watchdog is None:
            self._watchdog = loop.call_later(self._tick, self._check_silence, loop)

    def _check_silence(self, loop: asyncio.AbstractEventLoop) -> None:
        self._watchdog = None
        now = loop.time()
        for conn in list(self._busy):
            w = conn.waiter
            if w is None or w.done():
                continue
            if conn.head is None and conn.sent:  # the head's deadline (module docstring)
                if not conn.head_by:
                    if conn.unsent() == 0:  # the peer has the whole request: from now on
                        conn.head_by = now + self.timeout
                elif now >= conn.head_by:
                    w.set_exception(HeadTimeout(f"no complete answer head within {self.timeout:g} s of the "
                                                "request (its bytes trickled in or never came)"))
                    continue
            mark = conn.mark
            if conn.rx != mark[0]:
                conn.mark = (conn.rx, mark[1])
                conn.quiet_since = now
                continue
            unsent = conn.unsent()  # only looked at when nothing arrived: a syscall, per tick
            if unsent != mark[1]:
                conn.mark = (mark[0], unsent)
                if mark[1] >= 0:  # -1: the first look since the request went out, not progress
                    conn.quiet_since = now
            elif now - conn.quiet_since >= self.timeout:
                if unsent:
                    w.set_exception(WriteTimeout(f"request body made no progress for {self.timeout:g} s "
                                                 f"({unsent} bytes not taken)"))
                else:
                    w.set_exception(ReadTimeout(f"no byte of the answer for {self.timeout:g} s"))
        if self._busy:
            self._ensure_watchdog(loop)

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        while self._idle:
            c = self._idle.pop()
            if c.transport is not None:
                c.transport.close()


async def _send_body(conn: _Conn, transport: asyncio.Transport, body: Body,
                     answer: asyncio.Future[Response]) -> bool:
    """Write the body in chunks, each once the transport has drained; stop early when the answer
    is settled first (an error answer before the whole body, a timeout, a drop). True when every
    byte was handed to the transport (else the connection cannot carry another request)."""
    if isinstance(body, (bytes, bytearray, memoryview)):
        view = body if isinstance(body, memoryview) else memoryview(body)
        for at in range(0, len(view), _SEND_CHUNK):
            if answer.done() or conn.closed:
                return False
            transport.write(view[at:at + _SEND_CHUNK])
            await conn.writable(answer)
        return True
    left = len(body)
    chunks = cast(AsyncGenerator[bytes | bytearray | memoryview, None], body.chunks())  # aclose(): an async generator's
    try:
        async for chunk in chunks:
            view = memoryview(chunk)
            for at in range(0, len(view), _SEND_CHUNK):
                if answer.done() or conn.closed:
                    return False
                piece = view[at:at + min(_SEND_CHUNK, left)]
                transport.write(piece)
                left -= len(piece)
                await conn.writable(answer)
                if left <= 0:
                    return True
    finally:
        await chunks.aclose()
    if left > 0 and not answer.done():
        raise HttpError(f"the request body ended {left} bytes short of its Content-Length")
    return left <= 0
