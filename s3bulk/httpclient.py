"""A small HTTP/1.1 client on asyncio protocols: keep-alive connections, optional TLS, request
bodies, Content-Length and chunked response bodies, nothing else.

Why not aiohttp: for 100-byte files the layers cost more than the work (seed 001 found the same
for large bodies). One request here is one write and usually one read on the socket, the head is
parsed once, and a body with a known length is filled into one preallocated buffer.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from typing import NamedTuple


class HttpError(Exception):
    """Transport-level failure: connection refused or dropped, malformed response, timeout."""


class Response(NamedTuple):
    status: int
    headers: dict[str, str]  # lower-case names; repeated headers keep the last value
    body: bytes | bytearray  # a large body is the buffer it was received into, not a copy


_COPY_BELOW = 65536  # smaller bodies are returned as bytes; larger ones keep their preallocated buffer


_SCRATCH = 256 * 1024
STALE_AFTER = 2.0  # seconds idle after which a connection closed under us is retried here, silently


class _Conn(asyncio.BufferedProtocol):
    """One connection. The transport reads a response head into a scratch buffer and a body of
    known length straight into its final buffer (the caller's, when it gave one): no chunk
    objects, no joining, no second copy."""

    __slots__ = ("transport", "buf", "waiter", "head", "need", "body", "filled", "chunked", "closed",
                 "head_only", "keep_alive", "deadline", "scratch", "into", "view", "idle_since")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.scratch = bytearray(_SCRATCH)
        self.into: memoryview | None = None  # where the caller wants the body, if it has a place
        self.view: memoryview | None = None  # the body buffer being filled
        self.buf = bytearray()
        self.waiter: asyncio.Future[Response] | None = None
        self.closed = False
        self.deadline = 0.0
        self.idle_since = 0.0
        self._reset()

    def _reset(self) -> None:
        self.head: tuple[int, dict[str, str]] | None = None
        self.need = -1
        self.body: bytearray | memoryview | None = None
        self.view = None
        self.filled = 0
        self.chunked = False
        self.head_only = False
        self.keep_alive = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        w = self.waiter
        if w is not None and not w.done():
            if self.head is not None and self.need < 0 and not self.chunked:
                # body delimited by the end of the connection
                w.set_result(Response(self.head[0], self.head[1], bytes(self.buf)))
            else:
                w.set_exception(HttpError("connection closed before the response was complete"))

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.view is not None:
            return self.view[self.filled:self.need]  # never past this body: the next bytes are not ours
        return memoryview(self.scratch)

    def buffer_updated(self, nbytes: int) -> None:
        if self.view is not None:
            self.filled += nbytes
            if self.filled == self.need:
                self._body_done()
            return
        self.data_received(self.scratch[:nbytes])

    def _body_done(self) -> None:
        body = self.body
        self.view = None
        if isinstance(body, bytearray) and self.need < _COPY_BELOW:
            body = bytes(body)
        self._finish(body)  # type: ignore[arg-type]

    def data_received(self, data: bytes | bytearray) -> None:
        self.buf += data
        try:
            self._parse()
        except HttpError as exc:
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_exception(exc)
            self.closed = True
            if self.transport is not None:
                self.transport.close()

    def _parse(self) -> None:
        buf = self.buf
        if self.head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > 65536:
                    raise HttpError("response head too large")
                return
            lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
            del buf[:end + 4]
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
                raise HttpError(f"malformed status line {lines[0][:80]!r}")
            headers = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            status = int(parts[1])
            self.head = (status, headers)
            self.keep_alive = headers.get("connection", "").lower() != "close" and parts[0] != "HTTP/1.0"
            if self.head_only or status in (204, 304) or 100 <= status < 200:
                self._finish(b"")
                return
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self.chunked = True
                self.body = bytearray()
            elif "content-length" in headers:
                try:
                    self.need = int(headers["content-length"])
                except ValueError:
                    raise HttpError("malformed Content-Length") from None
                if self.need < 0:
                    raise HttpError("malformed Content-Length")
                n = min(len(buf), self.need)
                into = self.into
                if n == self.need and (into is None or n < _COPY_BELOW):
                    body = bytes(buf[:n])
                    del buf[:n]
                    self._finish(body)
                    return
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
                return
            else:
                self.keep_alive = False  # body runs to the end of the connection
                return
        if self.chunked:
            self._parse_chunks()

    def _parse_chunks(self) -> None:
        buf = self.buf
        assert self.body is not None
        while True:
            end = buf.find(b"\r\n")
            if end < 0:
                return
            size_text = bytes(buf[:end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise HttpError("malformed chunk size") from None
            if size == 0:
                trailer_end = buf.find(b"\r\n\r\n", end)
                if trailer_end < 0:
                    if buf[end:end + 4] == b"\r\n\r\n":
                        trailer_end = end
                    else:
                        return
                del buf[:trailer_end + 4]
                self._finish(bytes(self.body))
                return
            if len(buf) < end + 2 + size + 2:
                return
            self.body += buf[end + 2:end + 2 + size]
            del buf[:end + 2 + size + 2]

    def _finish(self, body: bytes | bytearray | memoryview) -> None:
        head = self.head
        assert head is not None
        w = self.waiter
        keep = self.keep_alive
        self._reset()
        self.keep_alive = keep
        if w is not None and not w.done():
            w.set_result(Response(head[0], head[1], body))


class HttpClient:
    """Keep-alive connections to one host:port, at most `max_connections` at once."""

    def __init__(self, host: str, port: int, *, max_connections: int = 64, timeout: float = 60.0,
                 connect_timeout: float = 10.0, tls: ssl.SSLContext | None = None) -> None:
        self.host, self.port = host, port
        self.tls = tls
        self.host_header = host if port == (443 if tls else 80) else f"{host}:{port}"
        if ":" in host and not host.startswith("["):
            self.host_header = f"[{host}]:{port}"
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._idle: deque[_Conn] = deque()
        self._busy: set[_Conn] = set()
        self._watchdog: asyncio.TimerHandle | None = None
        self._slots = asyncio.Semaphore(max_connections)

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, proto = await loop.create_connection(
                    _Conn, self.host, self.port, ssl=self.tls, server_hostname=self.host if self.tls else None)
        except (OSError, TimeoutError) as exc:
            raise HttpError(f"cannot connect to {self.host_header}: {exc.strerror or exc}") from exc
        return proto

    async def request(self, method: str, target: str, headers: dict[str, str] | None = None,
                      body: bytes | bytearray | memoryview | None = None,
                      into: memoryview | None = None) -> Response:
        """Send one request and return the whole response. A body is sent with its Content-Length;
        small ones go out in the same write as the head. With `into`, a response body that fits is
        received straight into it and returned as a memoryview of it."""
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items()) if headers else ""
        if body is not None:
            extra += f"Content-Length: {len(body)}\r\n"
        raw = f"{method} {target} HTTP/1.1\r\nHost: {self.host_header}\r\n{extra}\r\n".encode("utf-8")
        if body is not None and len(body) < _COPY_BELOW:
            raw += body
            body = None
        async with self._slots:
            for attempt in (0, 1):
                conn = None
                loop = asyncio.get_running_loop()
                while self._idle:
                    c = self._idle.pop()
                    if not c.closed:
                        conn = c
                        break
                # only a connection that sat idle a while may have been closed by the server meanwhile
                reused = conn is not None and loop.time() - conn.idle_since > STALE_AFTER
                if conn is None:
                    conn = await self._connect()
                loop = asyncio.get_running_loop()
                fut: asyncio.Future[Response] = loop.create_future()
                conn.waiter = fut
                conn.into = into
                conn.head_only = method == "HEAD"
                assert conn.transport is not None
                conn.transport.write(raw)
                if body is not None:
                    conn.transport.write(body)
                conn.deadline = loop.time() + self.timeout
                self._busy.add(conn)
                self._ensure_watchdog(loop)
                try:
                    resp = await fut
                except HttpError:
                    conn.transport.close()
                    if reused and attempt == 0 and conn.closed and not conn.buf and conn.head is None:
                        continue  # a connection the server closed while it sat idle: try a fresh one
                    # anything else (a reset on a busy connection) is the caller's to retry, and count
                    raise
                except BaseException:
                    conn.transport.close()
                    raise
                finally:
                    conn.waiter = None
                    conn.into = None
                    self._busy.discard(conn)
                if conn.keep_alive and not conn.closed and not conn.buf:
                    conn.idle_since = loop.time()
                    self._idle.append(conn)
                else:
                    conn.transport.close()
                return resp
        raise AssertionError("unreachable")

    def _ensure_watchdog(self, loop: asyncio.AbstractEventLoop) -> None:
        """One timer per client, not one per request: fails requests past their deadline."""
        if self._watchdog is None:
            self._watchdog = loop.call_later(1.0, self._check_deadlines, loop)

    def _check_deadlines(self, loop: asyncio.AbstractEventLoop) -> None:
        self._watchdog = None
        now = loop.time()
        for conn in list(self._busy):
            w = conn.waiter
            if w is not None and not w.done() and now > conn.deadline:
                w.set_exception(HttpError(f"no response within {self.timeout:.0f} s"))
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
