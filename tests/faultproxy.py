"""A small HTTP proxy that sits in front of a real server (LocalStack, `s3bulk serve`) and injects faults.

Every request is forwarded to the upstream unchanged (same head, same body, same Host header, so
signatures still hold) unless a rule or a fault rate says otherwise. Client connections are kept
alive: one client connection carries as many requests as the client sends on it, each forwarded
in turn over one kept-alive upstream connection of its own.

Rules (the first API, still used as before)
    `rule(method, target, headers) -> bytes | None`, tried in order before any rate; the first that
    returns bytes has those bytes sent back as the whole response instead (b"": the connection is
    dropped without an answer). A canned answer that says `Connection: close` (as `s3_error` and
    the tests' own canned answers do) ends the connection after it.

        FaultProxy(host, port, [reject_access_key("AKIA...")])

Edits (answers forwarded with their body changed)
    `edit(method, target, headers, body) -> bytes | None`, in `proxy.edits`, tried in order on
    every answer forwarded from the upstream; the first that returns bytes has them sent as the
    body instead (of another length: Content-Length is rewritten, on an answer that has one; a
    chunked body is handed to the edit raw, framing and all). `flip_byte(...)` is one: it
    damages GETs of one object's byte range, as a bad disk or a broken middlebox would.

        proxy.edits.append(flip_byte("/bucket/key", start=5 * MiB, times=1))

Hostile handlers (tests/test_hostile_suite.py: whole answers made or bent by hand)
    `proxy.hostile = handler`, an async `handler(req, forward, writer) -> bool | None`, called for
    every request after the rules (its body already read: `req.body`). It may answer however it
    likes through `writer` (a head dribbled byte by byte, a body cut short, bytes after the body,
    a reset) and return whether the client connection stays open; or return None to have the
    request forwarded as usual. `await forward(headers={...})` sends the request upstream (with
    some headers replaced) and returns its `Answer` (status line, header lines, headers, body),
    which `answer.raw(keep=...)` turns back into bytes. Counted as "hostile".

Rates
    `FaultProxy(host, port, rates=Faults(...))`; per request one seeded draw decides (rates add up to
    at most 1):

        slowdown     answer 503 SlowDown (S3 XML error)
        error500     answer 500 InternalError (S3 XML error)
        reset        reset the connection: RST (SO_LINGER 0), no answer
        drop         close the connection without an answer (FIN)
        stall        wait `stall_seconds`, then forward as usual (make it well beyond the client's
                     timeout to test timeouts; the proxy still forwards afterwards, as a slow server
                     would, so a stalled PUT may land after the client gave up)
        short_body   forward, then send the upstream's answer with only half of its body (fewer bytes
                     than its Content-Length) and close; an answer with no body (HEAD, 204, empty) is
                     cut inside its head instead

    Restrict the rates with `methods=("GET",)` and/or `only=lambda method, target: ...` (e.g.
    `only=object_gets`: GETs of objects, not listings). Errors, resets and drops happen before the
    request reaches the upstream; stalls and short bodies after (the upstream saw the request).

    Load-dependent SlowDown (adaptive concurrency): with `busy_above=K`, a request arriving while n
    requests are in flight through the proxy (itself included) is answered 503 SlowDown with
    probability `min(busy_max, busy_slope * (n - K))` (0 up to K concurrent). Counted as
    "busy_slowdown", separately from the flat `slowdown` rate.

        proxy = FaultProxy(host, port, rates=Faults(slowdown=0.1, error500=0.1, reset=0.1,
                                                    short_body=0.1, seed=1, only=object_gets))
        with proxy:                      # or proxy.start() ... proxy.stop()
            run s3bulk with --endpoint-url proxy.url
        assert proxy.counts["slowdown"] > 0 and proxy.counts["forwarded"] >= 5000

    `proxy.rates = Faults(...)` may be changed at any time (it reseeds); `proxy.reset_counts()`.

Dribbled heads
    `proxy.dribble = Dribble(every=0.5, times=1, only=...)`: the head of each of the first `times`
    answers forwarded for requests `only` accepts (None: any) is sent one byte every `every`
    seconds, then its body at once: a server whose head trickles in (counted as "dribble").

Counts (`proxy.counts`, a Counter; read it from the test thread at any time)
    connections   client connections accepted
    requests      requests received (also `proxy.requests`, as before)
    forwarded     requests forwarded to the upstream (including stalled and short-bodied ones)
    rule          answers from a rule
    edited        answers forwarded with a body an edit changed
    slowdown, error500, reset, drop, stall, short_body, busy_slowdown   faults done, per kind
    `proxy.in_flight` and `proxy.max_in_flight`: requests inside the proxy now / at the peak.

Gates (a hostile handler that holds one request, or its answer, until the test lets it go)
    `proxy.hostile = Gate(match, holds=1, answered=False)`: the first `holds` requests `match`
    accepts are held one at a time (every other request passes at once); `gate.wait_held(proc)`
    returns an Event to set when the test has done what must come first (an overwrite before the
    held request reaches the server; with `answered=True` the request has reached it and only its
    answer waits: an upload made at the server that the client has not heard of yet). No slow link
    makes the window, so no test races a clock. `gate.open()` lets everything go (at teardown).

Pytest: the `fault_proxy` fixture (conftest) is a FaultProxy in front of the test LocalStack;
`make_fault_proxy(url_or_(host, port), rates=..., rules=...)` fronts anything else (e.g. the URL of
an `s3bulk serve`, see the `listget_server` fixture); both are stopped at teardown.
"""

