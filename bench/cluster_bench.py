"""The same copy with the built-in worker pool and on a Dask LocalCluster (`--cluster local:N`):
wall time and the CPU of the whole process tree, to see what running units as Dask tasks costs.

    uv run --extra dask python bench/cluster_bench.py [--files 20000] [--size 100] [--workers 2]
        [--source local|localstack|versitygw|serve] [--endpoint http://127.0.0.1:4566] [--repeat 2]
        [--args "MORE S3BULK OPTIONS FOR BOTH RUNS"] [--name NAME]

Source `local` (default): a directory of N files on tmpfs, listed in key order and so split into
many units, with no server competing for the cores: what the client itself costs. Source `localstack`: a bucket on the LocalStack at --endpoint holding N objects (filled once, from
`s3bulk serve --synthetic`, and kept for later runs); it lists in key order, so the run splits the
key space into many units. Source `versitygw`: the same, on a versitygw (posix backend on tmpfs,
keep-alive) started for the run from ~/.cache/s3bulk-bench/bin (bench/peers_bench.py builds it
there); a faster S3 server than LocalStack. Source `serve`: `s3bulk serve --synthetic N`, a token-paged source and so
one listing chain. DST is a directory on tmpfs (/dev/shm), emptied before each run.

CPU is user + system time of the whole tree. This process makes itself the tree's subreaper
(prctl PR_SET_CHILD_SUBREAPER), so processes that outlive the driver for a moment (a LocalCluster's
forkserver, which forked the Dask workers and reaped them) come back to it; it reaps every one of
them before reading its children's rusage, which then holds all of the tree's CPU. The servers
(LocalStack, versitygw, `s3bulk serve`) run on the same cores and are not counted. A markdown table
goes to stdout and JSON to bench/results/cluster-<date>-<source>-<files>[-NAME].json.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CREDS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}


PR_SET_CHILD_SUBREAPER = 36
SERVERS: set[int] = set()  # pids of the servers this process started (not reaped between runs)


def become_subreaper() -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed: the tree's CPU could not all be counted")


def reap_orphans(deadline: float = 60.0) -> None:
    """Wait for every child but the servers: processes of the run that outlived its driver."""
    import psutil

    until = time.monotonic() + deadline
    while True:
        left = [p.pid for p in psutil.Process().children() if p.pid not in SERVERS]
        if not left:
            return
        for pid in left:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if time.monotonic() > until:
            raise SystemExit(f"processes {left} of the run did not exit")
        time.sleep(0.05)


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def start_server(files: int, size: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", "serve", "--synthetic", str(files), "--size",
                             str(size), "--port", "0", "--processes", "1"], stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    assert proc.stderr is not None
    SERVERS.add(proc.pid)
    line = proc.stderr.readline()
    if not line.startswith("serving on"):
        raise SystemExit(f"server did not start: {line}")
    return proc, line.split()[-1]


def fill_bucket(endpoint: str, files: int, size: int, bucket: str | None = None) -> str:
    """A bucket holding exactly `files` synthetic objects (made once, reused by later runs)."""
    import botocore.session

    s3 = botocore.session.get_session().create_client("s3", endpoint_url=endpoint, region_name="us-east-1")
    bucket = bucket or f"s3bulk-cluster-bench-{files}-{size}"
    try:
        s3.create_bucket(Bucket=bucket)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    have = sum(p.get("KeyCount", 0) for p in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket))
    if have != files:
        server, url = start_server(files, size)
        try:
            subprocess.run([sys.executable, "-m", "s3bulk", "copy", url, f"s3://{bucket}/", "-q", "--no-journal",
                            "--endpoint-url", endpoint], check=True, cwd=ROOT)
        finally:
            server.terminate()
            server.wait(10)
            SERVERS.discard(server.pid)
    return f"s3://{bucket}/"


def run_copy(src: str, dst: Path, mode: str, workers: int, files: int, size: int, extra: list[str],
             state: str) -> dict:
    shutil.rmtree(dst, ignore_errors=True)
    how = ["-w", str(workers)] if mode == "pool" else ["--cluster", f"local:{workers}"]
    argv = [sys.executable, "-m", "s3bulk", "copy", src, str(dst), "--json", *how, *extra]
    reap_orphans()
    cpu0 = children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, XDG_STATE_HOME=state))
    assert proc.stdout is not None
    out = proc.stdout.read()
    status = proc.wait()
    wall = time.perf_counter() - t0
    reap_orphans()
    cpu = children_cpu() - cpu0
    summary = [json.loads(x) for x in out.splitlines() if '"summary"' in x][-1]
    got = [p for p in dst.rglob("*") if p.is_file()]
    ok = status == 0 and len(got) == files and summary["copied"] == files and \
        all(p.stat().st_size == size for p in got[:: max(1, len(got) // 50)])
    return {"mode": mode, "workers": workers, "files": files, "wall_s": round(wall, 2),
            "run_s": round(summary["elapsed_seconds"], 2), "files_per_s": round(files / wall),
            "tree_cpu_s": round(cpu, 2), "cpu_us_per_file": round(cpu * 1e6 / max(1, files), 1),
            "summary_cpu_s": round(summary.get("cpu_seconds", 0.0), 2), "complete_and_correct": ok}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--source", choices=("local", "localstack", "versitygw", "serve"), default="local")
    ap.add_argument("--endpoint", default=os.environ.get("S3BULK_TEST_ENDPOINT", "http://127.0.0.1:4566"))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--args", default="", help="more s3bulk options for both runs, e.g. '--pages-ahead 8'")
    ap.add_argument("--name", default="", help="added to the results file's name (bench/results/cluster-...-NAME.json)")
    args = ap.parse_args()
    for k, v in CREDS.items():
        os.environ.setdefault(k, v)

    become_subreaper()
    server = None
    gateway = None
    extra: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="s3bulk-cluster-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    if args.source == "local":
        src = str(root / "src")
        for i in range(args.files):
            d = Path(src) / f"d{i % 100:02d}"
            if i < 100:
                d.mkdir(parents=True)
            (d / f"f{i:07d}").write_bytes(b"x" * args.size)
    elif args.source == "localstack":
        src = fill_bucket(args.endpoint, args.files, args.size)
        extra = ["--endpoint-url", args.endpoint]
    elif args.source == "versitygw":
        sys.path.insert(0, str(ROOT / "bench"))
        from peers_bench import start_versitygw

        gateway = start_versitygw(root, keep_alive=True)
        SERVERS.add(gateway.proc.pid)
        os.environ.update(AWS_ACCESS_KEY_ID=gateway.access, AWS_SECRET_ACCESS_KEY=gateway.secret)
        src = fill_bucket(gateway.url, args.files, args.size, bucket="cluster-bench")
        extra = ["--endpoint-url", gateway.url]
    else:
        server, src = start_server(args.files, args.size)
    extra += args.args.split()
    rows: list[dict] = []
    empty: list[dict] = []
    (root / "empty").mkdir()
    try:
        for _ in range(args.repeat):
            for mode in ("pool", "cluster"):
                row = run_copy(src, root / "dst", mode, args.workers, args.files, args.size, extra, str(root / "state"))
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
                # the same run with nothing to copy: its fixed cost (start-up of processes, the cluster)
                row = run_copy(str(root / "empty"), root / "dst", mode, args.workers, 0, args.size, [], str(root / "state"))
                empty.append(row)
                print(json.dumps(row), file=sys.stderr)
    finally:
        if gateway is not None:
            gateway.stop()
        shutil.rmtree(root, ignore_errors=True)
        if server is not None:
            server.terminate()
            server.wait(10)

    def med(mode: str, field: str, of: list[dict] = rows) -> float:
        return round(statistics.median(r[field] for r in of if r["mode"] == mode), 2)

    print(f"\n{args.files:,} objects of {args.size} B, {args.source} -> tmpfs, {args.workers} workers, "
          f"{os.cpu_count()} cores, {date.today()} (median of {args.repeat})\n")
    print("| how | wall s | run s | objects/s (run) | CPU s, whole tree | fixed: wall s, CPU s (empty SRC) "
          "| CPU us/object beyond the fixed cost | complete |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    per_object = {}
    for mode, label in (("pool", f"built-in pool, -w {args.workers}"), ("cluster", f"--cluster local:{args.workers}")):
        ok = all(r["complete_and_correct"] for r in rows + empty if r["mode"] == mode)
        per_object[mode] = (med(mode, "tree_cpu_s") - med(mode, "tree_cpu_s", empty)) * 1e6 / args.files
        print(f"| {label} | {med(mode, 'wall_s')} | {med(mode, 'run_s')} | {args.files / med(mode, 'run_s'):,.0f} "
              f"| {med(mode, 'tree_cpu_s')} | {med(mode, 'wall_s', empty)}, {med(mode, 'tree_cpu_s', empty)} "
              f"| {per_object[mode]:.1f} | {ok} |")
    over = med("cluster", "tree_cpu_s") - med("pool", "tree_cpu_s")
    fixed = med("cluster", "tree_cpu_s", empty) - med("pool", "tree_cpu_s", empty)
    print(f"\nDask's overhead: {over:+.2f} CPU s = {100 * over / med('cluster', 'tree_cpu_s'):+.1f}% of the "
          f"cluster run's CPU, of which {fixed:+.2f} s is fixed (starting the scheduler, nannies and workers); "
          f"per object {per_object['cluster'] - per_object['pool']:+.1f} CPU us "
          f"({100 * (per_object['cluster'] - per_object['pool']) / per_object['cluster']:+.1f}%).")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    name = f"-{args.name}" if args.name else ""
    (out / f"cluster-{date.today()}-{args.source}-{args.files}{name}.json").write_text(json.dumps(
        {"date": str(date.today()), "machine": platform.platform(), "cores": os.cpu_count(), "source": args.source,
         "files": args.files, "size": args.size, "workers": args.workers, "rows": rows, "empty_rows": empty}, indent=2))
    if not all(r["complete_and_correct"] for r in rows + empty):
        raise SystemExit("some run did not copy every object correctly")


if __name__ == "__main__":
    main()
