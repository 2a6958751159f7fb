"""What a resume redoes inside one large object: download it to local disk, stop the run at a
random point (SIGKILL or Ctrl-C), resume it, and count the bytes fetched twice (issue 15's last
item; docs/guides/resume.md).

Source: one object in LocalStack behind a proxy (tests/faultproxy.py) that records the Range of
every GET, so "fetched twice" is exact even across a SIGKILL. Default options (8 MiB parts, 8 in
flight per object) unless --part-size is given. The random point is a random fraction of the
object's parts *requested* (not a time), so it does not depend on the machine's load.

    uv run --frozen --extra dask python bench/resume_ranges_bench.py [--size 256MiB] [--kills 4] [--seed 1]

Prints one line per stop and a summary; writes bench/results/resume-ranges-<date>.json.

What keeping the ranges costs (an fdatasync of the temporary file per batch of parts, a record
file per large object): `--overhead N` times N whole downloads, alternating the default (journal
kept, so ranges recorded) with `--no-journal` (as before), of the one object and of 16 objects
of 24 MiB (each just above the multipart threshold: the most record files per byte).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from faultproxy import FaultProxy  # noqa: E402
from s3bulk.config.sizes import parse_size  # noqa: E402

MiB = 1024 * 1024


class Ranges:
    """Proxy rule: record the byte range of every ranged GET of `key`; forwards every request."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.spans: list[tuple[int, int]] = []
        self.lock = threading.Lock()

    def __call__(self, method: str, target: str, headers: dict[str, str]) -> None:
        r = re.fullmatch(r"bytes=(\d+)-(\d+)", headers.get("range", ""))
        if method == "GET" and r and target.split("?")[0].endswith("/" + self.key):
            with self.lock:
                self.spans.append((int(r.group(1)), int(r.group(2)) + 1))
        return None

    def take(self) -> list[tuple[int, int]]:
        with self.lock:
            out, self.spans = self.spans, []
        return out


def overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Bytes in both sets of spans (each set's spans are disjoint parts)."""
    return sum(max(0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)


def overhead(args: list[str], dst: Path, env: dict, reps: int) -> dict[str, list[float]]:
    """Wall seconds of `reps` whole runs each way, alternating (the machine's load hits both alike)."""
    out: dict[str, list[float]] = {"journal (ranges kept)": [], "--no-journal": []}
    for _ in range(reps):
        for name, extra in (("journal (ranges kept)", []), ("--no-journal", ["--no-journal"])):
            shutil.rmtree(dst, ignore_errors=True)
            t0 = time.monotonic()
            subprocess.run([*args, *extra], check=True, cwd=ROOT, env=env)
            out[name].append(round(time.monotonic() - t0, 2))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--endpoint", default=os.environ.get("S3BULK_TEST_ENDPOINT", "http://127.0.0.1:4566"))
    ap.add_argument("--size", default="256MiB")
    ap.add_argument("--part-size", default="")
    ap.add_argument("--kills", type=int, default=4, help="stops per signal")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--overhead", type=int, default=0, metavar="N", help="also time N whole runs each way")
    a = ap.parse_args()
    size = parse_size(a.size, "--size")
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    import botocore.session

    s3 = botocore.session.get_session().create_client("s3", endpoint_url=a.endpoint, region_name="us-east-1")
    bucket, key = f"rr-{uuid.uuid4().hex[:12]}", "big.bin"
    s3.create_bucket(Bucket=bucket)
    body = os.urandom(size)
    s3.put_object(Bucket=bucket, Key=key, Body=body)
    rng = random.Random(a.seed)
    work = Path(tempfile.mkdtemp(prefix="rr-bench-"))
    env = dict(os.environ, XDG_STATE_HOME=str(work / "state"))
    ranges = Ranges(key)
    host, port = urlsplit(a.endpoint).hostname, urlsplit(a.endpoint).port
    rows = []
    costs: dict[str, dict[str, list[float]]] = {}
    try:
        with FaultProxy(host, port, [ranges]) as proxy:
            dst = work / "dst"
            args = [sys.executable, "-m", "s3bulk", "copy", f"s3://{bucket}/", str(dst), "--endpoint-url", proxy.url,
                    "-q", *(["--part-size", a.part_size] if a.part_size else [])]
            t0 = time.monotonic()
            subprocess.run(args, check=True, cwd=ROOT, env=env)
            full = time.monotonic() - t0
            part = max(e - s for s, e in ranges.take())  # the part size (the last part may be shorter)
            parts = -(-size // part)
            print(f"{size / MiB:.0f} MiB in {parts} parts of {part / MiB:.0f} MiB; a whole run took {full:.1f} s")
            if a.overhead:
                costs["one object"] = overhead(args, dst, env, a.overhead)
                for i in range(16):
                    s3.put_object(Bucket=bucket, Key=f"mid/{i:02d}.bin", Body=body[:24 * MiB])
                mid = [sys.executable, "-m", "s3bulk", "copy", f"s3://{bucket}/mid/", str(work / "mid"),
                       "--endpoint-url", a.endpoint, "-q"]
                costs["16 x 24 MiB"] = overhead(mid, work / "mid", env, a.overhead)
                ranges.take()  # the timed runs' requests are not the stops' below
                for what, runs in costs.items():
                    print(f"{what}: " + "; ".join(f"{k} {sorted(v)[len(v) // 2]:.2f} s (runs {v})"
                                                  for k, v in runs.items()))
            for sig in (signal.SIGKILL, signal.SIGINT):
                for _ in range(a.kills):
                    shutil.rmtree(dst, ignore_errors=True)
                    target = rng.randint(1, parts - 1)  # stop once this many parts were requested
                    proc = subprocess.Popen(args, cwd=ROOT, env=env, start_new_session=True)
                    deadline = time.monotonic() + 300
                    while len(ranges.spans) < target and proc.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.002)
                    if proc.poll() is not None:
                        ranges.take()
                        print(f"{sig.name}: the run ended before part {target} was asked for; skipped")
                        continue
                    os.killpg(proc.pid, sig)
                    proc.wait()
                    while proxy.connections_open:  # the killed run's last requests are still being read
                        time.sleep(0.01)
                    first = ranges.take()
                    t1 = time.monotonic()
                    subprocess.run([*args, "--resume"], check=True, cwd=ROOT, env=env)
                    resumed = time.monotonic() - t1
                    second = ranges.take()
                    assert (dst / key).read_bytes() == body, "resumed file differs"
                    assert not [p for p in dst.iterdir() if p.name.startswith(".s3bulk-")], "leftovers"
                    twice = overlap(first, second)
                    rows.append({"signal": sig.name, "parts_requested_at_stop": target,
                                 "fetched_before_stop_mib": round(sum(e - s for s, e in first) / MiB, 1),
                                 "fetched_by_resume_mib": round(sum(e - s for s, e in second) / MiB, 1),
                                 "fetched_twice_mib": round(twice / MiB, 1), "fetched_twice_parts": twice / part,
                                 "resume_seconds": round(resumed, 2)})
                    print(f"{sig.name:8s} after {target:3d}/{parts} parts asked: fetched twice "
                          f"{twice / MiB:6.1f} MiB ({twice / part:.1f} parts), resume fetched "
                          f"{sum(e - s for s, e in second) / MiB:.0f} MiB in {resumed:.1f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    worst = {s: max((r["fetched_twice_mib"] for r in rows if r["signal"] == s), default=0.0)
             for s in ("SIGKILL", "SIGINT")}
    print(f"worst: SIGKILL {worst['SIGKILL']} MiB, Ctrl-C {worst['SIGINT']} MiB fetched twice "
          f"(object {size / MiB:.0f} MiB; without kept ranges every stop fetches it all again)")
    out = ROOT / "bench" / "results" / f"resume-ranges-{time.strftime('%Y-%m-%d')}.json"
    out.write_text(json.dumps({"size": size, "part": part, "whole_run_seconds": round(full, 2), "runs": rows,
                               "worst_mib": worst, "overhead_seconds": costs, "machine": "shared (other engineers' tests ran beside it)"},
                              indent=1))
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
