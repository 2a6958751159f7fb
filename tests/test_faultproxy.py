"""The fault proxy itself (tests/faultproxy.py): transparent with keep-alive, and each fault really
happens when asked, at a seeded rate. A tiny threaded HTTP/1.1 server on loopback is the upstream
for most tests (fast); the last ones put the proxy in front of LocalStack and `s3bulk serve`."""

from __future__ import annotations

import http.client
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import read_tree, write_tree
from faultproxy import KINDS, Faults, FaultProxy, object_gets, s3_error


def body_for(path: str) -> bytes:
    return (path.encode() + b"|") * 50


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # head and body go in two writes: no 40 ms delayed-ACK wait

    def log_message(self, *args) -> None:
        pass

    def _answer(self, body: bytes, send_body: bool = True) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.startswith("/slow"):
            time.sleep(0.5)
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"hello ", b"chunked ", b"world"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        self._answer(body_for(self.path))

    def do_HEAD(self) -> None:
        self._answer(body_for(self.path), send_body=False)

    def do_PUT(self) -> None:
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
        else:
            data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer(b"got %d bytes, expect=%s" % (len(data), self.headers.get("Expect", "-").encode()))


@pytest.fixture(scope="module")
def upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address
    server.shutdown()
    server.server_close()


def conn(proxy: FaultProxy, timeout: float = 5) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=timeout)


def get(c: http.client.HTTPConnection, path: str, method: str = "GET") -> tuple[int, bytes]:
    c.request(method, path)
    r = c.getresponse()
    return r.status, r.read()


def raw_exchange(proxy: FaultProxy, request: bytes, timeout: float = 5) -> bytes:
    """Send raw bytes, return everything received until the proxy closes (ConnectionResetError on RST)."""
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=timeout) as s:
        s.sendall(request)
        out = b""
        while True:
            data = s.recv(65536)
            if not data:
                return out
            out += data


def test_transparent_with_keep_alive(upstream, make_fault_proxy):
    proxy = make_fault_proxy(upstream)
    c = conn(proxy)
    for i in range(20):
        assert get(c, f"/b/k{i}") == (200, body_for(f"/b/k{i}"))
    c.request("HEAD", "/b/k1")
    r = c.getresponse()
    assert r.status == 200 and r.read() == b"" and r.headers["Content-Length"] == str(len(body_for("/b/k1")))
    assert get(c, "/chunked") == (200, b"hello chunked world")
    c.request("PUT", "/b/up", body=b"x" * 100_000)
    assert c.getresponse().read() == b"got 100000 bytes, expect=-"
    c.request("PUT", "/b/up", body=iter([b"a" * 10, b"b" * 20]), encode_chunked=True)
    assert c.getresponse().read() == b"got 30 bytes, expect=-"
    # Expect: 100-continue is answered by the proxy, the upstream sees a plain PUT
    c.putrequest("PUT", "/b/up")
    c.putheader("Content-Length", "5")
    c.putheader("Expect", "100-continue")
    c.endheaders()
    c.send(b"12345")
    assert c.getresponse().read() == b"got 5 bytes, expect=-"
    c.close()
    assert proxy.counts["connections"] == 1
    assert proxy.counts["requests"] == proxy.counts["forwarded"] == proxy.requests == 25
    assert not any(proxy.counts[k] for k in KINDS)


def test_slowdown_and_500_are_s3_errors_and_keep_the_connection(upstream, make_fault_proxy):
    proxy = make_fault_proxy(upstream, rates=Faults(slowdown=1.0))
    c = conn(proxy)
    for _ in range(3):
        status, body = get(c, "/b/k")
        assert status == 503 and b"<Code>SlowDown</Code>" in body
    c.request("HEAD", "/b/k")
    r = c.getresponse()
    assert r.status == 503 and r.read() == b""  # no body for HEAD, and the connection stays in step
    proxy.rates = Faults(error500=1.0)
    status, body = get(c, "/b/k")
    assert status == 500 and b"<Code>InternalError</Code>" in body
    assert proxy.counts["connections"] == 1
    assert proxy.counts["slowdown"] == 4 and proxy.counts["error500"] == 1 and proxy.counts["forwarded"] == 0


