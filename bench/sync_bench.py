"""Sync memory against object count: peak RSS of `s3bulk sync` must not depend on how many objects
there are, because both listings are merged a page at a time.

    uv run python bench/sync_bench.py [--counts 10000,100000,1000000] [--root /dev/shm]

For each count it builds a local tree of N small files (100 per directory), runs a first sync into an
empty folder (copies everything) and a second one (copies nothing), and reports wall time, CPU time
of the whole process tree and the peak RSS the summary reports (each process's own VmHWM, summed).
The default root is tmpfs so that the filesystem's per-file cost does not hide s3bulk's.
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


def make_tree(root: Path, n: int) -> None:
    for d in range(0, n, 100):
        sub = root / f"d{d // 100:06d}"
        sub.mkdir(parents=True)
        for i in range(d, min(n, d + 100)):
            fd = os.open(sub / f"f{i:08d}", os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"%100d" % i)
            os.close(fd)


def run(args: list[str]) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", *args, "--json"], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    summary = [json.loads(x) for x in out.splitlines() if '"summary"' in x][-1]
    return {"wall_s": round(time.perf_counter() - t0, 2), "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
            "peak_rss_mib": round(summary["peak_rss_bytes"] / 2**20, 1), "copied": summary["copied"],
            "skipped": summary["skipped"], "ok": summary["ok"] and os.waitstatus_to_exitcode(status) == 0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--counts", default="10000,100000,1000000")
    ap.add_argument("--root", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = ap.parse_args()
    rows = []
    for n in [int(c) for c in args.counts.split(",")]:
        work = Path(tempfile.mkdtemp(prefix="s3bulk-sync-", dir=args.root))
        try:
            make_tree(work / "src", n)
            first = run(["sync", str(work / "src"), str(work / "dst")])
            second = run(["sync", str(work / "src"), str(work / "dst"), "--delete"])
            row = {"objects": n, "first": first, "resync": second}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n`s3bulk sync` local -> local on {args.root or 'disk'}, {os.cpu_count()} cores, {date.today()}\n")
    print("| objects | first sync: s / CPU s / peak RSS MiB | no-change re-sync: s / CPU s / peak RSS MiB |")
    print("| --- | --- | --- |")
    for r in rows:
        f, s = r["first"], r["resync"]
        print(f"| {r['objects']:,} | {f['wall_s']} / {f['cpu_s']} / {f['peak_rss_mib']} | "
              f"{s['wall_s']} / {s['cpu_s']} / {s['peak_rss_mib']} |")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"sync-memory-{date.today()}.json").write_text(json.dumps(rows, indent=2))
    bad = [r for r in rows if not (r["first"]["ok"] and r["resync"]["ok"] and r["first"]["copied"] == r["objects"]
                                   and r["resync"]["copied"] == 0 and r["resync"]["skipped"] == r["objects"])]
    if bad:
        raise SystemExit(f"incomplete or wrong: {bad}")


if __name__ == "__main__":
    main()
