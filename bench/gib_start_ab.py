"""A/B of one-object downloads from versitygw (loopback) to tmpfs, interleaved: each tree's client
CPU (user+sys of the process tree, from wait4), versitygw's CPU over the same run, and the wall.

    uv run --frozen python bench/gib_start_ab.py --sizes-mib 0,64,1024 --runs 9 \\
        --tree before=/tmp/ab-gibstart --tree after=. [--log-requests]

Why: the start of a one-object run (the CLI's imports, its first request, the worker's start) is a
few tens of ms against a GiB's ~0.9 s of CPU; a scorecard sitting's seven tools at a shared
machine's load hide it. This runs only s3bulk, tree against tree, same objects, same server, every
tree first in turn, and reports CPU (which load moves little) beside wall. Size 0 is a 100 B object.
`--log-requests` adds the option as the scorecard's gib row gives it (a log file per run)."""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers_bench  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", required=True, metavar="NAME=ROOT",
                    help="a source tree with its .venv (uv sync --frozen there), e.g. before=/tmp/ab-x")
    ap.add_argument("--sizes-mib", default="0,64", help="object sizes in MiB, 0 = 100 B (default %(default)s)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--log-requests", action="store_true", help="run s3bulk with --log-requests FILE")
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    sizes = [int(x) for x in args.sizes_mib.split(",")]
    peers_bench.ensure_bytecode()
    work = Path(tempfile.mkdtemp(prefix="gib-start-ab-", dir="/dev/shm"))
    srv = peers_bench.start_versitygw(work, keep_alive=True)
    try:
        s3 = peers_bench.s3_client(srv)
        s3.create_bucket(Bucket="abtest")
        for mib in sizes:
            if mib:
                src = work / "src.bin"
                peers_bench.write_big(src, mib)
                with open(src, "rb") as f:
                    s3.put_object(Bucket="abtest", Key=f"o{mib}", Body=f)
                src.unlink()
            else:
                s3.put_object(Bucket="abtest", Key="o0", Body=b"q" * 100)
        env = dict(peers_bench.tool_env("s3bulk", srv, work), XDG_CACHE_HOME=str(work / "cache"),
                   XDG_STATE_HOME=str(work / "state"))
        print(f"`uptime` before: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
        for mib in sizes:
            got: dict[str, list[tuple[float, float, float]]] = {t: [] for t in trees}
            names = list(trees)
            for rep in range(args.runs + 1):  # rep 0 warms the page cache and the endpoint cache
                for name in names[rep % len(names):] + names[:rep % len(names)]:
                    dst, log = work / "out.bin", work / "requests.log"
                    dst.unlink(missing_ok=True)
                    log.unlink(missing_ok=True)
                    argv = [str(Path(trees[name]) / ".venv" / "bin" / "s3bulk"), "copy", f"s3://abtest/o{mib}", str(dst),
                            "--endpoint-url", srv.url, "-q"] + (["--log-requests", str(log)] if args.log_requests else [])
                    server0, t0 = peers_bench.tree_cpu_s(srv.server_pid()), time.perf_counter()
                    proc = subprocess.Popen(argv, env=env)
                    _, status, usage = os.wait4(proc.pid, 0)
                    wall = time.perf_counter() - t0
                    if status != 0:
                        raise SystemExit(f"{name}: {' '.join(argv)} exited {os.waitstatus_to_exitcode(status)}")
                    if rep:
                        got[name].append((wall, usage.ru_utime + usage.ru_stime,
                                          peers_bench.tree_cpu_s(srv.server_pid()) - server0))
            for name, runs in got.items():
                med = [statistics.median(r[i] for r in runs) for i in range(3)]
                print(f"{mib or '100 B'}{' MiB' if mib else ''} {name}: client CPU {med[1] * 1000:.0f} ms "
                      f"(min {min(r[1] for r in runs) * 1000:.0f}), server CPU {med[2] * 1000:.0f} ms, "
                      f"wall {med[0] * 1000:.0f} ms ({min(r[0] for r in runs) * 1000:.0f}-"
                      f"{max(r[0] for r in runs) * 1000:.0f}); {args.runs} runs")
        print(f"`uptime` after: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
