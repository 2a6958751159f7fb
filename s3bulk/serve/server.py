"""`s3bulk serve`: a server for the plain list/get HTTP contract (stores/listget.py), fast enough not to be the
bottleneck of a benchmark on the machine it runs on.

    GET  /list[?next-marker=TOKEN]  {"FileNames": [...], "NextMarker": "TOKEN"} (absent on the last page)
    GET  /get/{name}                the bytes; Range: bytes=A-B, A-, -N gives 206; 404 if there is none
    HEAD /get/{name}                the headers only

Several processes share one listening socket (forked after bind), each with one event loop and
a bare asyncio protocol: the requests parsed from one read are answered with one write (headers
and small bodies together); a larger body streams (os.sendfile for files, chunks for synthetic
ones) under the transport's flow control, so a server holds about a MiB per connection whatever
the file size.
In synthetic mode N files of S bytes exist only as arithmetic: name i is "f" + 12 digits,
its content is the name repeated to S bytes, and the token is the next index.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import json
import os
import signal
import socket
import stat
import sys
from collections import deque
from typing import Callable, cast
from urllib.parse import parse_qs, unquote_to_bytes

from ..model import WorkUnit
from .reader import CLOSE, KEEP, KEEP_ALIVE, RequestReader

NAME_DIGITS = 12
SMALL_BODY = 256 * 1024    # bodies up to this go out with their headers in one write
CHUNK = 256 * 1024         # larger ones are read and sent this much at a time
WRITE_HIGH = 1024 * 1024   # transport buffer above which a read body waits for it to drain
SENDFILE_MAX = 16 * 1024 * 1024  # at most this per os.sendfile call (the socket takes less anyway)
LINGER = 5.0               # seconds a closing connection still reads (and drops) what its client sends


def synthetic_name(i: int) -> str:
    return f"f{i:0{NAME_DIGITS}d}"


def synthetic_body(name: str, size: int) -> bytes:
    """Deterministic content of a synthetic file: its name repeated, cut to size."""
    return synthetic_slice(name, 0, size)


def synthetic_slice(name: str, start: int, end: int) -> bytes:
    """Bytes [start, end) of a synthetic file, built without the rest of it."""
    return _unit_slice(name.encode() + b"\n", start, end)


def _unit_slice(unit: bytes, start: int, end: int) -> bytes:
    """Bytes [start, end) of unit repeated: a rotation of the unit, repeated, cut."""
    skip = start % len(unit)
    n = end - start
    return (unit * ((skip + n) // len(unit) + 1))[skip:skip + n]


class Source:
    """One file's bytes, read a bounded piece at a time, so that serving a file of any size holds
    at most a chunk of it (the old read(start, end) -> bytes held whole bodies, twice)."""

    size: int
    fd = -1  # an open regular file the kernel can send from (os.sendfile), or -1

    def open(self) -> None:
        """Get ready to read (GET only: HEAD never opens); may correct size; OSError means 404."""

    def pread(self, start: int, n: int) -> bytes:
        """Up to n bytes at start; fewer means the file shrank under us."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what open() took."""


class SyntheticSource(Source):
    __slots__ = ("unit", "size")

    def __init__(self, name: bytes, size: int) -> None:
        self.unit, self.size = name + b"\n", size

    def pread(self, start: int, n: int) -> bytes:
        return _unit_slice(self.unit, start, min(start + n, self.size))


class FileSource(Source):
    """A regular file: opened once per GET and read with pread, so a file renamed or unlinked
    mid-body still sends the bytes it had, and one that shrinks gives a short read."""

    __slots__ = ("path", "size", "fd")

    def __init__(self, path: str, size: int) -> None:
        self.path, self.size, self.fd = path, size, -1

    def open(self) -> None:
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise FileNotFoundError(self.path)
        except BaseException:
            os.close(fd)
            raise
        self.fd, self.size = fd, st.st_size

    def pread(self, start: int, n: int) -> bytes:
        return os.pread(self.fd, n, start)

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


class Catalog:
    """What the server serves: list a page after a token, open a name."""

    def list_page(self, token: str | None, page_size: int) -> tuple[list[str], str | None]:
        raise NotImplementedError

    def lookup(self, raw_name: bytes) -> Source | None:
        """The Source for a name, or None (404). Reads nothing."""
        raise NotImplementedError


