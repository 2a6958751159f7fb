"""What a `--cluster local:N` LocalCluster costs before it does any work: the CPU of starting it
and the CPU its processes burn per second while idle, for a ladder of Dask settings (issue 12).

    uv run --extra dask python bench/cluster_idle_bench.py [--workers 2] [--seconds 10] [--repeat 2]
        [--variants defaults,profile-off,...]

Why idle: a run from a slow server (LocalStack) spends most of its wall time waiting, and Dask's
periodic callbacks (the profiler sampling every thread every 10 ms, event-loop tick checks every
20 ms, memory monitors every 100 ms, the system monitor, work stealing) then cost by the second,
not by the object. Each variant starts a fresh process (`--child`) that opens the cluster exactly as
s3bulk does (cluster/driver.py, with that variant's settings in place of its local_settings()), imports
the engine on the workers, and waits; this process reads /proc through psutil:

- start-up: CPU of the whole tree when the cluster is ready, minus what the child had used before
  it started opening the cluster (the interpreter, importing s3bulk and distributed);
- idle: CPU of each process over `--seconds` after a 2 s settle, as ms of CPU per second of wall
  time, for the driver (scheduler, nannies and client live there) and the worker processes.

The variants are a ladder: each adds settings to the one before, on Dask's LocalCluster whose
nannies start the workers (its last step, "forkserver", is how s3bulk started them before); "s3bulk"
is what cluster/driver.py does now (workers forked from the driver without nannies,
cluster/local_workers.py), and "+name" variants add one more setting to that. Markdown goes to stdout and JSON to
bench/results/cluster-idle-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# name -> settings added to the variant before it (a ladder; "defaults" is Dask's own config)
LADDER: list[tuple[str, dict[str, Any]]] = [
    ("defaults", {}),
    ("profile-off", {"distributed.worker.profile.enabled": False}),
    ("monitor-2s", {"distributed.admin.system-monitor.interval": "2s"}),
    ("tick-1s", {"distributed.admin.tick.interval": "1s", "distributed.admin.tick.cycle": "10s"}),
    ("memory-monitor-1s", {"distributed.worker.memory.monitor-interval": "1s"}),
    ("monitor-10s", {"distributed.admin.system-monitor.interval": "10s",
                     "distributed.admin.system-monitor.disk": False,
                     "distributed.admin.system-monitor.gil.enabled": False}),
    ("forkserver", {"distributed.worker.multiprocessing-method": "forkserver"}),
]


# "+name": what cluster/driver.py uses now plus these (tried, see bench/README.md for what was kept)
EXTRA: dict[str, dict[str, Any]] = {
    "+client-info-10s": {"distributed.client.scheduler-info-interval": "10s"},
    "+no-stealing-amm": {"distributed.scheduler.work-stealing": False,
                         "distributed.scheduler.active-memory-manager.start": False},
}


def settings_of(name: str) -> dict[str, Any]:
    if name.startswith("+"):
        return {**settings_of("s3bulk"), **EXTRA[name]}
    out: dict[str, Any] = {}
    for step, adds in LADDER:
        out.update(adds)
        if step == name:
            return out
    if name == "s3bulk":  # whatever cluster/driver.py uses now
        from s3bulk.cluster.driver import local_settings

        return local_settings()
    raise SystemExit(f"unknown variant {name}")


def _import_engine() -> int:
    from s3bulk.engine.transfer import one_object as transfer
    from s3bulk.engine.run import worker  # noqa: F401

    return os.getpid()


def child(name: str, workers: int) -> None:
    """Open the cluster as s3bulk does, with `name`'s settings, report, and wait for stdin to close."""
    import resource

    from s3bulk.cluster import driver as cluster

    settings = settings_of(name)
    cluster.local_settings = lambda: settings  # type: ignore[assignment]
    if name in dict(LADDER):  # Dask's LocalCluster, nannies starting the workers, as s3bulk did before
        cluster.forked_ok = lambda: False  # type: ignore[assignment]
    else:  # workers forked from this process (cluster/local_workers.py), with these settings
        cluster.QUIET_SETTINGS.update({k: v for k, v in settings.items() if "multiprocessing" not in k})
    ru = resource.getrusage(resource.RUSAGE_SELF)
    before = ru.ru_utime + ru.ru_stime
    t0 = time.perf_counter()
    c = cluster.Cluster.connect(f"local:{workers}")
    c.client.wait_for_workers(workers, timeout=60)
    pids = c.client.run(_import_engine)
    seen = c.client.run(_seen_settings, list(settings))
    print(json.dumps({"before_cpu_s": before, "start_wall_s": time.perf_counter() - t0,
                      "worker_pids": sorted(pids.values()), "seen": list(seen.values())[0]}), flush=True)
    sys.stdin.read()
    c.close()


