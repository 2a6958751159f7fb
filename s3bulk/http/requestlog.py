"""The request log (`--log-requests FILE|-`): one line per request and its answer, secrets redacted.

What rclone's `--dump headers`, aws `--debug` and s5cmd's `--log trace` give: when a server
misbehaves, what was asked and what came back, without a packet capture. A line is

    2026-11-28T02:55:01.123Z 4711 GET https://host/bucket?list-type=2&prefix=a%2F 200 sent=0 received=5120 time=12.3ms retry=0

(the start of the request, UTC; the process; method and URL, its query as sent; the status, or
`ERR` and the error at the end when no answer came; request and answer body bytes; the time to
the whole answer; which retry of the request this is: 0 the first attempt). With the headers
asked for, the request's follow as `  > Name: value` lines and the answer's as `  < Name: value`.
Bytes received are the body's length (its Content-Length where it went to a file as it arrived,
or through botocore as a stream); a HEAD's are 0.

Redacted, whatever the server or the user sends (REDACTED in their place): `Authorization`,
`X-Amz-Security-Token`, the SSE-C keys and their MD5s (`...-customer-key`, `...-customer-key-MD5`,
the copy source's too), and any header whose name holds "secret", "token", "cookie", "password",
"credential" or "signature"; in a URL's query, a presigned URL's `X-Amz-Signature`,
`X-Amz-Credential`, `X-Amz-Security-Token` (and SigV2's `Signature`, `AWSAccessKeyId`).

How it reaches every process of a run: the CLI's option sets S3BULK_LOG_REQUESTS (and
S3BULK_LOG_REQUESTS_HEADERS) in its environment, which its worker processes inherit, forked or
spawned; the lean HTTP client (client.py) and the botocore path (stores/s3) ask `current()` when
they are made, never per request. Each process opens the file itself, in append mode, and writes
each request's text with one write(): lines of several processes never interleave inside one, and
nothing passes between processes. `-` is standard error (stdout is the command's output).

Retry numbers come from the retry loop (stores/resilient.py), which sets RETRY around an attempt
after the first: a ContextVar, so the request inside, on either data path, sees it.
"""

from __future__ import annotations

import os
import time
from contextvars import ContextVar
from typing import Any, Awaitable, Callable, Iterable
from urllib.parse import unquote

ENV = "S3BULK_LOG_REQUESTS"
HEADERS_ENV = "S3BULK_LOG_REQUESTS_HEADERS"
REDACTED = "<redacted>"

# which retry of a request the attempt now being made is (0: the first); set by the retry loop
RETRY: ContextVar[int] = ContextVar("s3bulk_retry", default=0)

_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-amz-security-token"})
_SECRET_PARTS = ("secret", "token", "customer-key", "cookie", "password", "credential", "signature")
_SECRET_PARAMS = frozenset({"x-amz-signature", "x-amz-credential", "x-amz-security-token", "signature",
                            "awsaccesskeyid"})


def secret_header(name: str) -> bool:
    """Whether a header's value is never written (module docstring)."""
    low = name.lower()
    return low in _SECRET_HEADERS or any(part in low for part in _SECRET_PARTS)


