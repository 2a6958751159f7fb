"""Issue 13 asks for "a real HTTP/1.1 parser (httptools/llhttp or h11) if it keeps the per-request
CPU within ~10% of today's". This measures what parsing one typical S3 answer costs (the head of a
100-byte GET with S3's headers, and its body), CPU time per answer, best of `--reps`:

    uv run --frozen --extra dask --with h11 python bench/http_parser_bench.py

- s3bulk httpclient: _Conn of s3bulk/http/client.py fed the answer as the transport would (data_received),
  headers as a dict of lower-case names, the body as bytes: what the client does per answer. Since
  issue 13 it parses with llhttp (httptools); "s3bulk, own parser" is the same class at `--baseline`
  (git revision 4cd874e, the last with its own head parser), loaded from git for the same run.
- httptools (llhttp, C): HttpResponseParser with callbacks that build the same dict and body.
- h11 (pure Python): Connection.receive_data / next_event until EndOfMessage, the same dict and body.

A second table: one chunked answer of a listing page's size (~300 KB in 8 KiB chunks, handed over
64 KiB at a time as a socket would), the own parser against llhttp in s3bulk.

The parsers are timed alone (no sockets); the rest of a request (signing, the event loop, the
syscalls) is the same whichever parser is used.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent

ANSWER = (b"HTTP/1.1 200 OK\r\n"
          b"x-amz-id-2: Xb3lGJbXw8nXkBLQkJ9oQkxkBUUvvw2y+2MwCl7NyY1kPjHxJbQZgRX3vYk1Wf0Z7dQ6mVzIb2A=\r\n"
          b"x-amz-request-id: 4E5F8F7A1C2B3D4E\r\n"
          b"Date: Mon, 23 Nov 2026 05:00:00 GMT\r\n"
          b"Last-Modified: Sun, 22 Nov 2026 12:00:00 GMT\r\n"
          b"ETag: \"6805f2cfc46c0f04559748bb039d69ae\"\r\n"
          b"x-amz-checksum-crc32: AAAAAA==\r\n"
          b"x-amz-checksum-type: FULL_OBJECT\r\n"
          b"Accept-Ranges: bytes\r\n"
          b"Content-Type: binary/octet-stream\r\n"
          b"Server: AmazonS3\r\n"
          b"Content-Length: 100\r\n\r\n") + b"x" * 100


_PAGE = b"<Contents><Key>k</Key></Contents>" * 9000
CHUNKED = (b"HTTP/1.1 200 OK\r\nx-amz-request-id: 4E5F8F7A1C2B3D4E\r\nContent-Type: application/xml\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n"
           + b"".join(b"%x\r\n" % len(_PAGE[i:i + 8192]) + _PAGE[i:i + 8192] + b"\r\n"
                      for i in range(0, len(_PAGE), 8192))
           + b"0\r\n\r\n")


def _at_revision(rev: str) -> ModuleType:
    """s3bulk/http/client.py as it was at git revision `rev`, as a module of its own."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:s3bulk/http/client.py"],
                         check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "httpclient_baseline.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("httpclient_baseline", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["httpclient_baseline"] = mod
    spec.loader.exec_module(mod)
    return mod


def ours(n: int, httpclient: ModuleType | None = None, answer: bytes = ANSWER) -> float:
    if httpclient is None:
        from s3bulk.http import client as httpclient
    pieces = [answer[at:at + 65536] for at in range(0, len(answer), 65536)]

    class Waiter:
        result = None

        def done(self) -> bool:
            return False

        def set_result(self, r) -> None:
            self.result = r

    conn = httpclient._Conn()
    t = time.process_time()
    for _ in range(n):
        w = Waiter()
        conn.waiter = w  # type: ignore[assignment]
        for piece in pieces:
            conn.data_received(piece)
        assert w.result is not None and w.result[0] == 200
    return (time.process_time() - t) / n


def with_httptools(n: int) -> float:
    import httptools

    class P:
        __slots__ = ("headers", "body", "done")

        def __init__(self) -> None:
            self.headers: dict[str, str] = {}
            self.body = b""
            self.done = False

        def on_header(self, name: bytes, value: bytes) -> None:
            self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

        def on_body(self, body: bytes) -> None:
            self.body += body

        def on_message_complete(self) -> None:
            self.done = True

    t = time.process_time()
    for _ in range(n):
        p = P()
        parser = httptools.HttpResponseParser(p)
        parser.feed_data(ANSWER)
        assert p.done and parser.get_status_code() == 200
    return (time.process_time() - t) / n


def with_h11(n: int) -> float:
    import h11

    t = time.process_time()
    for _ in range(n):
        c = h11.Connection(h11.CLIENT)
        c.send(h11.Request(method="GET", target="/b/k", headers=[("Host", "s3")]))
        c.send(h11.EndOfMessage())
        c.receive_data(ANSWER)
        headers: dict[str, str] = {}
        body = b""
        while True:
            ev = c.next_event()
            if isinstance(ev, h11.Response):
                headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in ev.headers}
            elif isinstance(ev, h11.Data):
                body += ev.data
            elif isinstance(ev, h11.EndOfMessage) or ev is h11.NEED_DATA:
                break
        assert len(body) == 100
    return (time.process_time() - t) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--answers", type=int, default=50_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--baseline", default="4cd874e", help="git revision of http/client.py with its own parser")
    args = ap.parse_args()
    old = _at_revision(args.baseline)
    cases = (("s3bulk, own parser", lambda n: ours(n, old)), ("s3bulk httpclient", ours),
             ("httptools (llhttp)", with_httptools), ("h11", with_h11))
    times: dict[str, list[float]] = {}
    missing: set[str] = set()
    for _ in range(args.reps):  # alternating, so a busy spell on a shared machine hits all alike
        for name, fn in cases:
            if name in missing:
                continue
            try:
                times.setdefault(name, []).append(fn(args.answers))
            except ImportError as exc:
                missing.add(name)
                times.pop(name, None)
                print(f"{name}: not installed ({exc})")
    rows = [(name, min(ts)) for name, ts in times.items()]
    base = rows[0][1]
    print("| parser | CPU us per answer | vs s3bulk |\n| --- | --- | --- |")
    for name, t in rows:
        print(f"| {name} | {t * 1e6:.1f} | {t / base:.2f}x |")
    n = max(1, args.answers // 100)
    chunked: dict[str, list[float]] = {"s3bulk, own parser": [], "s3bulk httpclient": []}
    for _ in range(args.reps):
        chunked["s3bulk, own parser"].append(ours(n, old, CHUNKED))
        chunked["s3bulk httpclient"].append(ours(n, None, CHUNKED))
    base = min(chunked["s3bulk, own parser"])
    print(f"\n| chunked answer, {len(CHUNKED)} B | CPU us per answer | vs own parser |\n| --- | --- | --- |")
    for name, ts in chunked.items():
        print(f"| {name} | {min(ts) * 1e6:.0f} | {min(ts) / base:.2f}x |")


if __name__ == "__main__":
    main()
