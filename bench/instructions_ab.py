"""Instructions an object costs, the tree before a change (A) against this checkout (B): a measure
a busy machine does not blur.

CPU seconds on a shared 2-core machine move by 10% from run to run (other jobs, caches, clock
speed), so a change of 3 us an object cannot be told from noise without a quiet machine. The
number of user-space instructions (valgrind's callgrind, `Ir`) is the same run after run to well
under 1%. Each tree runs `sync` of a SMALL and a LARGE set of 100 B objects (`-w 1`, so the worker
is a thread of the one process valgrind follows); the difference of the two counts over the
difference in objects is what one more object costs, start-up cancelled out; the SMALL run's count
less SMALL objects' worth is the start-up (what a Lambda pays first, at 7% of a core).

    uv run --frozen python bench/instructions_ab.py                       # A = 76550c0, down and up
    uv run --frozen python bench/instructions_ab.py --before ca25f19 --scenarios down,down-same

Scenarios: down (S3 -> an empty local directory), down-same (the same again: nothing to copy),
up (local -> an empty S3 prefix), up-same. Server: versitygw (posix, on tmpfs) on loopback.
Kernel time (system calls) is not counted: a change that adds a system call (a setxattr, a stat)
shows in bench/sync_ab_bench.py's CPU columns, not here. Instructions are not time (a cache miss
costs more than an add); read them beside sync_ab_bench's CPU seconds, taken on a quiet machine.
Output: the table printed, and bench/results/instructions-ab-DATE[-NAME].{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from link_bench import compile_roots, versions  # noqa: E402
from peers_bench import log, machine_info, s3_client, start_versitygw, tool_env, write_small_tree  # noqa: E402
from sync_ab_bench import before_tree  # noqa: E402

SCENARIOS = ("down", "down-same", "up", "up-same")


def callgrind_ir(argv: list[str], env: dict, work: Path, stem: str) -> int:
    """User-space instructions of `argv` and every process it starts (callgrind's `summary:`)."""
    out = work / "cg" / stem
    out.mkdir(parents=True)
    done = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                           f"--callgrind-out-file={out}/cg.%p", *argv],
                          env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-600:]}")
    total = 0
    for f in out.glob("cg.*"):
        for line in f.read_text(errors="replace").splitlines():
            if line.startswith("summary:"):
                total += int(line.split()[1])
                break
    shutil.rmtree(out)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--before", default="76550c0", metavar="REV", help="the tree A (default %(default)s)")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "ab-trees"), help="where A's worktree goes")
    ap.add_argument("--small", type=int, default=400)
    ap.add_argument("--large", type=int, default=4000)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma list of " + ", ".join(SCENARIOS))
    ap.add_argument("--name", default="", help="added to the results' file names")
    args = ap.parse_args()
    scenarios = [s for s in SCENARIOS if s in args.scenarios.split(",")]
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed (apt install valgrind)")
    trees = {"A": before_tree(args.before, Path(args.cache_dir)), "B": ROOT}
    compile_roots(trees)
    started = datetime.now(timezone.utc)
    work = Path(tempfile.mkdtemp(prefix="s3bulk-irab-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    srv = start_versitygw(work, keep_alive=True)
    rows: list[dict] = []
    try:
        s3 = s3_client(srv)
        env = {k: v for k, v in tool_env("s3bulk", srv, work).items() if not k.startswith("S3BULK_")}
        env["XDG_STATE_HOME"], env["XDG_CACHE_HOME"] = str(work / "state"), str(work / "cache")
        sets = {n: work / f"src-{n}" for n in (args.small, args.large)}
        for n, path in sets.items():
            write_small_tree(path, n, 100)
        for tree, root in trees.items():
            s3bulk = [str(root / ".venv" / "bin" / "python"), str(root / ".venv" / "bin" / "s3bulk")]
            bucket = f"irab-{tree.lower()}"
            s3.create_bucket(Bucket=bucket)
            for n, path in sets.items():  # the downloads' sources, written by the tree itself (unmeasured)
                subprocess.run([*s3bulk, "copy", f"{path}/", f"s3://{bucket}/seed-{n}/", "--endpoint-url", srv.url],
                               env=env, check=True, stdout=subprocess.DEVNULL)
            for scen in scenarios:
                counts = {}
                for n, path in sets.items():
                    local = work / f"down-{tree}-{n}"
                    if scen.startswith("down"):
                        src, dst = f"s3://{bucket}/seed-{n}/", f"{local}/"
                        if scen == "down-same":
                            subprocess.run([*s3bulk, "sync", src, dst, "--endpoint-url", srv.url], env=env,
                                           check=True, stdout=subprocess.DEVNULL)
                    else:
                        src, dst = f"{path}/", f"s3://{bucket}/{scen}-{n}/"
                        if scen == "up-same":
                            subprocess.run([*s3bulk, "sync", src, dst, "--endpoint-url", srv.url], env=env,
                                           check=True, stdout=subprocess.DEVNULL)
                    argv = [*s3bulk, "sync", src, dst, "--endpoint-url", srv.url, "-w", "1", "--no-journal"]
                    counts[n] = callgrind_ir(argv, env, work, f"{tree}-{scen}-{n}")
                    shutil.rmtree(local, ignore_errors=True)
                per = (counts[args.large] - counts[args.small]) / (args.large - args.small)
                rows.append({"tree": tree, "scenario": scen, "ir": counts, "ir_per_object": round(per),
                             "ir_start": round(counts[args.small] - per * args.small)})
                log(f"{tree} {scen}: {per / 1000:.1f}k instructions an object, start-up "
                    f"{rows[-1]['ir_start'] / 1e6:.0f}M")
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    meta = {"date": f"{started:%Y-%m-%d %H:%M} UTC", "before": args.before, "small": args.small,
            "large": args.large, "machine": machine_info(), "versions": versions(trees, [])}
    lines = [f"{meta['date']}: user-space instructions (callgrind Ir), `sync` with `-w 1`, "
             f"{args.small:,} and {args.large:,} objects of 100 B, versitygw on loopback.", "",
             "| scenario | instructions an object A -> B | B/A | start-up A -> B | B/A |", "| --- | --- | --- | --- | --- |"]
    by = {(r["tree"], r["scenario"]): r for r in rows}
    for scen in scenarios:
        a, b = by[("A", scen)], by[("B", scen)]
        lines.append(f"| {scen} | {a['ir_per_object'] / 1000:.1f}k -> {b['ir_per_object'] / 1000:.1f}k | "
                     f"{b['ir_per_object'] / a['ir_per_object']:.3f} | {a['ir_start'] / 1e6:.0f}M -> "
                     f"{b['ir_start'] / 1e6:.0f}M | {b['ir_start'] / a['ir_start']:.3f} |")
    lines += ["", "; ".join(f"{k}: {v}" for k, v in meta["versions"].items()) + "."]
    md = "\n".join(lines) + "\n"
    print(md)
    out = HERE / "results"
    stem = f"instructions-ab-{started.date()}" + (f"-{args.name}" if args.name else "")
    (out / f"{stem}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (out / f"{stem}.md").write_text(md)
    log(f"wrote {out / stem}.json and .md")


if __name__ == "__main__":
    main()
