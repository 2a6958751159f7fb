"""Python calls an object in a sync, the tree before a change (A) against this checkout (B):
cProfile in every thread of `sync -w 1` (the worker is a thread of the one process), the counts
of a SMALL run taken from a LARGE one's, over the difference in objects. Calls are not time, but
they do not move with the machine's load, and the per-function table says where B differs.

    uv run --frozen python bench/sync_calls_ab.py --before ca25f19 --scenarios down-same,up-same

Scenarios: down-new (S3 -> an empty directory), down-same (the same again), up-same (the source
tree synced back up: nothing to copy). Server: versitygw on loopback. Printed only.
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from peers_bench import log, s3_client, start_versitygw, tool_env, write_small_tree  # noqa: E402
from sync_ab_bench import before_tree  # noqa: E402

# run by each tree's python: the CLI with a profiler in every thread, the stats merged at exit
PROFILED = '''
import atexit, cProfile, os, pstats, sys, threading
profs = [cProfile.Profile()]
run = threading.Thread.run
def profiled(self):
    p = cProfile.Profile(); profs.append(p); p.enable()
    try: run(self)
    finally: p.disable()
threading.Thread.run = profiled
def dump():
    profs[0].disable()
    stats = None
    for p in profs:
        p.create_stats()
        if p.stats:
            stats = pstats.Stats(p) if stats is None else stats.add(p) or stats
    stats.dump_stats(os.environ["PROFILE_TO"])
atexit.register(dump)
sys.argv = ["s3bulk"] + sys.argv[1:]
from s3bulk.cli import main
profs[0].enable()
try: main()
except SystemExit: pass
'''


def per_object(small: Path, large: Path, objects: int) -> dict[str, float]:
    """{function: calls an object}, the function named without its tree's path."""
    a, b = pstats.Stats(str(small)).stats, pstats.Stats(str(large)).stats
    out: dict[str, float] = {}
    for k, v in b.items():
        name = f"{k[0].split('site-packages/')[-1].split('s3bulk/', 1)[-1]}:{k[2]}"
        out[name] = out.get(name, 0.0) + (v[1] - a.get(k, (0, 0))[1]) / objects
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--before", default="ca25f19", metavar="REV", help="the tree A (default %(default)s)")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "ab-trees"), help="where A's worktree goes")
    ap.add_argument("--small", type=int, default=400)
    ap.add_argument("--large", type=int, default=2400)
    ap.add_argument("--scenarios", default="down-new,down-same,up-same")
    ap.add_argument("--top", type=int, default=40, help="rows of the per-function table")
    args = ap.parse_args()
    scenarios = args.scenarios.split(",")
    trees = {"A": before_tree(args.before, Path(args.cache_dir)), "B": ROOT}
    work = Path(tempfile.mkdtemp(prefix="s3bulk-calls-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    (work / "profiled.py").write_text(PROFILED)
    srv = start_versitygw(work, keep_alive=True)
    try:
        s3 = s3_client(srv)
        env = {k: v for k, v in tool_env("s3bulk", srv, work).items() if not k.startswith("S3BULK_")}
        env["XDG_STATE_HOME"], env["XDG_CACHE_HOME"] = str(work / "state"), str(work / "cache")
        s3.create_bucket(Bucket="calls")
        for n in (args.small, args.large):
            write_small_tree(work / f"src{n}", n, 100)
            subprocess.run([str(ROOT / ".venv/bin/s3bulk"), "copy", f"{work}/src{n}/", f"s3://calls/seed{n}/",
                            "--endpoint-url", srv.url], env=env, check=True, stdout=subprocess.DEVNULL)
        for tree, root in trees.items():
            for n in (args.small, args.large):
                local = work / f"d-{tree}-{n}"
                down = ["sync", f"s3://calls/seed{n}/", f"{local}/"]
                up = ["sync", f"{work}/src{n}/", f"s3://calls/seed{n}/"]
                for scen, argv in (("down-new", down), ("down-same", down), ("up-same", up)):
                    e = dict(env, PROFILE_TO=str(work / f"{tree}-{scen}-{n}.prof"))
                    subprocess.run([str(root / ".venv/bin/python"), str(work / "profiled.py"), *argv,
                                    "--endpoint-url", srv.url, "-w", "1"], env=e, check=True,
                                   stdout=subprocess.DEVNULL, cwd=root)
                shutil.rmtree(local)
            log(f"tree {tree} done")
        objects = args.large - args.small
        for scen in scenarios:
            a, b = ({k: v for k, v in per_object(work / f"{t}-{scen}-{args.small}.prof",
                                                 work / f"{t}-{scen}-{args.large}.prof", objects).items()}
                    for t in ("A", "B"))
            print(f"\n{scen}: Python calls an object A {sum(a.values()):.1f}, B {sum(b.values()):.1f}")
            rows = sorted(set(a) | set(b), key=lambda k: -abs(b.get(k, 0) - a.get(k, 0)))[:args.top]
            for k in rows:
                if abs(b.get(k, 0) - a.get(k, 0)) >= 0.3:
                    print(f"  {a.get(k, 0):6.2f} -> {b.get(k, 0):6.2f}  {k[-100:]}")
    finally:
        srv.proc.terminate()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
