"""Seed 000's job at small scale: download N synthetic files of S bytes from `s3bulk serve` into a
local folder, with 1 and 2 worker processes, and report files/s and the client's CPU per file.

    uv run python bench/listget_bench.py [--files 100000] [--size 100] [--workers 1,2] [--dst-root DIR]

The client's CPU is user + system time of its whole process tree (the coordinator waits for its
workers, so wait4() on the coordinator returns all of it). The server runs on the same machine and
competes for the same cores; its CPU is reported too. Results: a markdown table on stdout and JSON
in bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED_COMBO_US_PER_FILE = 30.3          # wall time per file, 16 cores (seed 000)
SEED_COMBO_CPU_US = 16 * 30.3          # about 485 CPU-us per file


def start_server(files: int, size: int, processes: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", "serve", "--synthetic", str(files), "--size", str(size),
                             "--port", "0", "--processes", str(processes)], stderr=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stderr.readline()
    if not line.startswith("serving on"):
        raise SystemExit(f"server did not start: {line}")
    return proc, line.split()[-1]


def proc_cpu(pid: int) -> float:
    """CPU seconds of a running process and its children so far (from /proc)."""
    total = 0.0
    tck = os.sysconf("SC_CLK_TCK")
    for task in [pid] + [int(p) for p in _children(pid)]:
        try:
            fields = Path(f"/proc/{task}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tck
        except (OSError, IndexError):
            pass
    return total


def _children(pid: int) -> list[str]:
    try:
        out = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return out + [g for c in out for g in _children(int(c))]


def run_client(url: str, dst: Path, workers: int, files: int, size: int) -> dict:
    shutil.rmtree(dst, ignore_errors=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", "copy", url, str(dst), "--json", "-w", str(workers)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    summary = [json.loads(x) for x in out.splitlines() if '"summary"' in x][-1]
    got = os.listdir(dst)
    sample = sorted(got)[:: max(1, len(got) // 50)]
    ok = (len(got) == files and summary["copied"] == files and
          all((dst / n).stat().st_size == size and (dst / n).read_bytes().startswith(n.encode()) for n in sample))
    cpu = ru.ru_utime + ru.ru_stime
    return {"workers": workers, "files": files, "wall_s": round(wall, 3), "files_per_s": round(files / wall),
            "cpu_s": round(cpu, 3), "user_s": round(ru.ru_utime, 3), "sys_s": round(ru.ru_stime, 3),
            "cpu_us_per_file": round(cpu * 1e6 / files, 1), "peak_rss_mib": round(summary["peak_rss_bytes"] / 2**20, 1),
            "complete_and_correct": ok}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--server-processes", type=int, default=1)
    ap.add_argument("--dst-root", default=None, help="where the files go (default: a temp dir on disk)")
    ap.add_argument("--also-tmpfs", action="store_true", help="repeat with DST on /dev/shm (no disk cost)")
    args = ap.parse_args()

    server, url = start_server(args.files, args.size, args.server_processes)
    rows = []
    try:
        roots = [("disk", args.dst_root or tempfile.mkdtemp(prefix="s3bulk-bench-", dir=str(ROOT / ".cache")
                                                             if (ROOT / ".cache").is_dir() else None))]
        if args.also_tmpfs and os.path.isdir("/dev/shm"):
            roots.append(("tmpfs", tempfile.mkdtemp(prefix="s3bulk-bench-", dir="/dev/shm")))
        for where, root in roots:
            for w in [int(x) for x in args.workers.split(",")]:
                server_cpu0 = proc_cpu(server.pid)
                row = run_client(url, Path(root) / "dst", w, args.files, args.size)
                row["dst"] = where
                row["server_cpu_s"] = round(proc_cpu(server.pid) - server_cpu0, 3)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
            shutil.rmtree(root, ignore_errors=True)
    finally:
        server.terminate()
        server.wait(10)

    best = min(r["cpu_us_per_file"] for r in rows)
    hours = 1e9 * best / 16 / 1e6 / 3600
    print(f"\n{args.files:,} files of {args.size} B from `s3bulk serve --synthetic` "
          f"({args.server_processes} server process) on {os.cpu_count()} cores, {date.today()}\n")
    print("| DST | workers | files/s | wall s | client CPU us/file (user+sys) | server CPU s | peak RSS MiB | complete |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['dst']} | {r['workers']} | {r['files_per_s']:,} | {r['wall_s']} | {r['cpu_us_per_file']} "
              f"({r['user_s']}+{r['sys_s']} s) | {r['server_cpu_s']} | {r['peak_rss_mib']} | {r['complete_and_correct']} |")
    print(f"\nProjection: at {best} CPU-us per file, 10^9 files keep 16 client cores busy for "
          f"{hours:.1f} h (seed 000's combo: {SEED_COMBO_CPU_US:.0f} CPU-us per file, 8.4 h), if the server and "
          f"the network keep up.")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"listget-{date.today()}.json").write_text(json.dumps(
        {"date": str(date.today()), "machine": platform.platform(), "cores": os.cpu_count(),
         "files": args.files, "size": args.size, "rows": rows, "projection_hours_16_cores": round(hours, 2)}, indent=2))
    if not all(r["complete_and_correct"] for r in rows):
        raise SystemExit("some run did not copy every file correctly")


if __name__ == "__main__":
    main()