def _seen_settings(keys: list[str]) -> dict[str, Any]:
    import dask

    return {k: dask.config.get(k) for k in keys}


def _cpu(procs: list[Any]) -> dict[int, float]:
    out = {}
    for p in procs:
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
        except Exception:
            pass
    return out


def measure(name: str, workers: int, seconds: float) -> dict[str, Any]:
    import psutil

    proc = subprocess.Popen([sys.executable, __file__, "--child", name, "--workers", str(workers)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        ready = json.loads(proc.stdout.readline())
        driver = psutil.Process(proc.pid)
        tree = [driver, *driver.children(recursive=True)]
        at_ready = _cpu(tree)
        startup = sum(at_ready.values()) - ready["before_cpu_s"]
        time.sleep(2.0)
        a, t_a = _cpu(tree), time.perf_counter()
        time.sleep(seconds)
        b, t_b = _cpu(tree), time.perf_counter()
        wall = t_b - t_a
        per = {pid: (b[pid] - a[pid]) * 1000 / wall for pid in b if pid in a}
        worker_ms = [per.get(pid, 0.0) for pid in ready["worker_pids"]]
        other = sum(v for pid, v in per.items() if pid != proc.pid and pid not in ready["worker_pids"])
        return {"variant": name, "startup_cpu_s": round(startup, 2), "start_wall_s": round(ready["start_wall_s"], 2),
                "idle_driver_ms_per_s": round(per.get(proc.pid, 0.0), 1),
                "idle_workers_ms_per_s": [round(w, 1) for w in worker_ms],
                "idle_other_ms_per_s": round(other, 1),
                "idle_total_ms_per_s": round(sum(per.values()), 1), "seen_on_worker": ready["seen"]}
    finally:
        proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--variants", default=",".join(n for n, _ in LADDER) + ",s3bulk," + ",".join(EXTRA))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.workers)
        return
    names = args.variants.split(",")
    rows = []
    for _ in range(args.repeat):
        for name in names:
            row = measure(name, args.workers, args.seconds)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)

    def med(name: str, field: str) -> float:
        return round(statistics.median(r[field] for r in rows if r["variant"] == name), 1)

    print(f"\nLocalCluster of {args.workers} workers idle for {args.seconds:.0f} s, {os.cpu_count()} cores, "
          f"{date.today()} (median of {args.repeat})\n")
    print("| variant (adds to the row above) | start-up CPU s | start-up wall s | idle driver ms/s "
          "| idle per worker ms/s | idle total ms/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in names:
        per_worker = statistics.median(w for r in rows if r["variant"] == name for w in r["idle_workers_ms_per_s"])
        print(f"| {name} | {med(name, 'startup_cpu_s'):.2f} | {med(name, 'start_wall_s'):.2f} "
              f"| {med(name, 'idle_driver_ms_per_s')} | {per_worker:.1f} | {med(name, 'idle_total_ms_per_s')} |")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    tag = f"-{args.tag}" if args.tag else ""
    (out / f"cluster-idle-{date.today()}{tag}.json").write_text(json.dumps(
        {"date": str(date.today()), "machine": platform.platform(), "cores": os.cpu_count(),
         "workers": args.workers, "seconds": args.seconds, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