def redact_url(url: str) -> str:
    """The URL with a presigned URL's signature parameters and any user:password@ redacted."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        rest = REDACTED + "@" + rest.split("@", 1)[1]
        url = scheme + sep + rest
    path, q, query = url.partition("?")
    if not q:
        return url
    params = []
    for param in query.split("&"):
        name, eq, _ = param.partition("=")
        low = unquote(name).lower()
        params.append(f"{name}={REDACTED}" if low in _SECRET_PARAMS or "secret" in low else param)
    return f"{path}?{'&'.join(params)}"


def header_lines(mark: str, headers: Iterable[tuple[Any, Any]]) -> str:
    """Headers as `  > Name: value` lines (botocore keeps some names and values as bytes)."""
    out = []
    for name, value in headers:
        name = name.decode("latin-1") if isinstance(name, bytes) else str(name)
        value = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        out.append(f"  {mark} {name}: {REDACTED if secret_header(name) else value}\n")
    return "".join(out)


def _stamp(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 1000):03d}Z"


def _length(headers: Any) -> int:
    try:
        return int(headers.get("content-length") or headers.get("Content-Length") or 0)
    except (TypeError, ValueError, AttributeError):
        return 0


class RequestLog:
    """Where this process's request lines go, and whether with headers."""

    def __init__(self, target: str, headers: bool) -> None:
        self.target, self.headers = target, headers
        self._fd, self._pid = -1, 0

    def _out(self) -> int:
        """The file, opened once per process (a forked worker opens its own)."""
        pid = os.getpid()
        if pid != self._pid:
            self._fd = 2 if self.target == "-" else os.open(
                self.target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._pid = pid
        return self._fd

    def exchange(self, started: float, seconds: float, method: str, url: str, status: int | None,
                 sent: int, received: int, error: BaseException | None = None,
                 request_headers: Iterable[tuple[str, str]] = (),
                 answer_headers: Iterable[tuple[str, str]] = ()) -> None:
        """Write one request and its answer (or the error instead of an answer)."""
        line = (f"{_stamp(started)} {os.getpid()} {method} {redact_url(url)} "
                f"{status if status is not None else 'ERR'} sent={sent} received={received} "
                f"time={seconds * 1000:.1f}ms retry={RETRY.get()}")
        if error is not None:
            line += f" error={type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".rstrip()
        text = line + "\n"
        if self.headers:
            text += header_lines(">", request_headers) + header_lines("<", answer_headers)
        data = text.encode("utf-8", "backslashreplace")
        try:
            fd = self._out()
            while data:
                data = data[os.write(fd, data):]
        except OSError:
            pass  # a log that cannot be written (disk full, closed pipe) must not fail the request

    # ------------------------------------------------------------ the lean client

    def wrap(self, client: Any) -> Callable[..., Awaitable[Any]]:
        """client.request (an http.client.HttpClient's, not imported here: it imports this module),
        each call logged: what the client sets as its own `request` (so an unlogged client pays
        nothing per request)."""
        plain = type(client).request  # the class's: the instance's own is the one made here
        origin = f"{'https' if client.tls is not None else 'http'}://{client.host_header}"

        async def request(method: str, target: str, headers: dict[str, str] | None = None,
                          body: Any = None, into: memoryview | None = None, sink: Any = None) -> Any:
            started, t0 = time.time(), time.monotonic()
            sent = len(body) if body is not None else 0
            asked = [("Host", client.host_header), *(headers or {}).items()]
            if body is not None:
                asked.append(("Content-Length", str(sent)))
            try:
                resp = await plain(client, method, target, headers, body, into, sink)
            except BaseException as exc:
                self.exchange(started, time.monotonic() - t0, method, origin + target, None, sent, 0, exc,
                              asked)
                raise
            received = 0 if method == "HEAD" else (len(resp.body) or _length(resp.headers))
            self.exchange(started, time.monotonic() - t0, method, origin + target, resp.status, sent, received,
                          None, asked, resp.headers.items())
            return resp

        return request

    # ------------------------------------------------------------ botocore (its event system)

    def hook(self, events: Any) -> None:
        """Log every request a botocore client sends: `before-send` notes it, `response-received`
        (once per attempt, answered or not) writes it with its answer."""
        events.register("before-send", self._before_send)
        events.register("response-received", self._received)

    def _before_send(self, request: Any = None, **_: Any) -> None:
        if request is not None:
            _ASKED.set((time.time(), time.monotonic(), request))
        return None  # None: botocore sends the request itself

    def _received(self, response_dict: Any = None, exception: Any = None, **_: Any) -> None:
        asked = _ASKED.get()
        if asked is None:
            return
        _ASKED.set(None)
        started, t0, request = asked
        headers = list(request.headers.items())
        sent = _length(request.headers)
        if response_dict is None:
            self.exchange(started, time.monotonic() - t0, request.method, request.url, None, sent, 0,
                          exception or RuntimeError("no answer"), headers)
            return
        answer = response_dict.get("headers") or {}
        body = response_dict.get("body")
        received = 0 if request.method == "HEAD" else (
            len(body) if isinstance(body, (bytes, bytearray)) and body else _length(answer))
        self.exchange(started, time.monotonic() - t0, request.method, request.url, response_dict.get("status_code"),
                      sent, received, None, headers, list(answer.items()))


_ASKED: ContextVar[tuple[float, float, Any] | None] = ContextVar("s3bulk_botocore_asked", default=None)
_CURRENT: tuple[str, bool, RequestLog | None] = ("", False, None)


def current() -> RequestLog | None:
    """This process's request log, None when none is asked for (S3BULK_LOG_REQUESTS unset)."""
    global _CURRENT
    target = os.environ.get(ENV)
    if not target:
        return None
    headers = os.environ.get(HEADERS_ENV, "") not in ("", "0")
    if _CURRENT[0] != target or _CURRENT[1] != headers:
        _CURRENT = (target, headers, RequestLog(target, headers))
    return _CURRENT[2]


def start(target: str, headers: bool = False) -> None:
    """Log this process's requests and its workers' to `target` (a file, or '-' for stderr): the
    file is created (or checked writable) now, so a bad path is one line before any work."""
    if target != "-":
        os.close(os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600))
    os.environ[ENV] = target
    if headers:
        os.environ[HEADERS_ENV] = "1"