from __future__ import annotations

import asyncio
import queue
import random
import socket
import struct
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable
from urllib.parse import urlsplit

Rule = Callable[[str, str, dict[str, str]], bytes | None]


@dataclass
class Request:
    """One request as the client sent it (a hostile handler's view)."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Answer:
    """The upstream's answer to one forwarded request."""

    status_line: str
    lines: list[str]
    headers: dict[str, str]
    body: bytes

    @property
    def status(self) -> int:
        return int(self.status_line.split(" ", 2)[1])

    def head(self, keep: bool = True) -> bytes:
        return _with_connection(self.status_line, self.lines, "keep-alive" if keep else "close")

    def raw(self, keep: bool = True) -> bytes:
        return self.head(keep) + self.body

Edit = Callable[[str, str, dict[str, str], bytes], bytes | None]


class Gate:
    """A hostile handler that holds the first `holds` requests `match` accepts, one at a time,
    until the test sets the Event `wait_held` returned (see the module docstring)."""

    def __init__(self, match: Callable[[Request], bool], holds: int = 1, answered: bool = False,
                 deadline: float = 300) -> None:
        self.match = match
        self.answered = answered
        self.deadline = deadline
        self._holds_left = holds
        self._held: queue.Queue[threading.Event] = queue.Queue()
        self._made: list[threading.Event] = []

    async def __call__(self, req: Request, forward: Callable[..., Awaitable[Answer]],
                       writer: asyncio.StreamWriter) -> bool | None:
        if self._holds_left <= 0 or not self.match(req):
            return None  # forwarded as usual
        self._holds_left -= 1
        answer = await forward() if self.answered else None
        go = threading.Event()
        self._made.append(go)
        self._held.put(go)
        while not go.is_set():  # the proxy's other connections go on meanwhile
            await asyncio.sleep(0.01)
        if answer is None:
            answer = await forward()
        keep = answer.headers.get("connection", "").lower() != "close"
        writer.write(answer.raw(keep))
        await writer.drain()
        return keep

    def wait_held(self, proc: subprocess.Popen) -> threading.Event:
        """Until a request is held: the Event that lets it go. AssertionError if `proc` (the
        client) ends first or nothing is held before the deadline."""
        deadline = time.monotonic() + self.deadline
        while time.monotonic() < deadline:
            try:
                return self._held.get(timeout=0.2)
            except queue.Empty:
                if proc.poll() is not None:
                    raise AssertionError(f"the client ended (exit {proc.returncode}) before the awaited request")
        raise AssertionError("no awaited request before the deadline")

    def open(self) -> None:
        """Hold nothing more and let everything held go."""
        self._holds_left = 0
        for go in self._made:
            go.set()
Only = Callable[[str, str], bool]

KINDS = ("slowdown", "error500", "reset", "drop", "stall", "short_body")


def s3_error(status: int, reason: str, code: str, message: str, *, keep_alive: bool = False,
             head_only: bool = False) -> bytes:
    """A whole S3-style XML error answer (without its body for a HEAD request, as S3 does)."""
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message><RequestId>faultproxy</RequestId></Error>").encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\n"
            f"Content-Length: {len(body)}\r\nx-amz-request-id: faultproxy\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n").encode()
    return head if head_only else head + body


