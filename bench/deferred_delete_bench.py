"""Peak PSS of `s3bulk sync --delete` with N keys only at DST (issue 32): deferred deletes (the
default: every key spooled to disk, deleted in one phase at the end) against `--delete-during`
(each unit deletes its keys once its copies are done) and, with `--base-root`, the code before
deferred deletes (each unit deleted as its march found them).

    uv run --extra dask python bench/deferred_delete_bench.py --counts 200000
    git archive ca25f19 | (mkdir -p /tmp/s3bulk-base && tar -x -C /tmp/s3bulk-base)
    uv run --extra dask python bench/deferred_delete_bench.py --counts 200000,1000000 --base-root /tmp/s3bulk-base

SRC: a directory of 100 small files; DST: the same 100 plus N empty files no SRC has, made afresh
before every run, both on tmpfs (so the page cache of the files is not counted as s3bulk's). PSS,
not RSS: forked workers share the coordinator's pages, and PSS counts each shared page once over
the tree. Sampled every 50 ms from /proc/PID/smaps_rollup over the process tree, the largest sum
kept. Each run must delete exactly N (checked). Results are printed as a markdown table and written
to bench/results/deferred-delete-DATE.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def tree_pss(pid: int) -> int:
    total = 0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return total


def make_trees(work: Path, n: int) -> tuple[Path, Path]:
    src, dst = work / "src", work / "dst"
    src.mkdir()
    dst.mkdir()
    for i in range(100):
        (src / f"a{i:03d}").write_bytes(b"x" * 100)
    for d in range(0, n, 1000):  # 1,000 keys a directory, as a date-partitioned tree would be
        sub = dst / f"d{d // 1000:05d}"
        sub.mkdir()
        for i in range(d, min(n, d + 1000)):
            open(sub / f"k{i:07d}", "wb").close()
    return src, dst


def run(label: str, argv: list[str], env: dict, n: int) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd="/")
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], tree_pss(proc.pid))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    done.set()
    sampler.join()
    wall = time.perf_counter() - t0
    summary = [json.loads(x) for x in out.splitlines() if '"summary"' in x][-1]
    assert summary["deleted"] == n and proc.returncode == 0, (label, summary, err[-2000:])
    return {"settings": label, "dst_only_keys": n, "peak_pss_mib": round(peak[0] / 2**20, 1),
            "wall_s": round(wall, 1), "workers": summary["workers"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--counts", default="200000")
    ap.add_argument("--work-root", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--base-root", help="an older source tree of s3bulk (git archive REV) run as 'before'")
    args = ap.parse_args()
    variants: list[tuple[str, list[str], dict]] = []
    if args.base_root:
        variants.append(("before (deleted as found)", [], dict(os.environ, PYTHONPATH=args.base_root)))
    here = dict(os.environ, PYTHONPATH=str(ROOT))
    variants += [("--delete-during", ["--delete-during"], here), ("deferred (default)", [], here)]
    rows = []
    for n in [int(c) for c in args.counts.split(",")]:
        for label, extra, env in variants:
            work = Path(tempfile.mkdtemp(prefix="s3bulk-deldefer-", dir=args.work_root))
            try:
                src, dst = make_trees(work, n)
                env = dict(env, XDG_STATE_HOME=str(work / "state"))
                argv = [sys.executable, "-m", "s3bulk", "sync", str(src), str(dst), "--delete", "--json", *extra]
                row = run(label, argv, env, n)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    lines = [f"`s3bulk sync --delete`, local -> local on tmpfs, N keys only at DST, {os.cpu_count()} cores, "
             f"{date.today()}", "", "| DST-only keys | settings | peak PSS (MiB) | wall (s) |", "| ---: | --- | ---: | ---: |"]
    lines += [f"| {r['dst_only_keys']:,} | {r['settings']} | {r['peak_pss_mib']} | {r['wall_s']} |" for r in rows]
    text = "\n".join(lines)
    print(text)
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    stem = results / f"deferred-delete-{date.today()}"
    stem.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    stem.with_suffix(".md").write_text(text + "\n")


if __name__ == "__main__":
    main()
