"""`s3bulk serve` speaks HTTP/1.1 as a client may: pipelined requests answered in order, request
bodies (Content-Length or chunked) read past so the next request starts at the right byte,
keep-alive and `Connection: close`, HTTP/1.0, and refusals instead of resets: 431 for a head too
large or with too many fields, 414 for a target too long, 400 for a request it cannot parse,
405/501 for methods it does not serve, each answered and then closed cleanly (the client reads
the answer, then EOF: never a reset). A bad client leaves no traceback in the server's log and
does not hurt the next client.

Every test runs the real command (`python -m s3bulk serve DIR --port 0 --processes 1`) and talks
to it over raw sockets, so that what is sent is exactly what the test wrote."""

from __future__ import annotations

import select
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from conftest import ROOT

DEADLINE = 60.0  # seconds any wait may take on a busy machine before the test fails

FILES = {"a": b"alpha\n", "b": b"bravo bravo\n", "c": b"charlie" * 3}


class Server:
    def __init__(self, host: str, port: int, log: Path) -> None:
        self.host, self.port, self.log = host, port, log

    def connect(self) -> socket.socket:
        s = socket.create_connection((self.host, self.port), timeout=DEADLINE)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s


@contextmanager
def served(root: Path, log: Path) -> Iterator[Server]:
    """`s3bulk serve ROOT` in one process, its stderr in `log`; at the end its log must hold no
    traceback (whatever the test sent it)."""
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "s3bulk", "serve", str(root), "--port", "0",
                                 "--processes", "1"], stderr=err, cwd=ROOT)
    try:
        deadline = time.monotonic() + DEADLINE
        while b"serving on " not in log.read_bytes():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        url = log.read_text().split("serving on ", 1)[1].split()[0]
        host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
        yield Server(host, int(port), log)
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
    text = log.read_text()
    assert "Traceback" not in text and "Error" not in text, text


@pytest.fixture
def server(tmp_path) -> Iterator[Server]:
    root = tmp_path / "root"
    root.mkdir()
    for name, body in FILES.items():
        (root / name).write_bytes(body)
    with served(root, tmp_path / "serve.log") as srv:
        yield srv


class Reader:
    """Responses read off a socket, one at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buf = sock, b""

    def _more(self) -> bool:
        data = self.sock.recv(65536)
        self.buf += data
        return bool(data)

    def response(self, head_only: bool = False) -> tuple[int, dict[str, str], bytes]:
        """(status, headers with lower-case names, body); the body by Content-Length."""
        while b"\r\n\r\n" not in self.buf:
            assert self._more(), f"connection closed before a whole head: {self.buf[:200]!r}"
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = 0 if head_only else int(headers["content-length"])
        while len(self.buf) < n:
            assert self._more(), "connection closed mid-body"
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, headers, body

    def closed(self) -> bool:
        """True once the server closed the connection cleanly (EOF after what it sent, no reset),
        with nothing more sent; waits up to the socket's timeout."""
        try:
            more = self.sock.recv(65536)
        except ConnectionResetError:
            return False
        assert more == b"" and self.buf == b"", (self.buf + more)[:200]
        return True


def get(name: str, extra: str = "") -> bytes:
    return f"GET /get/{name} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode()


def test_pipelined_gets_one_with_a_body_are_answered_in_order(server):
    # the body of the first GET looks like a request: a server that does not read past it answers it
    body = get("c")
    with server.connect() as s:
        s.sendall(get("a", f"Content-Length: {len(body)}\r\n") + body + get("b")
                  + b"HEAD /get/c HTTP/1.1\r\nHost: x\r\n\r\n" + get("a"))
        r = Reader(s)
        assert r.response()[::2] == (200, FILES["a"])
        assert r.response()[::2] == (200, FILES["b"])
        status, headers, _ = r.response(head_only=True)
        assert status == 200 and headers["content-length"] == str(len(FILES["c"]))
        assert r.response()[::2] == (200, FILES["a"])
        s.sendall(get("b"))  # and the connection is still good
        assert r.response()[::2] == (200, FILES["b"])


def test_a_chunked_body_on_a_get_is_read_past(server):
    with server.connect() as s:
        s.sendall(get("a", "Transfer-Encoding: chunked\r\n") + b"5\r\nhello\r\n3\r\nGET\r\n0\r\n\r\n" + get("b"))
        r = Reader(s)
        assert r.response()[::2] == (200, FILES["a"])
        assert r.response()[::2] == (200, FILES["b"])


def test_a_put_with_a_body_gets_405_and_the_next_request_is_answered(server):
    with server.connect() as s:
        s.sendall(b"PUT /get/a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nnope" + get("b"))
        r = Reader(s)
        status, headers, _ = r.response()
        assert status == 405 and headers["allow"] == "GET, HEAD"
        assert r.response()[::2] == (200, FILES["b"])


def test_a_request_sent_one_byte_at_a_time_is_answered(server):
    with server.connect() as s:
        for byte in get("c", "Range: bytes=2-\r\n"):
            s.send(bytes([byte]))
        assert Reader(s).response()[::2] == (206, FILES["c"][2:])


def test_a_200_kb_header_gets_431_and_a_clean_close(server):
    with server.connect() as s:
        s.sendall(get("a", "X-Big: " + "x" * 200_000 + "\r\n"))
        r = Reader(s)
        status, headers, _ = r.response()
        assert status == 431 and headers["connection"] == "close"
        assert r.closed()


