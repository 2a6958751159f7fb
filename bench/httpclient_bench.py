"""CPU per request of the lean HTTP client (s3bulk/http/client.py) against a git revision of it.

    uv run --frozen python bench/httpclient_bench.py [--baseline dc68256] [--requests 20000] [--reps 5]

Both clients run in this process against the same in-process asyncio server on loopback that
answers every request at once with a fixed 100-byte body (S3's small-object case), 32 requests in
flight; a second case fetches 1 MiB bodies into a caller's buffer. Reported: process CPU seconds
per request (client and server together; the server's share is the same for both), the median of
`--reps` alternating runs. The issue's budget: the new client within ~10% of the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


class _Server(asyncio.Protocol):
    """Answers each request head (no request bodies in this bench) with the same response."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.pending = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        data = self.pending + data
        n = data.count(b"\r\n\r\n")
        self.pending = data[data.rfind(b"\r\n\r\n") + 4:] if n else data
        if n:
            self.transport.write(self.answer * n)  # type: ignore[attr-defined]


def _load(source: str, name: str) -> ModuleType:
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


async def _run(mod: ModuleType, body_size: int, requests: int, inflight: int) -> float:
    loop = asyncio.get_running_loop()
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nETag: \"0123456789abcdef\"\r\n" \
             b"x-amz-request-id: 0123456789ABCDEF\r\nLast-Modified: Sun, 22 Nov 2026 10:00:00 GMT\r\n\r\n" \
             % body_size + b"x" * body_size
    server = await loop.create_server(lambda: _Server(answer), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = mod.HttpClient("127.0.0.1", port, max_connections=inflight)
    headers = {"x-amz-date": "20261122T100000Z", "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
               "authorization": "AWS4-HMAC-SHA256 Credential=x/20261122/us-east-1/s3/aws4_request, "
                                "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64}
    left = requests

    async def worker() -> None:
        nonlocal left
        buf = memoryview(bytearray(body_size)) if body_size >= 65536 else None
        while left > 0:
            left -= 1
            resp = await client.request("GET", "/bucket/key", headers, None, buf)
            assert resp.status == 200 and len(resp.body) == body_size

    await asyncio.gather(*(worker() for _ in range(min(inflight, 4))))  # warm the connections
    left = requests
    cpu = time.process_time()
    await asyncio.gather(*(worker() for _ in range(inflight)))
    cpu = time.process_time() - cpu
    await client.close()
    server.close()
    return cpu / requests


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default="dc68256", help="git revision of s3bulk/http/client.py to compare with")
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    old_src = subprocess.run(["git", "-C", str(ROOT), "show", f"{args.baseline}:s3bulk/http/client.py"],
                             check=True, capture_output=True, text=True).stdout
    clients = {"baseline": _load(old_src, "httpclient_baseline"),
               "current": _load((ROOT / "s3bulk" / "http/client.py").read_text(), "httpclient_current")}
    for label, size, n in (("100 B GET", 100, args.requests), ("1 MiB GET into a buffer", 1 << 20, args.requests // 20)):
        times: dict[str, list[float]] = {k: [] for k in clients}
        for _ in range(args.reps):
            for name, mod in clients.items():
                times[name].append(asyncio.run(_run(mod, size, n, 32)))
        base, cur = (statistics.median(times[k]) for k in ("baseline", "current"))
        print(f"{label:>24}: baseline {base * 1e6:7.1f} us/request, current {cur * 1e6:7.1f} us/request "
              f"({(cur / base - 1) * 100:+.1f}%), {n} requests x {args.reps} reps")


if __name__ == "__main__":
    main()
