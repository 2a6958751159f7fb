"""What `s3bulk serve` spends per request, read and answered: its connection handler (serve/server.py
`_Handler`) fed requests as the transport would (data_received), the answers written to a
transport that keeps nothing, CPU time per request, best of `--reps`:

    uv run --frozen python bench/serve_request_bench.py [--baseline REV] [--n 50000] [--reps 5] [--rounds 4]

- "hand-written": the handler at `--baseline` (git revision ca25f19, the last that split requests
  at the first blank line itself), loaded from git for the same run;
- "llhttp": the handler of this tree, which reads requests with httptools' HttpRequestParser
  (serve/reader.py).

Requests: the GET s3bulk's list/get client sends for a 100-byte synthetic file (request line and
Host), one per read as a client waiting for each answer sends them; the same with a curl-like head
(User-Agent, Accept, Range); and 16 pipelined in one read. Answers are built in full (the small
body read and joined to its head), so the numbers are the server's CPU per request short of the
event loop and the syscalls, which are the same for both.

Then the same end to end: the real `s3bulk serve --synthetic 1000 --processes 1` of each tree (the
baseline exported with `git archive`), `--n` GETs of a 100-byte file sent one at a time over one
kept-alive connection, the server's CPU (user + system, from /proc) per request; the two trees
alternate for `--rounds` rounds, and the table gives each round and the mean. A Markdown table on
stdout and in bench/results/serve-request-DATE.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LEAN = b"GET /get/f000000000007 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n"
CURL = (b"GET /get/f000000000007 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nUser-Agent: curl/8.5.0\r\n"
        b"Accept: */*\r\nRange: bytes=10-59\r\n\r\n")


class Transport:
    """Takes what is written and keeps nothing."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def get_extra_info(self, name: str) -> None:
        return None

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int = 0, low: int = 0) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        pass

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def _at_revision(rev: str) -> ModuleType:
    """s3bulk/serve/server.py as it was at git revision `rev`, as a module of the s3bulk.serve package
    (its relative imports resolve against this tree)."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:s3bulk/serve/server.py"],
                         check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "server_baseline.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("s3bulk.serve.server_baseline", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def per_request_us(server: ModuleType, reads: list[bytes], per_read: int, n: int, reps: int) -> float:
    """Best CPU microseconds per request over `reps` runs of n requests on one connection."""
    catalog = server.SyntheticCatalog(1000, 100)
    best = float("inf")
    for _ in range(reps):
        handler = server._Handler(catalog, 1000)
        transport = Transport()
        handler.connection_made(transport)
        rounds = n // per_read
        feed = handler.data_received
        t0 = time.process_time()
        for i in range(rounds):
            feed(reads[i % len(reads)])
        best = min(best, time.process_time() - t0)
        assert transport.written > 100 * n, "the answers were not written"
    return best / (rounds * per_read) * 1e6


def _server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def served_us(tree: Path, n: int) -> float:
    """Server CPU microseconds per request of the real `s3bulk serve` of `tree`, n GETs in turn."""
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", "serve", "--synthetic", "1000", "--port", "0",
                             "--processes", "1"], cwd=tree, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        if not line.startswith("serving on"):
            raise SystemExit(f"server did not start: {line}")
        port = int(line.split()[-1].rstrip("/").rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            req = LEAN.replace(b"8000", str(port).encode())
            s.sendall(req)
            first = b""
            while b"\r\n\r\n" not in first:
                first += s.recv(65536)
            head = first.split(b"\r\n\r\n", 1)[0]
            length = len(head) + 4 + int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            while len(first) < length:
                first += s.recv(65536)
            c0 = _server_cpu(proc.pid)
            for _ in range(n):  # every answer is as long as the first
                s.sendall(req)
                got = 0
                while got < length:
                    got += len(s.recv(65536))
            return (_server_cpu(proc.pid) - c0) / n * 1e6
    finally:
        proc.terminate()
        proc.wait(60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="ca25f19")
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    from s3bulk.serve import server as current

    out = io.StringIO()

    def say(line: str = "") -> None:
        print(line, flush=True)
        out.write(line + "\n")

    baseline = _at_revision(args.baseline)
    say(f"`s3bulk serve`'s CPU per request, hand-written reader ({args.baseline}) against llhttp, "
        f"{date.today()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n")
    say(f"In process, the handler alone (best of {args.reps} x {args.n:,} requests):\n")
    say("| requests | hand-written us/request | llhttp us/request | change |")
    say("| --- | --- | --- | --- |")
    for label, reads, per_read in [("one GET per read (s3bulk's client)", [LEAN], 1),
                                   ("one GET per read (curl's head, with Range)", [CURL], 1),
                                   ("16 pipelined GETs per read", [LEAN * 16], 16)]:
        old = per_request_us(baseline, reads, per_read, args.n, args.reps)
        new = per_request_us(current, reads, per_read, args.n, args.reps)
        say(f"| {label} | {old:.2f} | {new:.2f} | {100 * (new - old) / old:+.0f}% |")

    base_tree = Path(tempfile.mkdtemp(prefix="s3bulk-serve-base-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(base_tree)], input=archive.stdout, check=True)
    say(f"\nThe real server, {args.n:,} GETs of 100 B in turn on one connection, server CPU us per request:\n")
    say("| round | hand-written | llhttp |")
    say("| --- | --- | --- |")
    olds, news = [], []
    for r in range(args.rounds):
        olds.append(served_us(base_tree, args.n))
        news.append(served_us(ROOT, args.n))
        say(f"| {r + 1} | {olds[-1]:.1f} | {news[-1]:.1f} |")
    shutil.rmtree(base_tree, ignore_errors=True)
    old, new = sum(olds) / len(olds), sum(news) / len(news)
    say(f"| mean | {old:.1f} | {new:.1f} ({100 * (new - old) / old:+.0f}%) |")
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / f"serve-request-{date.today()}.md").write_text(out.getvalue())


if __name__ == "__main__":
    main()
