"""Peak RSS of `s3bulk copy` against object count, with the default settings and with
`--max-memory 128MiB`: both must stay flat as the count grows.

    uv run python bench/memory_bench.py [--counts 10000,100000,1000000] [--dst-root /dev/shm]

Source: `s3bulk serve --synthetic N --size 100` on loopback; destination: a fresh folder (tmpfs by
default, so page cache of the written files is not mistaken for s3bulk's memory). Peak RSS is the
summary's: each process's own VmHWM (coordinator and workers), summed; not ru_maxrss, which Linux carries over from the parent across fork and exec.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from listget_bench import start_server  # noqa: E402


def copy(url: str, dst: Path, extra: list[str]) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "s3bulk", "copy", url, str(dst), "--json", *extra],
                         capture_output=True, text=True, cwd=ROOT).stdout
    summary = [json.loads(x) for x in out.splitlines() if '"summary"' in x][-1]
    return {"wall_s": round(time.perf_counter() - t0, 1), "peak_rss_mib": round(summary["peak_rss_bytes"] / 2**20, 1),
            "workers": summary["workers"], "copied": summary["copied"], "ok": summary["ok"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--counts", default="10000,100000,1000000")
    ap.add_argument("--dst-root", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = ap.parse_args()
    rows = []
    for n in [int(c) for c in args.counts.split(",")]:
        server, url = start_server(n, 100, 1)
        try:
            for label, extra in (("default", []), ("--max-memory 128MiB", ["--max-memory", "128MiB"])):
                work = Path(tempfile.mkdtemp(prefix="s3bulk-mem-", dir=args.dst_root))
                try:
                    r = copy(url, work / "dst", extra)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                r.update(objects=n, settings=label)
                rows.append(r)
                print(json.dumps(r), file=sys.stderr)
        finally:
            server.terminate()
            server.wait(10)
    print(f"\n`s3bulk copy` from `s3bulk serve --synthetic N --size 100` to {args.dst_root or 'disk'}, "
          f"{os.cpu_count()} cores, {date.today()}\n")
    print("| objects | settings | workers | wall s | peak RSS MiB (all processes) | complete |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['objects']:,} | {r['settings']} | {r['workers']} | {r['wall_s']} | {r['peak_rss_mib']} | "
              f"{r['ok'] and r['copied'] == r['objects']} |")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"memory-{date.today()}.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