def test_reset_sends_rst_and_drop_closes_without_answer(upstream, make_fault_proxy):
    proxy = make_fault_proxy(upstream, rates=Faults(reset=1.0))
    with pytest.raises(ConnectionResetError):
        raw_exchange(proxy, b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n")
    proxy.rates = Faults(drop=1.0)
    assert raw_exchange(proxy, b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n") == b""  # FIN, nothing said
    assert proxy.counts["reset"] == 1 and proxy.counts["drop"] == 1 and proxy.counts["forwarded"] == 0


def test_stall_outlasts_a_short_client_timeout_then_forwards(upstream, make_fault_proxy):
    proxy = make_fault_proxy(upstream, rates=Faults(stall=1.0, stall_seconds=1.5))
    with pytest.raises(TimeoutError):
        get(conn(proxy, timeout=0.3), "/b/k")
    t0 = time.monotonic()
    assert get(conn(proxy, timeout=30), "/b/k2") == (200, body_for("/b/k2"))
    assert time.monotonic() - t0 >= 1.4
    assert proxy.counts["stall"] == 2


def test_short_body_sends_less_than_content_length_then_closes(upstream, make_fault_proxy):
    proxy = make_fault_proxy(upstream, rates=Faults(short_body=1.0))
    raw = raw_exchange(proxy, b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200") or head.startswith(b"HTTP/1.1 200")
    length = int([line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")][0])
    assert length == len(body_for("/b/k")) and 0 < len(body) < length
    with pytest.raises(http.client.IncompleteRead):
        get(conn(proxy), "/b/k")
    # an answer without a body is cut inside its head
    raw = raw_exchange(proxy, b"HEAD /b/k HTTP/1.1\r\nHost: x\r\n\r\n")
    assert raw and b"\r\n\r\n" not in raw
    assert proxy.counts["short_body"] == 3 and proxy.counts["forwarded"] == 3


def test_rates_are_seeded_mixed_and_counted(upstream, make_fault_proxy):
    faults = dict(slowdown=0.1, error500=0.1, reset=0.05, drop=0.05, short_body=0.1, seed=7)

    def outcomes(proxy: FaultProxy) -> list[str]:
        seen = []
        c = conn(proxy)
        for i in range(300):
            try:
                status, body = get(c, f"/b/k{i}")
                seen.append(str(status) if body == body_for(f"/b/k{i}") or status != 200 else "short")
            except (http.client.HTTPException, ConnectionError):
                seen.append("broken")
                c.close()
                c = conn(proxy)
        return seen

    a = make_fault_proxy(upstream, rates=Faults(**faults))
    b = make_fault_proxy(upstream, rates=Faults(**faults))
    first, second = outcomes(a), outcomes(b)
    assert first == second  # same seed, same sequence
    assert a.counts == b.counts
    for kind, rate in faults.items():
        if kind != "seed":
            assert 0.4 * rate * 300 <= a.counts[kind] <= 1.8 * rate * 300, (kind, a.counts)
    assert first.count("503") == a.counts["slowdown"] and first.count("500") == a.counts["error500"]
    assert first.count("broken") == a.counts["reset"] + a.counts["drop"] + a.counts["short_body"]
    assert a.counts["forwarded"] == 300 - sum(a.counts[k] for k in ("slowdown", "error500", "reset", "drop"))
    assert a.counts["connections"] == 1 + first.count("broken")  # keep-alive between faults


def test_rates_restricted_by_method_and_target(upstream, make_fault_proxy):
    proxy = make_fault_proxy(upstream, rates=Faults(slowdown=1.0, only=object_gets))
    c = conn(proxy)
    assert get(c, "/bucket?list-type=2&prefix=a")[0] == 200  # a listing: left alone
    assert get(c, "/bucket/key")[0] == 503
    assert get(c, "/get/name")[0] == 503  # a list/get server's file
    assert get(c, "/list?next-marker=5")[0] == 200
    assert get(c, "/bucket/key", method="HEAD")[0] == 200  # HEAD is not a GET
    proxy.rates = Faults(error500=1.0, methods=("put",))
    assert get(c, "/bucket/key")[0] == 200
    c.request("PUT", "/bucket/key", body=b"x")
    assert c.getresponse().status == 500


def test_busy_slowdown_rises_with_requests_in_flight(upstream, make_fault_proxy):
    proxy = make_fault_proxy(upstream, rates=Faults(busy_above=2, busy_slope=1.0))
    for _ in range(5):  # one at a time: never busy
        assert get(conn(proxy), "/b/k")[0] == 200
    with ThreadPoolExecutor(6) as pool:  # six at once, each held 0.5 s by the upstream
        statuses = sorted(pool.map(lambda i: get(conn(proxy), f"/slow/{i}")[0], range(6)))
    assert statuses == [200, 200, 503, 503, 503, 503]
    assert proxy.counts["busy_slowdown"] == 4 and proxy.max_in_flight >= 3
    assert Faults(busy_above=4, busy_slope=0.25).busy_probability(4) == 0.0
    assert Faults(busy_above=4, busy_slope=0.25).busy_probability(6) == 0.5
    assert Faults(busy_above=4, busy_slope=0.25, busy_max=0.8).busy_probability(40) == 0.8


def test_rules_come_first_and_a_canned_close_ends_the_connection(upstream, make_fault_proxy):
    rule = lambda m, t, h: s3_error(403, "Forbidden", "AccessDenied", "no") if t == "/deny" else None  # noqa: E731
    proxy = make_fault_proxy(upstream, [rule], rates=Faults(error500=1.0, only=lambda m, t: t != "/deny"))
    c = conn(proxy)
    assert get(c, "/deny")[0] == 403
    assert get(c, "/b/k")[0] == 500  # http.client reconnects: the canned answer said Connection: close
    assert proxy.counts["rule"] == 1 and proxy.counts["connections"] == 2


def test_bad_rates_are_refused():
    with pytest.raises(ValueError):
        Faults(slowdown=0.6, error500=0.6)
    with pytest.raises(ValueError):
        Faults(reset=-0.1)


def test_fault_proxy_fixture_in_front_of_localstack(fault_proxy, s3, bucket):
    """botocore (keep-alive, Expect: 100-continue on large PUTs) through the proxy: its retries ride
    out the faults, and the proxy did inject them."""
    import botocore.session
    from botocore.config import Config

    client = botocore.session.get_session().create_client(
        "s3", endpoint_url=fault_proxy.url, region_name="us-east-1",
        config=Config(retries={"mode": "standard", "max_attempts": 10}))
    big = os.urandom(2 * 1024 * 1024)
    client.put_object(Bucket=bucket, Key="big", Body=big)
    fault_proxy.rates = Faults(slowdown=0.15, error500=0.15, seed=3, only=object_gets)
    for i in range(20):
        client.put_object(Bucket=bucket, Key=f"k{i}", Body=b"v%d" % i)
    for i in range(20):
        assert client.get_object(Bucket=bucket, Key=f"k{i}")["Body"].read() == b"v%d" % i
    assert client.get_object(Bucket=bucket, Key="big")["Body"].read() == big
    keys = [c["Key"] for c in client.list_objects_v2(Bucket=bucket)["Contents"]]
    assert len(keys) == 21
    c = fault_proxy.counts
    assert c["slowdown"] + c["error500"] > 0 and c["forwarded"] >= 43
    assert c["connections"] < c["requests"] / 2  # connections were reused


def test_fronting_a_list_get_server(listget_server, make_fault_proxy, cli, tmp_path):
    """s3bulk's own HTTP client through the proxy in front of `s3bulk serve`: faults are retried."""
    files = {f"f{i:03d}": os.urandom(200) for i in range(100)}
    write_tree(tmp_path / "src", files)
    url = listget_server(str(tmp_path / "src"), "--processes", "1", "--page-size", "25")
    proxy = make_fault_proxy(url, rates=Faults(slowdown=0.1, drop=0.05, short_body=0.1, seed=5,
                                               only=object_gets))
    run = cli("copy", proxy.url, str(tmp_path / "dst"), "--json", "--workers", "1")
    assert run.code == 0, run
    assert read_tree(tmp_path / "dst") == files
    c = proxy.counts
    assert c["slowdown"] and c["drop"] and c["short_body"], c
    assert c["connections"] < c["requests"]
