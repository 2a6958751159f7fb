"""`s3bulk serve`: a server for the plain list/get contract of seed 000, fast enough not to be the
bottleneck of a benchmark on the machine it runs on.

    GET  /list[?next-marker=TOKEN]  {"FileNames": [...], "NextMarker": "TOKEN"} (absent on the last page)
    GET  /get/{name}                the bytes; Range: bytes=A-B, A-, -N gives 206; 404 if there is none
    HEAD /get/{name}                the headers only

Several processes share one listening socket (forked after bind), each with one event loop and
a bare asyncio protocol: one request is parsed from the buffer and answered with one write.
In synthetic mode N files of S bytes exist only as arithmetic: name i is "f" + 12 digits,
its content is the name repeated to S bytes, and the token is the next index.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import stat
import sys
from typing import Callable
from urllib.parse import parse_qs, unquote_to_bytes

from .model import WorkUnit

NAME_DIGITS = 12


def synthetic_name(i: int) -> str:
    return f"f{i:0{NAME_DIGITS}d}"


def synthetic_body(name: str, size: int) -> bytes:
    """Deterministic content of a synthetic file: its name repeated, cut to size."""
    unit = name.encode() + b"\n"
    return (unit * (size // len(unit) + 1))[:size]


class Catalog:
    """What the server serves: list a page after a token, open a name."""

    def list_page(self, token: str | None, page_size: int) -> tuple[list[str], str | None]:
        raise NotImplementedError

    def lookup(self, raw_name: bytes) -> tuple[int, Callable[[int, int], bytes]] | None:
        """(size, read(start, end)) for a name, or None (404)."""
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

    def lookup(self, raw_name: bytes) -> tuple[int, Callable[[int, int], bytes]] | None:
        if len(raw_name) != NAME_DIGITS + 1 or raw_name[:1] != b"f" or not raw_name[1:].isdigit():
            return None
        if int(raw_name[1:]) >= self.count:
            return None
        name = raw_name.decode()
        size = self.size
        return size, lambda start, end: synthetic_body(name, size)[start:end]


class DirectoryCatalog(Catalog):
    """Files under a directory, names relative to it ("/"-separated), listed in UTF-8 byte order."""

    def __init__(self, root: str) -> None:
        from .stores.local import LocalStore
        from .urls import Location

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

    def lookup(self, raw_name: bytes) -> tuple[int, Callable[[int, int], bytes]] | None:
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

        def read(start: int, end: int) -> bytes:
            with open(real, "rb") as f:
                f.seek(start)
                return f.read(end - start)

        return st.st_size, read


_REASONS = {200: "OK", 206: "Partial Content", 400: "Bad Request", 404: "Not Found",
            405: "Method Not Allowed", 416: "Range Not Satisfiable", 500: "Internal Server Error"}


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
    def __init__(self, catalog: Catalog, page_size: int) -> None:
        self.catalog = catalog
        self.page_size = page_size
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        out = []
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            head, buf = buf[:end], buf[end + 4:]
            out.append(self._answer(head))
        self.buf = buf
        if len(buf) > 65536:
            out.append(self._response(400, b"request head too large\n", close=True))
        if out:
            assert self.transport is not None
            self.transport.write(b"".join(out) if len(out) > 1 else out[0])
            if self._close_after:
                self.transport.close()

    _close_after = False

    def _response(self, status: int, body: bytes, *, ctype: bytes = b"text/plain", extra: bytes = b"",
                  head_only: bool = False, close: bool = False) -> bytes:
        if close:
            self._close_after = True
        head = (b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\nContent-Type: %s\r\n%s%s\r\n"
                % (status, _REASONS.get(status, "OK").encode(), len(body), ctype, extra,
                   b"Connection: close\r\n" if close else b""))
        return head if head_only else head + body

    def _answer(self, head: bytes) -> bytes:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3:
            return self._response(400, b"bad request line\n", close=True)
        method, target = parts[0], parts[1]
        headers = {}
        for line in lines[1:]:
            k, sep, v = line.partition(b":")
            if sep:
                headers[k.strip().lower()] = v.strip()
        close = headers.get(b"connection", b"").lower() == b"close"
        try:
            if target.startswith(b"/get/"):
                if method not in (b"GET", b"HEAD"):
                    return self._response(405, b"", close=close)
                return self._get(target[5:], method == b"HEAD", headers, close)
            path, _, query = target.partition(b"?")
            if path == b"/list":
                if method != b"GET":
                    return self._response(405, b"", close=close)
                return self._list(query, close)
            return self._response(404, b"not found\n", close=close)
        except Exception as exc:  # never let one request take the server down
            return self._response(500, f"{type(exc).__name__}\n".encode(), close=True)

    def _list(self, query: bytes, close: bool) -> bytes:
        qs = parse_qs(query.decode("latin-1"))
        token = qs.get("next-marker", [None])[0]
        try:
            names, nxt = self.catalog.list_page(token, self.page_size)
        except ValueError:
            return self._response(400, b"bad next-marker\n", close=close)
        doc: dict = {"FileNames": names}
        if nxt is not None:
            doc["NextMarker"] = nxt
        return self._response(200, json.dumps(doc, ensure_ascii=False).encode(), ctype=b"application/json",
                              close=close)

    def _get(self, raw: bytes, head_only: bool, headers: dict[bytes, bytes], close: bool) -> bytes:
        raw = raw.partition(b"?")[0]
        if b"%2f" in raw.lower() or b"%5c" in raw.lower() or b"%00" in raw:
            return self._response(404, b"not found\n", head_only=head_only, close=close)
        found = self.catalog.lookup(unquote_to_bytes(raw))
        if found is None:
            return self._response(404, b"not found\n", head_only=head_only, close=close)
        size, read = found
        rng = _parse_range(headers[b"range"].decode("latin-1"), size) if b"range" in headers else None
        if rng == "unsatisfiable":
            return self._response(416, b"", extra=b"Content-Range: bytes */%d\r\n" % size, head_only=head_only,
                                  close=close)
        if rng is None:
            body = b"" if head_only else read(0, size)
            if head_only:
                return (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: application/octet-stream\r\n"
                        b"Accept-Ranges: bytes\r\n%s\r\n" % (size, b"Connection: close\r\n" if close else b""))
            return self._response(200, body, ctype=b"application/octet-stream", extra=b"Accept-Ranges: bytes\r\n",
                                  close=close)
        start, end = rng  # type: ignore[misc]
        body = read(start, end) if not head_only else b" " * (end - start)
        return self._response(206, body, ctype=b"application/octet-stream",
                              extra=b"Content-Range: bytes %d-%d/%d\r\n" % (start, end - 1, size),
                              head_only=head_only, close=close)


def _serve_forever(sock: socket.socket, catalog: Catalog, page_size: int, parent: int | None = None) -> None:
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