class SyntheticCatalog(Catalog):
    def __init__(self, count: int, size: int) -> None:
        self.count, self.size = count, size

    def list_page(self, token: str | None, page_size: int) -> tuple[list[str], str | None]:
        start = 0
        if token is not None:
            if not token.isdigit():
                raise ValueError("bad token")
            start = int(token)
        end = min(self.count, start + page_size)
        names = [synthetic_name(i) for i in range(start, end)]
        return names, (str(end) if end < self.count else None)

    def lookup(self, raw_name: bytes) -> Source | None:
        if len(raw_name) != NAME_DIGITS + 1 or raw_name[:1] != b"f" or not raw_name[1:].isdigit():
            return None
        if int(raw_name[1:]) >= self.count:
            return None
        return SyntheticSource(raw_name, self.size)


class DirectoryCatalog(Catalog):
    """Files under a directory, names relative to it ("/"-separated), listed in UTF-8 byte order."""

    def __init__(self, root: str) -> None:
        from ..stores.local.store import LocalStore
        from ..config.urls import Location

        self.root = os.path.realpath(root)
        self.store = LocalStore(Location("local", self.root, "", root))

    def list_page(self, token: str | None, page_size: int) -> tuple[list[str], str | None]:
        after = None
        if token is not None:
            after = base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)).decode("utf-8")
        page = self.store._list_sync("", WorkUnit(after=after), page_size)
        # directories are walked without following links; a linked file is served only if it stays inside
        names = [e.key for e in page.entries if not os.path.islink(os.path.join(self.root, e.key))
                 or self.lookup(e.key.encode("utf-8")) is not None]
        nxt = None
        if page.next_after is not None:
            nxt = base64.urlsafe_b64encode(page.next_after.encode("utf-8")).decode().rstrip("=")
        return names, nxt

    def lookup(self, raw_name: bytes) -> Source | None:
        try:
            name = raw_name.decode("utf-8")
        except UnicodeDecodeError:
            return None
        segments = name.split("/")
        if not name or "\x00" in name or any(s in ("", ".", "..") for s in segments):
            return None
        path = os.path.join(self.root, *segments)
        real = os.path.realpath(path)
        if not real.startswith(self.root + os.sep):
            return None
        try:
            st = os.stat(real)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return FileSource(real, st.st_size)


_HAS_SENDFILE = hasattr(os, "sendfile")
_NO_SENDFILE = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSOCK}

_REASONS = {200: "OK", 206: "Partial Content", 400: "Bad Request", 404: "Not Found",
            405: "Method Not Allowed", 414: "URI Too Long", 416: "Range Not Satisfiable",
            431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented",
            505: "HTTP Version Not Supported"}
_STATUS_LINES = {code: b"HTTP/1.1 %d %s\r\n" % (code, reason.encode()) for code, reason in _REASONS.items()}
_CONN_LINES = (b"", b"Connection: close\r\n", b"Connection: keep-alive\r\n")  # by KEEP, CLOSE, KEEP_ALIVE
_ALLOW = b"Allow: GET, HEAD\r\n"


def _parse_range(value: str, size: int) -> tuple[int, int] | None | str:
    """(start, end exclusive), None if absent/ignorable, "unsatisfiable" if so."""
    if not value.startswith("bytes=") or "," in value:
        return None
    first, _, last = value[6:].strip().partition("-")
    try:
        if first == "":
            n = int(last)
            if n <= 0:
                return "unsatisfiable"
            return max(0, size - n), size
        start = int(first)
        end = int(last) + 1 if last else size
    except ValueError:
        return None
    if start >= size or end <= start:
        return "unsatisfiable"
    return start, min(end, size)


