"""What `--report FILE` costs per object: CPU of the same runs with and without it.

    uv run python bench/report_bench.py [--files 20000] [--size 100] [--reps 3] [--workers 2]

A versitygw (posix backend, data on tmpfs) on loopback holds FILES objects of SIZE bytes. Three
runs are measured with and without `--report` (CSV), alternating, REPS times each:

- download: the bucket to an empty tmpfs directory (a `copied` row per object);
- sync-unchanged: the same sync again, nothing to copy (a `skipped` row per object: the new
  per-object notes the workers batch to the coordinator only when a report is asked for);
- upload: the tmpfs directory to an empty prefix (rows carry no ETag: a local source has none).

CPU is the run's own account (`cpu_seconds` of the --json summary: coordinator and workers);
wall time moves with the machine's load and is given only for reference. Writes
bench/results/report-DATE.{json,md}.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def versitygw_exe() -> Path:
    for p in (Path.home() / ".cache" / "s3bulk" / "bin" / "versitygw", ROOT / ".cache" / "bin" / "versitygw"):
        if p.exists():
            return p
    raise SystemExit("versitygw not found (bench/peers_bench.py builds it into .cache/bin)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(root: Path) -> tuple[subprocess.Popen, str, dict]:
    access, secret = "rbench" + secrets.token_hex(4), secrets.token_hex(16)
    (root / "gw").mkdir()
    port = free_port()
    proc = subprocess.Popen([str(versitygw_exe()), "--port", f"127.0.0.1:{port}", "--access", access, "--secret",
                             secret, "--quiet", "--keep-alive", "posix", str(root / "gw")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url + "/", timeout=2)
            break
        except urllib.error.HTTPError:
            break
        except Exception:
            if time.monotonic() > deadline:
                raise SystemExit("versitygw did not start")
            time.sleep(0.2)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=access, AWS_SECRET_ACCESS_KEY=secret, AWS_DEFAULT_REGION="us-east-1",
               AWS_EC2_METADATA_DISABLED="true")
    return proc, url, env


def s3bulk(args: list[str], env: dict) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "s3bulk", *args, "--json", "--no-journal"], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    wall = time.perf_counter() - t0
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    summary = next((x for x in lines if x.get("event") == "summary"), None)
    if summary is None or not summary["ok"]:
        raise SystemExit(f"s3bulk {' '.join(args)} failed: {out.stdout[-2000:]} {out.stderr[-2000:]}")
    return {"wall": wall, "cpu": summary["cpu_seconds"], "copied": summary["copied"],
            "skipped": summary["skipped"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="report-bench-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    gw = None
    try:
        gw, url, env = start_gateway(root)
        src = root / "src"
        for i in range(args.files):
            d = src / f"d{i % 100:02d}"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"f{i:07d}").write_bytes(os.urandom(args.size))
        common = ["--endpoint-url", url, "-w", str(args.workers)]
        import botocore.session

        s3 = botocore.session.get_session().create_client("s3", endpoint_url=url, region_name="us-east-1",
                                                          aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                                                          aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
        try:
            s3.create_bucket(Bucket="rbench")
        except Exception:
            pass
        s3bulk(["copy", str(src), "s3://rbench/data/", *common], env)
        rows: list[dict] = []
        for rep in range(args.reps):
            for report in (False, True):
                extra = ["--report", str(root / "r.csv")] if report else []
                dst = root / "dst"
                shutil.rmtree(dst, ignore_errors=True)
                scen = {
                    "download": ["copy", "s3://rbench/data/", str(dst), *common],
                    "sync-unchanged": ["sync", "s3://rbench/data/", str(dst), *common],
                    "upload": ["copy", str(src), f"s3://rbench/up{rep}{int(report)}/", *common],
                }
                for name, argv in scen.items():
                    r = s3bulk(argv + extra, env)
                    r.update(scenario=name, report=report, rep=rep)
                    if report:
                        r["report_rows"] = sum(1 for _ in open(root / "r.csv")) - 1
                    rows.append(r)
                    print(json.dumps(r), file=sys.stderr)
    finally:
        if gw is not None:
            os.killpg(gw.pid, signal.SIGTERM)
            gw.wait(20)
        shutil.rmtree(root, ignore_errors=True)
    date = datetime.date.today().isoformat()
    table = ["| scenario | --report | CPU s (median) | CPU us/object | overhead us/object | wall s (median) |",
             "| --- | --- | --- | --- | --- | --- |"]
    summary: dict[str, dict] = {}
    for name in ("download", "sync-unchanged", "upload"):
        base = None
        for report in (False, True):
            sel = [r for r in rows if r["scenario"] == name and r["report"] == report]
            cpu = statistics.median(r["cpu"] for r in sel)
            wall = statistics.median(r["wall"] for r in sel)
            per = cpu * 1e6 / args.files
            over = "" if base is None else f"{per - base:+.0f}"
            base = per if base is None else base
            summary[f"{name}|{report}"] = {"cpu": cpu, "us_per_object": per, "wall": wall}
            table.append(f"| {name} | {'yes' if report else 'no'} | {cpu:.2f} | {per:.0f} | {over} | {wall:.2f} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = RESULTS / f"report-{date}"
    stem.with_suffix(".json").write_text(json.dumps({"date": date, "files": args.files, "size": args.size,
                                                     "workers": args.workers, "rows": rows, "summary": summary},
                                                    indent=1))
    stem.with_suffix(".md").write_text("\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    main()
