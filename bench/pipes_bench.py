"""Pipes against aws-cli, same run: stdin -> one object, and one object -> stdout.

    uv run --extra dask python bench/pipes_bench.py --endpoint http://127.0.0.1:4566 --mib 200 --reps 2

Each rep, interleaved by tool: `cat FILE | TOOL copy - s3://b/k` (s3bulk `copy -`, aws `s3 cp -`),
then `TOOL ... s3://b/k - > /dev/null` (s3bulk `cat`, aws `s3 cp URL -`). The file lives on tmpfs
(/dev/shm) so the disk is not measured. Reported: wall seconds, MiB/s, and the peak RSS of the
tool's process (VmHWM of its pid, polled every 20 ms; the tool's own process only, which for both
tools is where the bytes are). Needs an S3 endpoint (LocalStack) and `aws` on PATH; credentials
test/test. Numbers are only comparable within one run: print ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
import uuid

MiB = 1024 * 1024


def _hwm(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _run(argv: list[str], env: dict[str, str], stdin_path: str | None) -> tuple[float, int]:
    """Wall seconds and the peak VmHWM seen of one command (stdout to /dev/null)."""
    start = time.monotonic()
    with open(stdin_path or os.devnull, "rb") as src, open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(argv, stdin=src, stdout=sink, stderr=subprocess.PIPE, env=env)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, _hwm(proc.pid))
            time.sleep(0.02)
    err = proc.stderr.read().decode()
    if proc.returncode != 0:
        sys.exit(f"{argv[:3]} failed ({proc.returncode}): {err[-500:]}")
    return time.monotonic() - start, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--endpoint", default=os.environ.get("S3BULK_TEST_ENDPOINT", "http://127.0.0.1:4566"))
    ap.add_argument("--mib", type=int, default=200)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    if not shutil.which("aws"):
        sys.exit("aws (aws-cli) is not on PATH")
    env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1")
    env.pop("AWS_CA_BUNDLE", None)
    bucket = f"pipes-bench-{uuid.uuid4().hex[:10]}"
    subprocess.run(["aws", "--endpoint-url", args.endpoint, "s3", "mb", f"s3://{bucket}"], env=env, check=True,
                   capture_output=True)
    data = f"/dev/shm/pipes-bench-{os.getpid()}.bin"
    with open(data, "wb") as f:
        for _ in range(args.mib):
            f.write(os.urandom(MiB))
    s3bulk = [sys.executable, "-m", "s3bulk"]
    tools = {
        "s3bulk": (s3bulk + ["copy", "-", "URL", "--endpoint-url", args.endpoint, "-q"],
                   s3bulk + ["cat", "URL", "--endpoint-url", args.endpoint]),
        "aws-cli": (["aws", "--endpoint-url", args.endpoint, "s3", "cp", "-", "URL", "--only-show-errors"],
                    ["aws", "--endpoint-url", args.endpoint, "s3", "cp", "URL", "-", "--only-show-errors"]),
    }
    results: dict[tuple[str, str], list[tuple[float, int]]] = {}
    try:
        for rep in range(args.reps):
            for tool, (up, down) in tools.items():
                url = f"s3://{bucket}/{tool}-{rep}.bin"
                results.setdefault((tool, "stdin -> S3"), []).append(
                    _run([url if a == "URL" else a for a in up], env, data))
                results.setdefault((tool, "S3 -> stdout"), []).append(
                    _run([url if a == "URL" else a for a in down], env, None))
    finally:
        os.unlink(data)
    print(f"{args.mib} MiB, {args.reps} reps each (best wall, largest peak RSS), endpoint {args.endpoint}, "
          f"{os.cpu_count()} cores")
    print(f"| direction | tool | best wall s | MiB/s | peak RSS MiB |")
    print("| --- | --- | --- | --- | --- |")
    for direction in ("stdin -> S3", "S3 -> stdout"):
        for tool in tools:
            runs = results[(tool, direction)]
            wall = min(w for w, _ in runs)
            peak = max(p for _, p in runs)
            print(f"| {direction} | {tool} | {wall:.2f} | {args.mib / wall:.0f} | {peak / MiB:.0f} |")
        ratio = min(w for w, _ in results[("aws-cli", direction)]) / min(w for w, _ in results[("s3bulk", direction)])
        print(f"| {direction} | aws-cli wall / s3bulk wall | {ratio:.2f} | | |")


if __name__ == "__main__":
    main()