class _Handler(asyncio.Protocol):
    """One connection. Requests are read by RequestReader (llhttp) and answered in order; every
    request completed by a read is answered in one write, until one whose body is larger than
    SMALL_BODY. That body then streams: reading stops and the requests already read wait in a
    queue until it is done. A file's body goes out with os.sendfile whenever the transport has
    nothing queued (no copy through Python: 0.2 CPU s per GiB against 0.55 for pread + write); when
    the socket is full a 64 KiB piece is queued instead, with the buffer limit at 0 so that
    resume_writing says when it drained. A generated body goes out CHUNK by CHUNK under
    pause_writing/resume_writing. Either way a connection holds at most about WRITE_HIGH + CHUNK,
    whatever the size of the file.

    The server closes a connection after an answer that says so (Connection: close, HTTP/1.0, a
    refusal) by shutting its side first and reading what the client still sends for up to LINGER
    seconds: closing with unread bytes makes the kernel send a reset, which may destroy the answer
    before the client reads it (a 431 for a head still arriving, say)."""

    def __init__(self, catalog: Catalog, page_size: int) -> None:
        self.catalog = catalog
        self.page_size = page_size
        self.reader = RequestReader(self._request, self._refused)
        self.queue: deque[tuple[Callable[..., bytes], tuple]] = deque()  # read, not yet answered
        self.out: list[bytes] = []  # the answers of the read being handled, written together
        self.transport: asyncio.Transport | None = None
        self.src: Source | None = None  # the body being streamed, bytes [pos, end) still to send
        self.pos = self.end = 0
        self.paused = False  # the transport's buffer is above its limit (pause_writing)
        self.reading = True  # the transport reads (paused while a body streams)
        self.sock_fd = -1  # the socket, while a body goes out with os.sendfile
        self.linger: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream server's connection: a Transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._drop_stream()
        self.reader.stop()
        self.queue.clear()
        if self.linger is not None:
            self.linger.cancel()

    def _drop_stream(self) -> None:
        self.sock_fd = -1
        if self.src is not None:
            self.src.close()
            self.src = None

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self.src is not None and self._pump():
            self._serve_queue()

    def eof_received(self) -> bool | None:
        if self.src is not None or self.queue:  # the client is done sending: answer what it sent, then close
            self._eof = True
            return True
        return None  # the transport closes (after writing what it holds)

    def data_received(self, data: bytes) -> None:
        out = self.out = []
        try:
            self.reader.feed(data)
        except Exception as exc:  # a bug of ours, not the client's: one line, and this connection only
            print(f"s3bulk serve: internal error reading a request: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
            assert self.transport is not None
            self.transport.abort()
            return
        if out:
            assert self.transport is not None
            self.transport.write(b"".join(out) if len(out) > 1 else out[0])
        if self.src is not None or self.queue or self._close_after:
            self._serve_queue()

    def _request(self, method: bytes, target: bytes, rng: bytes | None, conn: int) -> None:
        """From the reader: answer now if nothing is ahead of this request, else queue it."""
        if self.src is None and not self.queue and not self._close_after:
            self.out.append(self._answer(method, target, rng, conn))
        else:
            self.queue.append((self._answer, (method, target, rng, conn)))

    def _refused(self, status: int, message: bytes) -> None:
        """From the reader: a request it will not read, answered in its turn, then the close."""
        if self.src is None and not self.queue and not self._close_after:
            self.out.append(self._response(status, message, conn=CLOSE))
        else:
            self.queue.append((self._response, (status, message, b"text/plain", b"", False, CLOSE)))

    def _serve_queue(self) -> None:
        """Stream the current body, then answer what is queued behind it, until the queue is empty
        (reading resumes), a body must wait for the socket (resume_writing comes back here) or an
        answer closes the connection."""
        transport = self.transport
        assert transport is not None
        while True:
            if self.src is not None:
                if self.reading:
                    self.reading = False
                    transport.pause_reading()
                if not self._pump():
                    return  # resume_writing carries on, or the connection is done
            if self._close_after:
                self._shut()
                return
            if not self.queue:
                break
            out = []
            while self.queue and self.src is None and not self._close_after:
                answer, args = self.queue.popleft()
                out.append(answer(*args))
            transport.write(b"".join(out) if len(out) > 1 else out[0])
        if self._eof:
            transport.close()
        elif not self.reading:
            self.reading = True
            transport.resume_reading()

    def _shut(self) -> None:
        """Close after the last answer: FIN after what was written, then drop what the client
        still sends until it closes too, or LINGER seconds pass."""
        transport = self.transport
        assert transport is not None
        if self.linger is not None:
            return  # already shut: this is a read drained meanwhile
        self.reader.stop()
        self.queue.clear()
        if self._eof or transport.is_closing() or not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        if not self.reading:
            self.reading = True
            transport.resume_reading()
        self.linger = asyncio.get_running_loop().call_later(LINGER, transport.close)

    def _pump(self) -> bool:
        """Send the streamed body until the transport asks for a pause (False) or the body is done
        (True when the connection goes on). A file that shrank or went away aborts the connection:
        the client sees a short body, never a hang."""
        src, transport = self.src, self.transport
        assert src is not None and transport is not None
        while not self.paused:
            if transport.is_closing():
                self._drop_stream()
                return False
            n = self.end - self.pos
            if n <= 0:
                self._drop_stream()
                return True
            if self.sock_fd >= 0 and transport.get_write_buffer_size() == 0:
                # nothing queued in the transport, so the kernel may send straight from the file
                try:
                    sent = os.sendfile(self.sock_fd, src.fd, self.pos, n if n < SENDFILE_MAX else SENDFILE_MAX)
                except BlockingIOError:
                    sent = -1
                except OSError as exc:
                    if exc.errno not in _NO_SENDFILE:
                        sent = 0
                    else:  # this file system cannot: read and write it instead
                        self.sock_fd = sent = -1
                        transport.set_write_buffer_limits(high=WRITE_HIGH)
                if sent == 0:  # the file shrank, or the client is gone
                    self._drop_stream()
                    transport.abort()
                    return False
                if sent > 0:
                    self.pos += sent
                    continue
                if self.sock_fd >= 0:
                    # the socket is full: queue a small piece in the transport, whose buffer limit
                    # is 0 while sendfile is used, so resume_writing comes when it has drained
                    n = min(n, 65536)
            if n > CHUNK:
                n = CHUNK
            try:
                chunk = src.pread(self.pos, n)
            except OSError:
                chunk = b""
            if len(chunk) != n:
                self._drop_stream()
                transport.abort()
                return False
            self.pos += n
            transport.write(chunk)
        return False

    _close_after = False  # an answer said Connection: close
    _eof = False  # the client half-closed while answers were still due

    def _response(self, status: int, body: bytes, ctype: bytes = b"text/plain", extra: bytes = b"",
                  head_only: bool = False, conn: int = KEEP) -> bytes:
        head = self._head(status, len(body), ctype, extra, conn)
        return head if head_only else head + body

    def _head(self, status: int, length: int, ctype: bytes = b"text/plain", extra: bytes = b"",
              conn: int = KEEP) -> bytes:
        if conn == CLOSE:
            self._close_after = True
        return (b"%sContent-Length: %d\r\nContent-Type: %s\r\n%s%s\r\n"
                % (_STATUS_LINES[status], length, ctype, extra, _CONN_LINES[conn]))

    def _answer(self, method: bytes, target: bytes, rng: bytes | None, conn: int) -> bytes:
        try:
            if target.startswith(b"/get/"):
                if method != b"GET" and method != b"HEAD":
                    return self._response(405, b"", extra=_ALLOW, conn=conn)
                return self._get(target[5:], method == b"HEAD", rng, conn)
            path, _, query = target.partition(b"?")
            if path == b"/list":
                if method != b"GET" and method != b"HEAD":
                    return self._response(405, b"", extra=_ALLOW, conn=conn)
                return self._list(query, method == b"HEAD", conn)
            return self._response(404, b"not found\n", head_only=method == b"HEAD", conn=conn)
        except Exception as exc:  # never let one request take the server down
            return self._response(500, f"{type(exc).__name__}\n".encode(), conn=CLOSE)

    def _list(self, query: bytes, head_only: bool, conn: int) -> bytes:
        qs = parse_qs(query.decode("latin-1"))
        token = qs.get("next-marker", [None])[0]
        try:
            names, nxt = self.catalog.list_page(token, self.page_size)
        except ValueError:
            return self._response(400, b"bad next-marker\n", head_only=head_only, conn=conn)
        doc: dict = {"FileNames": names}
        if nxt is not None:
            doc["NextMarker"] = nxt
        return self._response(200, json.dumps(doc, ensure_ascii=False).encode(), ctype=b"application/json",
                              head_only=head_only, conn=conn)

    def _get(self, raw: bytes, head_only: bool, range_value: bytes | None, conn: int) -> bytes:
        """The head, with the body if it is small; a larger body is left in self.src for _pump.
        HEAD neither opens nor reads the file."""
        raw = raw.partition(b"?")[0]
        if b"%" in raw:
            low = raw.lower()
            if b"%2f" in low or b"%5c" in low or b"%00" in raw:
                return self._response(404, b"not found\n", head_only=head_only, conn=conn)
            raw = unquote_to_bytes(raw)
        src = self.catalog.lookup(raw)
        if src is not None and not head_only:
            try:
                src.open()
            except OSError:  # gone (or no longer a file) since lookup
                src = None
        if src is None:
            return self._response(404, b"not found\n", head_only=head_only, conn=conn)
        streaming = False
        try:
            size = src.size
            rng = _parse_range(range_value.decode("latin-1"), size) if range_value is not None else None
            if rng == "unsatisfiable":
                return self._response(416, b"", extra=b"Content-Range: bytes */%d\r\n" % size,
                                      head_only=head_only, conn=conn)
            if rng is None:
                status, start, end, extra = 200, 0, size, b"Accept-Ranges: bytes\r\n"
            else:
                assert not isinstance(rng, str)  # "unsatisfiable" was answered above
                start, end = rng
                status, extra = 206, b"Content-Range: bytes %d-%d/%d\r\n" % (start, end - 1, size)
            n = end - start
            if not head_only and n <= SMALL_BODY:
                body = src.pread(start, n) if n else b""
                if len(body) != n:
                    return self._response(500, b"file changed while read\n", conn=CLOSE)
            head = self._head(status, n, ctype=b"application/octet-stream", extra=extra, conn=conn)
            if head_only:
                return head
            if n <= SMALL_BODY:
                return head + body
            self.src, self.pos, self.end = src, start, end
            streaming = True
            assert self.transport is not None
            sock = self.transport.get_extra_info("socket") if src.fd >= 0 and _HAS_SENDFILE else None
            if sock is not None:
                self.sock_fd = sock.fileno()
                self.transport.set_write_buffer_limits(high=0, low=0)
            else:
                self.transport.set_write_buffer_limits(high=WRITE_HIGH)
            return head
        finally:
            if not streaming:
                src.close()


def _serve_forever(sock: socket.socket, catalog: Catalog, page_size: int, parent: int | None = None) -> None:
    loop: asyncio.AbstractEventLoop
    try:
        import uvloop

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    server = loop.run_until_complete(
        loop.create_server(lambda: _Handler(catalog, page_size), sock=sock, backlog=1024))
    loop.add_signal_handler(signal.SIGTERM, loop.stop)
    loop.add_signal_handler(signal.SIGINT, loop.stop)
    if parent is not None:
        def watch() -> None:  # a server whose parent is gone stops too
            if os.getppid() != parent:
                loop.stop()
            else:
                loop.call_later(1.0, watch)
        loop.call_later(1.0, watch)
    try:
        loop.run_forever()
    finally:
        server.close()


def serve(catalog: Catalog, *, host: str = "127.0.0.1", port: int = 8000, processes: int = 0,
          page_size: int = 1000, announce: Callable[[str], None] | None = None) -> None:
    """Bind, fork `processes` servers on the one socket, and wait until told to stop."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    bound = sock.getsockname()[1]
    processes = processes or (os.cpu_count() or 1)
    url = f"http://{host if family == socket.AF_INET else '[' + host + ']'}:{bound}/"
    if announce:
        announce(url)
    if processes == 1:
        _serve_forever(sock, catalog, page_size)
        return
    children = []
    me = os.getpid()
    for _ in range(processes):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _serve_forever(sock, catalog, page_size, me)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        children.append(pid)
    sock.close()

    def stop(signum: int, frame: object) -> None:
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for pid in children:
        while True:
            try:
                os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                break


def main_announce(url: str) -> None:
    print(f"serving on {url}", file=sys.stderr, flush=True)
