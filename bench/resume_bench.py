"""What a resume redoes: stop a copy at random points (Ctrl-C or SIGKILL), resume it, and count the
objects transferred more than once (issue 15; docs/guides/resume.md).

Source: `s3bulk serve --synthetic N` (no set-up time for 30,000 objects) behind a proxy that counts
the GETs per object (tests/faultproxy.py), so "transferred twice" is exact even across SIGKILLs.
Destination: local disk. Default options (workers = cores, --concurrency 64, pages of 1,000), so
the bound it checks is the one docs/guides/resume.md states: workers x concurrency objects per SIGKILL, 0 after one Ctrl-C.

    uv run --frozen --extra dask python bench/resume_bench.py [--sizes 300,3000,30000] [--kills 3] [--seed 1]

Prints one line per (size, signal) and a summary table; exit 1 when a bound is broken.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from faultproxy import FaultProxy  # noqa: E402


class CountGets:
    """Proxy rule: count GET /get/NAME per name, forward every request."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.pattern = re.compile(r"/get/([^?]+)")

    def __call__(self, method: str, target: str, headers: dict[str, str]) -> None:
        m = self.pattern.match(target) if method == "GET" else None
        if m:
            with self.lock:
                self.counts[unquote(m.group(1))] += 1
        return None

    @property
    def total(self) -> int:
        with self.lock:
            return sum(self.counts.values())

    def twice(self) -> int:
        with self.lock:
            return sum(n - 1 for n in self.counts.values() if n > 1)


def wait_for(pred, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def one(n: int, how: str, kills: int, rng: random.Random, workdir: Path) -> dict:
    """Copy n synthetic objects, stopped `kills` times at random points by `how`, then resumed."""
    out = workdir / f"serve-{n}.out"
    with open(out, "wb") as f:
        server = subprocess.Popen([sys.executable, "-m", "s3bulk", "serve", "--synthetic", str(n), "--size", "200",
                                   "--port", "0", "--processes", "1"], stdout=f, stderr=subprocess.STDOUT,
                                  cwd=ROOT, start_new_session=True)
    dst, journal = workdir / f"dst-{n}-{how}", workdir / f"j-{n}-{how}.sqlite"
    env = dict(os.environ, XDG_STATE_HOME=str(workdir / "state"))
    try:
        assert wait_for(lambda: re.search(rb"http://127\.0\.0\.1:(\d+)", out.read_bytes()), 60)
        port = int(re.search(rb"http://127\.0\.0\.1:(\d+)", out.read_bytes()).group(1))
        gets = CountGets()
        with FaultProxy("127.0.0.1", port, [gets]) as proxy:
            args = [sys.executable, "-m", "s3bulk", "copy", proxy.url + "/", str(dst), "-q", "--journal", str(journal)]
            stops = 0
            for i, fraction in enumerate(sorted(rng.uniform(0.05, 0.9) for _ in range(kills))):
                target = int(fraction * n)
                if gets.total >= target:
                    continue
                proc = subprocess.Popen(args + (["--resume"] if i else []), cwd=ROOT, env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
                wait_for(lambda: gets.total >= target or proc.poll() is not None, 300)
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL if how == "sigkill" else signal.SIGINT)
                    stops += 1
                proc.wait(300)
            at_stops = gets.total
            start = time.monotonic()
            final = subprocess.run(args + ["--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
            assert final.returncode == 0, final.stderr[-2000:]
            resumed = time.monotonic() - start
        files = len([p for p in os.listdir(dst) if not p.startswith(".s3bulk-")])
        assert files == n and set(gets.counts) == {p for p in os.listdir(dst)}, "the copy is not complete"
        return {"n": n, "how": how, "stops": stops, "gets_before_final": at_stops, "twice": gets.twice(),
                "final_seconds": round(resumed, 1)}
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        shutil.rmtree(dst, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="300,3000,30000")
    ap.add_argument("--kills", type=int, default=3, help="stops per (size, signal)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    from s3bulk.engine.plan import TransferOptions

    opts = TransferOptions()
    bound = opts.resolved_workers() * opts.concurrency
    rng = random.Random(a.seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="s3bulk-resume-bench-") as tmp:
        for n in (int(x) for x in a.sizes.split(",")):
            for how in ("sigint", "sigkill"):
                row = one(n, how, a.kills, rng, Path(tmp))
                per_stop = bound if how == "sigkill" else 0
                row["bound"] = per_stop * row["stops"]
                rows.append(row)
                print(row, flush=True)
    print(f"\nworkers x concurrency = {bound} (cores {os.cpu_count()})")
    print("| objects | stop | stops | transferred twice | bound |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['n']:,} | {'Ctrl-C' if r['how'] == 'sigint' else 'SIGKILL'} | {r['stops']} | {r['twice']} | {r['bound']} |")
    sys.exit(1 if any(r["twice"] > r["bound"] for r in rows) else 0)


if __name__ == "__main__":
    main()
