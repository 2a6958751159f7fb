"""CPU an object and CPU at start-up of a sync down, apart: the tree before a change (A) against
this checkout (B), interleaved.

bench/sync_ab_bench.py gives a whole run's CPU at 20,000 objects, where a start-up 60 ms longer
reads as 3 us an object more. Here each tree syncs SMALL and LARGE objects of 100 B from versitygw
on loopback into an empty directory (down-new) and again (down-same, nothing to copy), with its
default workers; CPU is user+sys of the process tree. The least CPU of the reps at each size gives
the line: its slope is the CPU an object, its intercept the start-up.

    uv run --frozen python bench/sync_slope_ab.py --before ca25f19 --small 500 --large 10000 --reps 3

Printed only (no results file): take it beside sync_ab_bench's table, with `uptime`.
"""

from __future__ import annotations

import argparse
import os
import resource
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


def cpu_of(argv: list[str], env: dict) -> float:
    """User+sys CPU seconds of argv and its children."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--before", default="ca25f19", metavar="REV", help="the tree A (default %(default)s)")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "ab-trees"), help="where A's worktree goes")
    ap.add_argument("--small", type=int, default=500)
    ap.add_argument("--large", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    small, large = args.small, args.large
    trees = {"A": before_tree(args.before, Path(args.cache_dir)), "B": ROOT}
    work = Path(tempfile.mkdtemp(prefix="s3bulk-slope-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    srv = start_versitygw(work, keep_alive=True)
    try:
        s3 = s3_client(srv)
        env = {k: v for k, v in tool_env("s3bulk", srv, work).items() if not k.startswith("S3BULK_")}
        env["XDG_STATE_HOME"], env["XDG_CACHE_HOME"] = str(work / "state"), str(work / "cache")
        s3.create_bucket(Bucket="slope")
        b = trees["B"]
        for n in (small, large):  # the sources, written by B (unmeasured)
            src = work / f"src{n}"
            write_small_tree(src, n, 100)
            subprocess.run([str(b / ".venv/bin/python"), str(b / ".venv/bin/s3bulk"), "copy", f"{src}/",
                            f"s3://slope/seed{n}/", "--endpoint-url", srv.url], env=env, check=True,
                           stdout=subprocess.DEVNULL)
        res: dict[tuple[str, str, int], list[float]] = {}
        for rep in range(args.reps):
            for tree, root in trees.items():
                s3bulk = [str(root / ".venv/bin/python"), str(root / ".venv/bin/s3bulk")]
                for n in (small, large):
                    local = work / f"d-{tree}-{n}"
                    argv = [*s3bulk, "sync", f"s3://slope/seed{n}/", f"{local}/", "--endpoint-url", srv.url]
                    new, same = cpu_of(argv, env), cpu_of(argv, env)
                    shutil.rmtree(local)
                    res.setdefault((tree, "down-new", n), []).append(new)
                    res.setdefault((tree, "down-same", n), []).append(same)
            log(f"round {rep + 1} of {args.reps} done")
        for scen in ("down-new", "down-same"):
            line = {}
            for tree in "AB":
                s, big = min(res[(tree, scen, small)]), min(res[(tree, scen, large)])
                per = (big - s) / (large - small)
                line[tree] = (per * 1e6, (s - per * small) * 1e3, big)
            (pa, ia, la), (pb, ib, lb) = line["A"], line["B"]
            print(f"{scen}: CPU an object A {pa:.1f} us, B {pb:.1f} us (B/A {pb / pa:.3f}); start-up A {ia:.0f} ms, "
                  f"B {ib:.0f} ms; at {large:,}: A {la:.2f} s, B {lb:.2f} s (B/A {lb / la:.3f})")
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
