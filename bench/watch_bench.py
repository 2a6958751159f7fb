"""What `sync --watch` pays per batch of changes, against a LocalStack on loopback.

    uv run python bench/watch_bench.py [--endpoint http://127.0.0.1:4566] [--runs 9]

1. **A narrowed sync's start-up**: the sync the watcher runs for one changed key (a local file
   into a bucket), through the one orchestration path as the watcher calls it, with one worker on
   a thread of the process (what the watcher uses) and with the default worker processes (one per
   core). This is what decides whether a pool of workers must be kept alive between batches.
2. **Change to landed**: a real `s3bulk sync DIR s3://... --watch` process; a file is written and
   the time until the object is at DST is measured (includes the one second a file must stay
   unchanged before it is copied).

Median and min of `--runs` runs; writes bench/results/watch-DATE.{json,md}.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def narrowed_startup(endpoint: str, runs: int) -> dict[str, dict[str, float]]:
    from s3bulk.config.filters import Filters
    from s3bulk.config.urls import S3Options
    from s3bulk.engine.listing.manifest import write_changes
    from s3bulk.engine.plan import SyncOptions, TransferOptions
    from s3bulk.engine.run.orchestrate import run

    import botocore.session

    s3 = botocore.session.get_session().create_client("s3", endpoint_url=endpoint, region_name="us-east-1")
    bucket = f"bench-watch-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    src = tempfile.mkdtemp()
    manifest = os.path.join(tempfile.mkdtemp(), "changes.txt")
    write_changes(manifest, ["f"])
    out: dict[str, dict[str, float]] = {}
    for label, workers in (("one worker on a thread (the watcher's)", 1), ("worker processes, one per core", 0)):
        times = []
        for n in range(runs):
            Path(src, "f").write_bytes(b"x" * (n + 1 + 100 * workers))
            t = time.perf_counter()
            summary = run("sync", src, f"s3://{bucket}/p/", SyncOptions(delete=True),
                          options=TransferOptions(workers=workers), src_s3=None,
                          dst_s3=S3Options(endpoint_url=endpoint), subscriber=None, max_memory=None, journal=None,
                          resume=False, filters=Filters(), files_from=manifest, files_from_format="changes")
            times.append(time.perf_counter() - t)
            assert summary.counters.done == 1, summary
        out[label] = {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3)}
    return out


def change_to_landed(endpoint: str, runs: int) -> dict[str, float]:
    import botocore.session

    s3 = botocore.session.get_session().create_client("s3", endpoint_url=endpoint, region_name="us-east-1")
    bucket = f"bench-watch-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    src = Path(tempfile.mkdtemp())
    (src / "seed").write_bytes(b"seed")
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", "sync", str(src), f"s3://{bucket}/", "--watch",
                             "--delete", "-q", "--endpoint-url", endpoint], cwd=ROOT, start_new_session=True)

    def present(key: str) -> bool:
        try:
            s3.head_object(Bucket=bucket, Key=key)
            return True
        except Exception:
            return False

    try:
        while not present("seed"):
            time.sleep(0.05)
        times = []
        for n in range(runs):
            t = time.perf_counter()
            (src / f"f{n}").write_bytes(b"y" * 1000)
            while not present(f"f{n}"):
                time.sleep(0.02)
            times.append(time.perf_counter() - t)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    return {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3),
            "max_s": round(max(times), 3), "exit": proc.returncode}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", default="http://127.0.0.1:4566")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    result = {"date": datetime.date.today().isoformat(), "git": git, "endpoint": args.endpoint,
              "machine": f"{os.cpu_count()} cores, {platform.platform()}, load {os.getloadavg()[0]:.1f}",
              "command": "uv run python bench/watch_bench.py --runs %d" % args.runs,
              "narrowed_sync_one_key": narrowed_startup(args.endpoint, args.runs),
              "change_to_landed_local_to_s3": change_to_landed(args.endpoint, args.runs)}
    out = ROOT / "bench" / "results" / f"watch-{result['date']}"
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"{result['date']}, {result['machine']}, git {git}, LocalStack on loopback.",
             f"Command: `{result['command']}`.", "",
             "| what | median s | min s |", "| --- | --- | --- |"]
    for label, r in result["narrowed_sync_one_key"].items():
        lines.append(f"| narrowed sync of one changed key, {label} | {r['median_s']} | {r['min_s']} |")
    c = result["change_to_landed_local_to_s3"]
    lines.append(f"| a file written to the object at DST (1 s settle included), `--watch` | {c['median_s']} | {c['min_s']} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
