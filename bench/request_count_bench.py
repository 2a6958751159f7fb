"""What counting every request by operation and status class (stores/requests.py: a dict increment
per request, taken into the worker's counters at each flush) costs per object.

    uv run python bench/request_count_bench.py [--objects 20000] [--reps 3] [--before COMMIT]

Uploads and then downloads `--objects` objects of 100 B to and from versitygw on loopback (posix
backend, data on /dev/shm), with one worker in-process (`-w 1`: the summary's CPU seconds are then
the one process's), alternating the code of `--before` (default: the commit before the counting
came) and of HEAD (which goes first alternates too, and each bucket is removed after its runs, so
the server holds the same for every run), each extracted with `git archive` and run with PYTHONPATH pointing at it. Prints
the CPU microseconds per object of each run and the medians; also the cost of the counting itself,
timed alone. versitygw: ~/.cache/s3bulk/bin/versitygw or .cache/bin/versitygw (bench/peers_bench.py
builds it).
"""

from __future__ import annotations

import argparse
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
import timeit
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "2a67006"  # the commit before requests were counted


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def versitygw() -> str:
    for p in (Path.home() / ".cache" / "s3bulk" / "bin" / "versitygw", ROOT / ".cache" / "bin" / "versitygw"):
        if p.exists():
            return str(p)
    raise SystemExit("versitygw not found: run bench/peers_bench.py once to build it")


def extract(commit: str, into: Path) -> Path:
    into.mkdir()
    archive = subprocess.run(["git", "archive", commit, "s3bulk"], cwd=ROOT, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def counting_alone(n: int = 1_000_000) -> float:
    """Nanoseconds per request of what S3Wire._send adds: two dict lookups and an increment."""
    sys.path.insert(0, str(ROOT))
    from s3bulk.stores.requests import ERROR, STATUS_CLASS, WIRE_OPS

    counts: dict[tuple[str, str], int] = {}
    setup = "op, status = 'put', 200"
    stmt = "counted = (WIRE_OPS.get(op, op), STATUS_CLASS.get(status // 100, ERROR)); " \
           "counts[counted] = counts.get(counted, 0) + 1"
    names = {"WIRE_OPS": WIRE_OPS, "STATUS_CLASS": STATUS_CLASS, "ERROR": ERROR, "counts": counts}
    counting = min(timeit.repeat(stmt, setup, number=n, repeat=5, globals=names))
    empty = min(timeit.repeat("pass", setup, number=n, repeat=5, globals=names))
    return (counting - empty) / n * 1e9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--before", default=BEFORE)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the clean-up below runs
    work = Path(tempfile.mkdtemp(prefix="s3bulk-reqcount-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    server = None
    try:
        variants = {"before": extract(args.before, work / "before"), "after": extract("HEAD", work / "after")}
        src = work / "src"
        for i in range(args.objects):
            d = src / f"{i % 100:02d}"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{i:06d}").write_bytes(i.to_bytes(4, "big") * 25)
        access, secret = "bench" + secrets.token_hex(4), secrets.token_hex(16)
        (work / "gw").mkdir()
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([versitygw(), "--port", f"127.0.0.1:{port}", "--access", access, "--secret",
                                   secret, "--quiet", "--keep-alive", "posix", str(work / "gw")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        for _ in range(150):
            try:
                urllib.request.urlopen(url + "/", timeout=1)
            except urllib.error.HTTPError:
                break
            except OSError:
                time.sleep(0.2)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ACCESS_KEY_ID=access, AWS_SECRET_ACCESS_KEY=secret, AWS_DEFAULT_REGION="us-east-1",
                   AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE=str(work / "none"),
                   AWS_SHARED_CREDENTIALS_FILE=str(work / "none"), S3BULK_HINTS="0",
                   XDG_STATE_HOME=str(work / "state"))
        results: dict[tuple[str, str], list[float]] = {}
        for rep in range(args.reps):
            order = list(variants.items())
            for name, code in (order if rep % 2 == 0 else order[::-1]):  # neither always goes first
                bucket = f"b{rep}{name}"
                (work / "gw" / bucket).mkdir()
                for scen, a, b in (("upload", str(src), f"s3://{bucket}/"),
                                   ("download", f"s3://{bucket}/", str(work / f"dl-{bucket}"))):
                    run = subprocess.run([sys.executable, "-m", "s3bulk", "copy", a, b, "--endpoint-url", url,
                                          "--json", "-w", "1", "--no-journal"], capture_output=True, text=True,
                                         env=dict(env, PYTHONPATH=str(code)), cwd=work)
                    summary = json.loads(run.stdout.strip().splitlines()[-1])
                    assert summary["ok"] and summary["copied"] == args.objects, (run.stdout[-500:], run.stderr[-500:])
                    us = summary["cpu_seconds"] * 1e6 / args.objects
                    results.setdefault((scen, name), []).append(us)
                    print(f"rep {rep} {scen:8} {name:6} {us:7.1f} us/object  {summary['elapsed_seconds']:.2f} s",
                          flush=True)
                shutil.rmtree(work / f"dl-{bucket}", ignore_errors=True)
                shutil.rmtree(work / "gw" / bucket, ignore_errors=True)  # the server holds the same each run
        for scen in ("upload", "download"):
            b, a = statistics.median(results[(scen, "before")]), statistics.median(results[(scen, "after")])
            print(f"{scen}: median CPU per object before {b:.1f} us, after {a:.1f} us ({a - b:+.1f} us)")
        print(f"the counting alone: {counting_alone():.0f} ns per request")
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
