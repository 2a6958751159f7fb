"""HTTP_PROXY and NO_PROXY are honoured by the lean data path as botocore honours them: with a
forward proxy on loopback in front of LocalStack, every object request of a copy is seen by the
proxy (counted from its log of requests), and NO_PROXY naming the endpoint takes it off."""

from __future__ import annotations

import http.client
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from conftest import read_tree, write_tree

_HOP = {"proxy-authorization", "proxy-connection", "connection", "keep-alive", "expect", "transfer-encoding"}


class _Forward(BaseHTTPRequestHandler):
    """A forward proxy for absolute-form http:// requests; logs (method, path) of each."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _forward(self) -> None:
        url = urlsplit(self.path)
        if url.scheme != "http":
            self.send_error(400, "absolute-form http:// requests only")
            return
        self.server.seen.append((self.command, url.path))  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        upstream = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        try:
            upstream.request(self.command, url.path + (f"?{url.query}" if url.query else ""), body, headers)
            resp = upstream.getresponse()
            data = resp.read()
        finally:
            upstream.close()
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in _HOP and (k.lower() != "content-length" or self.command == "HEAD"):
                self.send_header(k, v)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward


@pytest.fixture
def forward_proxy():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Forward)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _env(proxy: str, no_proxy: str = "") -> dict[str, str]:
    """Both spellings set alike (an empty lower-case one would cancel the upper-case one)."""
    env = {"HTTP_PROXY": proxy, "HTTPS_PROXY": "", "NO_PROXY": no_proxy}
    return env | {k.lower(): v for k, v in env.items()}


def test_every_object_request_goes_through_http_proxy_unless_no_proxy_names_the_endpoint(
        forward_proxy, cli, s3, bucket, endpoint, tmp_path):
    tree = {f"d/k{i:02d}": os.urandom(100 + i) for i in range(20)}
    write_tree(tmp_path / "src", tree)
    url = f"http://127.0.0.1:{forward_proxy.server_address[1]}"
    seen = forward_proxy.seen
    objects = sorted(f"/{bucket}/{k}" for k in tree)

    up = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/", "--json", "-w", "1", env=_env(url))
    assert up.code == 0, up
    assert sorted(p for m, p in seen if m == "PUT") == objects
    down = cli("copy", f"s3://{bucket}/", str(tmp_path / "dst"), "--json", "-w", "1", env=_env(url))
    assert down.code == 0, down
    assert sorted(p for m, p in seen if m == "GET" and p in objects) == objects
    assert any(m == "GET" and p.rstrip("/") == f"/{bucket}" for m, p in seen)  # the listing too
    assert read_tree(tmp_path / "dst") == tree

    before = len(seen)
    host = urlsplit(endpoint).hostname
    again = cli("copy", f"s3://{bucket}/", str(tmp_path / "again"), "--json", "-w", "1",
                env=_env(url, no_proxy=f"example.com,{host}"))
    assert again.code == 0, again
    assert len(seen) == before  # NO_PROXY: straight to the endpoint, botocore's requests too
    assert read_tree(tmp_path / "again") == tree
