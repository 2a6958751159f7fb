"""Does spreading one big download over two processes pay on two cores? A 1 GiB object from
versitygw on loopback (data on /dev/shm) into /dev/shm: s5cmd, s3bulk as it runs by default (one
process below 4 cores) and s3bulk with S3BULK_SPREAD_PROCESSES=2, interleaved, the order rotated
every round.

    uv run python bench/spread_bench.py --reps 6 --seed put    # as link_bench seeds it (full-object CRC32)
    uv run python bench/spread_bench.py --reps 6 --seed parts  # uploaded by s3bulk in parts (composite CRC32)

Why: engine/transfer/spread.py spreads one object's ranges over half the cores, so none on a
2-core machine; s5cmd uses both cores. The rule changes only if the second process is faster here
and not slower on a shaped link (bench/link_bench.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import peers_bench as pb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=6, help="rounds (default 6)")
    ap.add_argument("--mib", type=int, default=1024, help="object MiB (default 1024)")
    ap.add_argument("--seed", choices=("put", "parts"), default="put",
                    help="put: one PutObject by botocore (full-object CRC32); parts: s3bulk's upload in parts")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="spread-bench-", dir="/dev/shm"))
    srv = pb.start_versitygw(work, True)
    try:
        s3 = pb.s3_client(srv)
        s3.create_bucket(Bucket="big")
        src = work / "big.bin"
        pb.write_big(src, args.mib)
        env = pb.tool_env("s3bulk", srv, work)
        if args.seed == "put":
            with open(src, "rb") as f:
                s3.put_object(Bucket="big", Key="big.bin", Body=f)
        else:
            subprocess.run([str(pb.S3BULK), "copy", str(src), "s3://big/big.bin", "--endpoint-url", srv.url, "-q"],
                           env=env, check=True)
        src.unlink()
        out = work / "out.bin"
        cmd = pb.command("s3bulk", "dl-big", srv, "s3://big/big.bin", str(out))
        variants = {
            "s5cmd": (pb.command("s5cmd", "dl-big", srv, "s3://big/big.bin", str(out)), pb.tool_env("s5cmd", srv, work)),
            "s3bulk (1 process)": (cmd, dict(env, S3BULK_SPREAD_PROCESSES="1")),
            "s3bulk (2 processes)": (cmd, dict(env, S3BULK_SPREAD_PROCESSES="2")),
        }
        walls: dict[str, list[float]] = {k: [] for k in variants}
        cpus: dict[str, list[float]] = {k: [] for k in variants}
        names = list(variants)
        for r in range(args.reps):
            for name in names[r % len(names):] + names[:r % len(names)]:
                argv, e = variants[name]
                load = os.getloadavg()[0]
                m = pb.run_measured(argv, e, work / "stdout", work / "stderr", 300, srv.server_pid())
                size = out.stat().st_size if out.exists() else -1
                out.unlink(missing_ok=True)
                if m["exit"] != 0 or size != args.mib * 2**20:
                    raise SystemExit(f"{name} failed: exit {m['exit']}, {size} bytes; {pb.tail(work / 'stderr')}")
                walls[name].append(m["wall_s"])
                cpus[name].append(m["cpu_s"])
                print(f"{time.strftime('%H:%M:%S')} round {r} {name}: {m['wall_s']:.2f} s, CPU {m['cpu_s']:.2f} s, "
                      f"{m['processes']} processes, load {load:.1f}", flush=True)
        base = statistics.median(walls["s5cmd"])
        print(f"\n{args.mib} MiB down, loopback, seeded by {args.seed}, {args.reps} rounds "
              f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}):")
        for k in names:
            w = statistics.median(walls[k])
            print(f"  {k}: median {w:.2f} s ({min(walls[k]):.2f}-{max(walls[k]):.2f}), CPU {statistics.median(cpus[k]):.2f} s, "
                  f"{base / w:.2f}x s5cmd's speed")
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