def test_200_header_fields_get_431(server):
    with server.connect() as s:
        s.sendall(get("a", "".join(f"X-{i}: {i}\r\n" for i in range(200))))
        r = Reader(s)
        assert r.response()[0] == 431
        assert r.closed()


def test_a_header_that_never_ends_is_refused_once_past_the_limit(server):
    """A field sent on and on is refused while it is still arriving (it never ends here, so the
    431 can only come from counting the reads of an open head), not held until it ends. How much
    the client got to send first depends on the machine's load, so it is not asserted."""
    with server.connect() as s:
        s.sendall(b"GET /get/a HTTP/1.1\r\nHost: x\r\nX-Endless: ")
        for _ in range(128):  # 1 MiB at most: past the limit plus any one read the server makes
            if select.select([s], [], [], 0)[0]:
                break  # answered
            s.sendall(b"y" * 8192)
        r = Reader(s)
        assert r.response()[0] == 431
        assert r.closed()


def test_a_long_target_gets_414(server):
    with server.connect() as s:
        s.sendall(get("a" * 40_000))
        r = Reader(s)
        assert r.response()[0] == 414
        assert r.closed()


@pytest.mark.parametrize("request_bytes", [
    b"garbage\r\n\r\n",
    b"GET /get/a HTTP/1.1\r\nHost: x\r\nbad header line\r\n\r\n",
    b"GET /get/a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx",
    b"GET /get/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
], ids=["request-line", "header-line", "two-lengths", "chunk-size"])
def test_a_malformed_request_gets_400_and_a_clean_close(server, request_bytes):
    with server.connect() as s:
        s.sendall(get("a") + request_bytes)
        r = Reader(s)
        assert r.response()[::2] == (200, FILES["a"])  # what came before is answered first
        status, headers, _ = r.response()
        assert status == 400 and headers["connection"] == "close"
        assert r.closed()


def test_an_unknown_method_gets_501(server):
    with server.connect() as s:
        s.sendall(b"BREW /get/a HTTP/1.1\r\nHost: x\r\n\r\n")
        r = Reader(s)
        assert r.response()[0] == 501
        assert r.closed()


def test_http_1_0_closes_after_the_answer_unless_kept_alive(server):
    with server.connect() as s:
        s.sendall(b"GET /get/a HTTP/1.0\r\n\r\n")
        r = Reader(s)
        assert r.response()[::2] == (200, FILES["a"])
        assert r.closed()
    with server.connect() as s:
        s.sendall(b"GET /get/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        r = Reader(s)
        status, headers, body = r.response()
        assert (status, body) == (200, FILES["a"]) and headers["connection"].lower() == "keep-alive"
        s.sendall(b"GET /get/b HTTP/1.0\r\n\r\n")
        assert r.response()[::2] == (200, FILES["b"])
        assert r.closed()


def test_connection_close_closes_after_the_answer(server):
    with server.connect() as s:
        s.sendall(get("a", "Connection: close\r\n"))
        r = Reader(s)
        status, headers, body = r.response()
        assert (status, body) == (200, FILES["a"]) and headers["connection"] == "close"
        assert r.closed()


def test_a_client_that_goes_away_mid_request_does_not_hurt_the_next(server):
    with server.connect() as s:  # half a head, then gone
        s.sendall(b"GET /get/a HTTP/1.1\r\nHost: x\r\nX-Half: ")
    with server.connect() as s:  # half a body, then a reset
        s.sendall(get("a", "Content-Length: 100\r\n") + b"only part")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    with server.connect() as s:
        s.sendall(get("b"))
        assert Reader(s).response()[::2] == (200, FILES["b"])


@pytest.mark.parametrize("request_bytes", [
    get("a", "Connection: Upgrade\r\nUpgrade: websocket\r\n"),
    b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
], ids=["upgrade", "connect"])
def test_an_upgrade_is_not_made_and_the_connection_closes(server, request_bytes):
    with server.connect() as s:
        s.sendall(request_bytes + get("b"))  # nothing after it is read
        r = Reader(s)
        status, headers, body = r.response()
        assert status in (200, 404) and headers["connection"] == "close"
        assert status == 404 or body == FILES["a"]
        assert r.closed()


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/0.9"])
def test_a_version_other_than_1_x_gets_505(server, version):
    with server.connect() as s:
        s.sendall(b"GET /get/a " + version + b"\r\nHost: x\r\n\r\n")
        r = Reader(s)
        assert r.response()[0] == 505
        assert r.closed()


def test_a_client_still_sending_after_a_refusal_reads_the_refusal_then_eof(server):
    """The server drains what follows a refusal (here 1 MiB of requests) instead of resetting."""
    with server.connect() as s:
        s.sendall(b"garbage\r\n\r\n" + get("a") * (1024 * 1024 // len(get("a"))))
        r = Reader(s)
        assert r.response()[0] == 400
        assert r.closed()


def test_the_help_states_the_limits_the_server_enforces():
    from s3bulk.cli.commands.serve import serve
    from s3bulk.serve.reader import MAX_FIELDS, MAX_HEAD, MAX_TARGET

    doc = " ".join((serve.__doc__ or "").split())
    assert f"over {MAX_HEAD // 1024} KiB or {MAX_FIELDS} fields gets 431" in doc
    assert f"target over {MAX_TARGET // 1024} KiB 414" in doc
    guide = " ".join((ROOT / "docs" / "guides" / "serve.md").read_text().split())
    assert f"over {MAX_HEAD // 1024} KiB, or more than {MAX_FIELDS} fields" in guide
    assert f"over {MAX_TARGET // 1024} KiB" in guide