def reject_access_key(access_key: str) -> Rule:
    """Answer 403 InvalidAccessKeyId to requests signed with `access_key`, as AWS does."""
    def rule(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if f"Credential={access_key}/" in headers.get("authorization", ""):
            return s3_error(403, "Forbidden", "InvalidAccessKeyId",
                            "The AWS Access Key Id you provided does not exist in our records.")
        return None
    return rule


def flip_byte(path: str, *, start: int | None = None, times: int = 1) -> Edit:
    """An edit: the first `times` GETs of `path` (the object's address, asked without a query) whose Range starts
    at byte `start` (None: any GET of it, ranged or not) arrive with their middle byte flipped.
    `.done` counts the answers damaged so far."""
    def edit(method: str, target: str, headers: dict[str, str], body: bytes) -> bytes | None:
        if method != "GET" or target != path or edit.done >= times or not body:  # type: ignore[attr-defined]
            return None
        if start is not None and not headers.get("range", "").startswith(f"bytes={start}-"):
            return None
        edit.done += 1  # type: ignore[attr-defined]
        bad = bytearray(body)
        bad[len(bad) // 2] ^= 0x01
        return bytes(bad)

    edit.done = 0  # type: ignore[attr-defined]
    return edit


def is_object_request(target: str) -> bool:
    """A path-style request for one object (/bucket/key...), not a bucket-level one (listing)."""
    path = target.split("?", 1)[0]
    bucket, _, key = path.lstrip("/").partition("/")
    return bool(bucket and key)


def object_gets(method: str, target: str) -> bool:
    """`only=` predicate: GETs of S3 objects (path style) or of list/get files, not listings."""
    return method == "GET" and (target.startswith("/get/") or (is_object_request(target)
                                                               and not target.startswith("/list")))


@dataclass
class Dribble:
    """Heads sent a byte at a time (see the module docstring); `done` counts the answers dribbled."""

    every: float = 1.0
    times: int = 1
    only: Only | None = None
    done: int = 0

    def takes(self, method: str, target: str) -> bool:
        if self.done >= self.times or (self.only is not None and not self.only(method, target)):
            return False
        self.done += 1
        return True


@dataclass
class Faults:
    """Fault rates per request (0..1, adding up to at most 1); see the module docstring."""

    slowdown: float = 0.0
    error500: float = 0.0
    reset: float = 0.0
    drop: float = 0.0
    stall: float = 0.0
    short_body: float = 0.0
    stall_seconds: float = 5.0
    seed: int | None = 0
    methods: Iterable[str] | None = None
    only: Only | None = None
    busy_above: int | None = None
    busy_slope: float = 0.1
    busy_max: float = 1.0

    def __post_init__(self) -> None:
        rates = [getattr(self, k) for k in KINDS]
        if any(r < 0 or r > 1 for r in rates) or sum(rates) > 1 + 1e-9:
            raise ValueError(f"fault rates must be in 0..1 and add up to at most 1: {dict(zip(KINDS, rates))}")
        if self.methods is not None:
            self.methods = frozenset(m.upper() for m in self.methods)

    def applies(self, method: str, target: str) -> bool:
        if self.methods is not None and method not in self.methods:
            return False
        return self.only is None or bool(self.only(method, target))

    def busy_probability(self, in_flight: int) -> float:
        if self.busy_above is None or in_flight <= self.busy_above:
            return 0.0
        return min(self.busy_max, self.busy_slope * (in_flight - self.busy_above))


class _Upstream:
    """One kept-alive connection to the upstream, owned by one client connection."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.used = False

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(*self.address, limit=1 << 20)
        self.used = False

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def _parse_head(head: bytes) -> tuple[str, list[str], dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    return lines[0], [x for x in lines[1:] if x], headers


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    """A chunked body, returned raw (chunk sizes, data and trailers) to be relayed as it came."""
    out = bytearray()
    while True:
        line = await reader.readuntil(b"\r\n")
        out += line
        size = int(line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while True:  # trailers, up to the empty line
                line = await reader.readuntil(b"\r\n")
                out += line
                if line == b"\r\n":
                    return bytes(out)
        out += await reader.readexactly(size + 2)


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await _read_chunked(reader)
    return await reader.readexactly(int(headers.get("content-length", "0") or 0))


def _with_connection(first: str, lines: list[str], value: str, drop: tuple[str, ...] = ()) -> bytes:
    kept = [x for x in lines if not x.lower().startswith(("connection:", "keep-alive:", "proxy-connection:") + drop)]
    return "\r\n".join([first, *kept, f"Connection: {value}", "", ""]).encode("latin-1")


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int, rules: list[Rule] | None = None, *,
                 rates: Faults | None = None) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.rules = rules or []
        self.edits: list[Edit] = []
        self.hostile: Callable[..., Awaitable[bool | None]] | None = None
        self.dribble: Dribble | None = None
        self.counts: Counter[str] = Counter()
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.rates = rates
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()
        self.port = 0

    @classmethod
    def for_url(cls, url: str, rules: list[Rule] | None = None, *, rates: Faults | None = None) -> "FaultProxy":
        up = urlsplit(url)
        return cls(up.hostname or "127.0.0.1", up.port or 80, rules, rates=rates)

    # ---------------------------------------------------------------- configuration and life

    @property
    def rates(self) -> Faults | None:
        return self._rates

    @rates.setter
    def rates(self, value: Faults | None) -> None:
        self._rates = value
        self._rng = random.Random(value.seed if value is not None else 0)

    def reset_counts(self) -> None:
        self.counts.clear()
        self.requests = 0
        self.max_in_flight = self.in_flight

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def connections_open(self) -> int:
        """Client connections still being served: 0 once a killed client's last requests are
        all seen (and counted by the rules), so a test can wait for it instead of a sleep."""
        return len(self._tasks)

    def start(self) -> "FaultProxy":
        self._thread = threading.Thread(target=self._run, daemon=True, name="faultproxy")
        self._thread.start()
        if not self._ready.wait(60):
            raise RuntimeError("fault proxy did not start")
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        except Exception:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._thread = None
        self._loop.close()

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0, limit=1 << 20))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # ---------------------------------------------------------------- per connection, per request

    def _decide(self, method: str, target: str) -> str | None:
        f = self._rates
        if f is None or not f.applies(method, target):
            return None
        p = f.busy_probability(self.in_flight)
        if p > 0 and self._rng.random() < p:
            return "busy_slowdown"
        r = self._rng.random()
        for kind in KINDS:
            rate = getattr(f, kind)
            if r < rate:
                return kind
            r -= rate
        return None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self.counts["connections"] += 1
        up = _Upstream(self.upstream)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return  # the client closed the connection between requests
                self.requests += 1
                self.counts["requests"] += 1
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    keep = await self._one(head, reader, writer, up)
                finally:
                    self.in_flight -= 1
                if not keep:
                    return
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, OSError, ValueError):
            pass
        finally:
            up.close()
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _one(self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   up: _Upstream) -> bool:
        """Handle one request; True if the client connection stays open for the next one."""
        first, lines, headers = _parse_head(head)
        method, target, version = first.split(" ", 2)
        conn_hdr = headers.get("connection", "").lower()
        client_keep = conn_hdr != "close" if version == "HTTP/1.1" else conn_hdr == "keep-alive"
        expect = headers.get("expect", "").lower() == "100-continue"

        canned = next((r for r in (rule(method, target, headers) for rule in self.rules) if r is not None), None)
        if canned is not None:
            self.counts["rule"] += 1
            if not canned:  # b"": drop the connection without an answer
                return False
            if not expect:
                await _read_body(reader, headers)  # keep the connection in step for the next request
            writer.write(canned)
            await writer.drain()
            says_close = b"connection: close" in canned.partition(b"\r\n\r\n")[0].lower()
            return client_keep and not expect and not says_close

        if self.hostile is not None:
            return await self._hostile(self.hostile, first, lines, headers, reader, writer, up, client_keep)

        kind = self._decide(method, target)
        if kind is not None:
            self.counts[kind] += 1
        if kind in ("slowdown", "busy_slowdown", "error500"):
            if not expect:
                await _read_body(reader, headers)
            keep = client_keep and not expect
            if kind == "error500":
                answer = s3_error(500, "Internal Server Error", "InternalError",
                                  "We encountered an internal error. Please try again.",
                                  keep_alive=keep, head_only=method == "HEAD")
            else:
                answer = s3_error(503, "Slow Down", "SlowDown", "Please reduce your request rate.",
                                  keep_alive=keep, head_only=method == "HEAD")
            writer.write(answer)
            await writer.drain()
            return keep
        if kind == "reset":
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if kind == "drop":
            return False

        if expect:  # answer the 100 ourselves and send the upstream no Expect
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
        body = await _read_body(reader, headers)
        if kind == "stall":
            await asyncio.sleep(self._rates.stall_seconds if self._rates else 0)
        raw = _with_connection(first, lines, "keep-alive", ("expect:",) if expect else ()) + body
        status_line, resp_lines, resp_headers, resp_body, framed = await self._exchange(up, raw, method)
        self.counts["forwarded"] += 1
        for edit in self.edits:
            changed = edit(method, target, headers, resp_body)
            if changed is not None:
                self.counts["edited"] += 1
                if len(changed) != len(resp_body) and "content-length" in resp_headers:
                    resp_lines = [x for x in resp_lines if not x.lower().startswith("content-length:")]
                    resp_lines.append(f"Content-Length: {len(changed)}")
                resp_body = changed
                break

        if kind == "short_body":
            resp_head = _with_connection(status_line, resp_lines, "close")
            if resp_body:
                writer.write(resp_head + resp_body[:len(resp_body) // 2])
            else:
                writer.write(resp_head[:len(resp_head) // 2])
            await writer.drain()
            return False
        keep = client_keep and framed
        if self.dribble is not None and self.dribble.takes(method, target):
            self.counts["dribble"] += 1
            resp_head = _with_connection(status_line, resp_lines, "keep-alive" if keep else "close")
            for i in range(len(resp_head)):  # a pace of the server's, not a wait for anything
                writer.write(resp_head[i:i + 1])
                await writer.drain()
                await asyncio.sleep(self.dribble.every)
            writer.write(resp_body)
            await writer.drain()
            return keep
        writer.write(_with_connection(status_line, resp_lines, "keep-alive" if keep else "close") + resp_body)
        await writer.drain()
        return keep

    async def _hostile(self, handler: Callable[..., Awaitable[bool | None]], first: str, lines: list[str],
                       headers: dict[str, str], reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       up: _Upstream, client_keep: bool) -> bool:
        """One request through a hostile handler (see the module docstring)."""
        method, target, _ = first.split(" ", 2)
        expect = headers.get("expect", "").lower() == "100-continue"
        if expect:
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
        body = await _read_body(reader, headers)
        req = Request(method, target, headers, body)

        async def forward(headers: dict[str, str] | None = None) -> Answer:
            sent = lines
            if headers:
                names = {k.lower() for k in headers}
                sent = [x for x in lines if x.split(":", 1)[0].strip().lower() not in names]
                sent += [f"{k}: {v}" for k, v in headers.items()]
            raw = _with_connection(first, sent, "keep-alive", ("expect:",) if expect else ()) + body
            status_line, resp_lines, resp_headers, resp_body, framed = await self._exchange(up, raw, method)
            self.counts["forwarded"] += 1
            return Answer(status_line, resp_lines, resp_headers, resp_body)

        keep = await handler(req, forward, writer)
        if keep is None:
            answer = await forward()
            writer.write(answer.raw(client_keep))
            await writer.drain()
            return client_keep
        self.counts["hostile"] += 1
        return keep and client_keep

    async def _exchange(self, up: _Upstream, raw: bytes, method: str
                        ) -> tuple[str, list[str], dict[str, str], bytes, bool]:
        """Send one request upstream; (status line, header lines, headers, raw body, framed)."""
        for attempt in (0, 1):
            if up.writer is None:
                await up.open()
            reused = up.used
            up.used = True
            assert up.reader is not None and up.writer is not None
            try:
                up.writer.write(raw)
                await up.writer.drain()
                while True:
                    head = await up.reader.readuntil(b"\r\n\r\n")
                    status_line, lines, headers = _parse_head(head)
                    status = int(status_line.split(" ", 2)[1])
                    if not 100 <= status < 200:
                        break  # skip interim answers (100 Continue)
            except (asyncio.IncompleteReadError, ConnectionError):
                up.close()
                if reused and attempt == 0:
                    continue  # a kept-alive connection the upstream had closed: once more on a fresh one
                raise
            framed = True
            if method == "HEAD" or status in (204, 304):
                body = b""
            elif "chunked" in headers.get("transfer-encoding", "").lower() or "content-length" in headers:
                body = await _read_body(up.reader, headers)
            else:
                body = await up.reader.read()  # delimited by the end of the connection
                framed = False
            if not framed or headers.get("connection", "").lower() == "close":
                up.close()
            return status_line, lines, headers, body, framed
        raise AssertionError("unreachable")
