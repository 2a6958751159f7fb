"""Footprint against s5cmd and aws-cli in one run (issue 17): one small object's wall time, the peak
PSS of the whole process tree for 20,000 small objects and for one 1 GiB object, and 1 GiB
download/upload MB/s.

    uv run --extra dask python bench/footprint_bench.py                       # the issue's sizes
    uv run --extra dask python bench/footprint_bench.py --small 2000 --big-mib 128 --reps 1   # quick
    uv run --extra dask python bench/footprint_bench.py --s3bulk-root /tmp/old   # also an older tree

Server: versitygw (posix backend, keep-alive) on loopback with its data on tmpfs; destinations on
tmpfs too (bench/peers_bench.py builds and starts it, and installs aws-cli and s5cmd into
.cache/peers). Each tool runs once unmeasured per scenario first (page cache, s3bulk's endpoint
cache), then with peers_bench's flags, interleaved rep by rep so a burst of load on the
(shared) machine hits every tool alike, each rep starting with the next tool (no tool always
follows aws-cli's 380 MiB run); every download is checked (file count and bytes, the big
object's SHA-256), every upload by size.

Why PSS and not RSS: s3bulk forks its workers from the coordinator, and pages they share (the
interpreter, botocore's parsed model, imported modules) are counted once per process by RSS but
split between the sharers by PSS; summed over the tree, PSS is what the tree costs the machine.
Sampled every 50 ms from /proc/PID/smaps_rollup over the tree (children through
/proc/PID/task/TID/children), the largest sum kept; summed VmRSS is recorded beside it.

`--s3bulk-root DIR` (repeatable) also runs s3bulk from another source tree with this project's
interpreter (e.g. `git archive REV | tar -x -C DIR`), for a before/after in the same run.
Results: bench/results/footprint-DATE[-SCENARIOS][-NAME].{json,md} (`--name` labels one run); the
markdown is printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers_bench import (AWS, S3BULK, S5CMD, S5CMD_CP, TreeSampler, _tree, ensure_bytecode,  # noqa: E402
                         ensure_versitygw, log, machine_info, run_measured, s3_client, sha256_file,
                         small_body, small_rel, start_versitygw, tool_env, write_big, write_small_tree)
from sync_peers import ensure_peers  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def tree_pss(pid: int) -> int:
    """Proportional set size of pid and its descendants, in bytes (0 for processes gone meanwhile)."""
    total = 0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return total


class PssSampler(TreeSampler):
    """peers_bench's sampler (summed VmRSS, per-process VmHWM) plus the tree's summed PSS."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        super().__init__(pid, interval)
        self.peak_pss = 0

    def sample(self) -> None:
        super().sample()
        self.peak_pss = max(self.peak_pss, tree_pss(self.pid))


def measured(argv: list[str], env: dict, work: Path, server_pid: int | None = None) -> dict:
    """peers_bench.run_measured with the PSS sampler swapped in."""
    import peers_bench

    saved = peers_bench.TreeSampler
    holder: dict[str, PssSampler] = {}

    class Recording(PssSampler):
        def __init__(self, pid: int, interval: float = 0.05) -> None:
            super().__init__(pid, interval)
            holder["s"] = self

    peers_bench.TreeSampler = Recording  # type: ignore[misc]
    try:
        # `python -m` puts the working directory first on sys.path: run another tree's s3bulk from there
        cwd = Path(env["PYTHONPATH"]) if env.get("PYTHONPATH") else None
        r = run_measured(argv, env, work / "run.out", work / "run.err", 1800, server_pid=server_pid, cwd=cwd)
    finally:
        peers_bench.TreeSampler = saved  # type: ignore[misc]
    r["peak_pss_tree_mib"] = holder["s"].peak_pss / 2**20
    if r["exit"] != 0:
        r["error"] = (work / "run.err").read_bytes()[-800:].decode(errors="replace")
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=20_000)
    ap.add_argument("--big-mib", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=3, help="runs of each tool per scenario (median kept)")
    ap.add_argument("--one-runs", type=int, default=7, help="runs of the one-small-object scenario")
    ap.add_argument("--aws-small", action="store_true", help="also aws-cli on the 20,000 objects (~2 min a run)")
    ap.add_argument("--s3bulk-root", action="append", default=[])
    ap.add_argument("--s3bulk-env", action="append", default=[], metavar="LABEL:NAME=VALUE",
                    help="also run this tree's s3bulk with NAME=VALUE set, as tool s3bulk@LABEL "
                         "(big-object scenarios only)")
    ap.add_argument("--tools", default="s3bulk,s5cmd,aws-cli")
    ap.add_argument("--scenarios", default="one,dl-small,dl-big,ul-big")
    ap.add_argument("--name", default="", help="added to the results' file names (one run's label)")
    args = ap.parse_args()
    scenarios = args.scenarios.split(",")
    ensure_peers()
    ensure_versitygw()
    ensure_bytecode()
    work = Path(tempfile.mkdtemp(prefix="s3bulk-foot-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    srv = start_versitygw(work, keep_alive=True)
    try:
        s3 = s3_client(srv)
        for b in ("fb-small", "fb-big"):
            s3.create_bucket(Bucket=b)
        env0 = tool_env("s3bulk", srv, work)
        src_small = work / "src-small"
        big = work / "big.bin"
        seeds = []
        if {"one", "dl-small"} & set(scenarios):
            log(f"writing and uploading {args.small:,} objects of 100 B")
            write_small_tree(src_small, args.small, 100)
            seeds.append((src_small, "s3://fb-small/s/"))
        big_sha = ""
        if {"dl-big", "ul-big"} & set(scenarios):
            log(f"writing and uploading a {args.big_mib} MiB object")
            big_sha = write_big(big, args.big_mib)
            seeds.append((big, "s3://fb-big/big.bin"))
        for src, dst in seeds:
            r = measured([str(S3BULK), "copy", str(src), dst, "--endpoint-url", srv.url, "-q"], env0, work)
            if r["exit"] != 0:
                raise SystemExit(f"seeding {dst} failed: {r.get('error')}")
        shutil.rmtree(src_small, ignore_errors=True)
        url = srv.url
        py = str(ROOT / ".venv" / "bin" / "python")
        cache = work / "xdg-cache"

        def s3bulk_cmd(root: str | None, more: dict[str, str] | None = None):
            def cmd(src: str, dst: str, extra: list[str]) -> tuple[list[str], dict]:
                env = dict(tool_env("s3bulk", srv, work), XDG_CACHE_HOME=str(cache), **(more or {}))
                exe = [str(S3BULK)]
                if root:
                    env["PYTHONPATH"] = root
                    exe = [py, "-m", "s3bulk"]
                return [*exe, "copy", src, dst, "--endpoint-url", url, "-q", "--no-journal", *extra], env
            return cmd

        def s5_cmd(src: str, dst: str, extra: list[str]) -> tuple[list[str], dict]:
            return [str(S5CMD), "--log", "error", "--endpoint-url", url, *S5CMD_CP, src, dst], \
                tool_env("s5cmd", srv, work)

        def aws_cmd(src: str, dst: str, extra: list[str]) -> tuple[list[str], dict]:
            return [str(AWS), "--endpoint-url", url, "s3", "cp", src, dst, *extra, "--only-show-errors"], \
                tool_env("aws-cli", srv, work)

        tools = {}
        wanted = args.tools.split(",")
        if "s3bulk" in wanted:
            tools["s3bulk"] = s3bulk_cmd(None)
        for root in args.s3bulk_root:
            tools[f"s3bulk@{Path(root).name}"] = s3bulk_cmd(root)
        env_variants = set()  # run on the big-object scenarios only
        for spec in args.s3bulk_env:
            label, _, assignment = spec.partition(":")
            name, _, value = assignment.partition("=")
            tools[f"s3bulk@{label}"] = s3bulk_cmd(None, {name: value})
            env_variants.add(f"s3bulk@{label}")
        if "s5cmd" in wanted:
            tools["s5cmd"] = s5_cmd
        if "aws-cli" in wanted:
            tools["aws-cli"] = aws_cmd

        def argv_for(tool: str, scen: str, out: Path) -> tuple[list[str], dict]:
            c = tools[tool]
            if scen == "one":
                return c("s3://fb-small/s/" + small_rel(0), str(out / "one.bin"), [])
            if scen == "dl-small":
                if tool.startswith("s5cmd"):
                    return c("s3://fb-small/s/*", str(out) + "/", [])
                return c("s3://fb-small/s/", str(out) + "/", ["--recursive"] if tool == "aws-cli" else [])
            if scen == "dl-big":
                return c("s3://fb-big/big.bin", str(out / "big.bin"), [])
            if scen == "ul-big":
                return c(str(big), f"s3://fb-up/{out.name}/big.bin", [])
            raise ValueError(scen)

        def check(scen: str, out: Path) -> str | None:
            if scen == "one":
                return None if (out / "one.bin").read_bytes() == small_body(0, 100) else "one.bin differs"
            if scen == "dl-small":
                n = sum(len(f) for _, _, f in os.walk(out))
                if n != args.small:
                    return f"{n} files, wanted {args.small}"
                for i in range(0, args.small, max(1, args.small // 50)):
                    if (out / small_rel(i)).read_bytes() != small_body(i, 100):
                        return f"{small_rel(i)} differs"
                return None
            if scen == "dl-big":
                return None if sha256_file(out / "big.bin") == big_sha else "SHA-256 differs"
            if scen == "ul-big":
                size = s3.head_object(Bucket="fb-up", Key=f"{out.name}/big.bin")["ContentLength"]
                return None if size == args.big_mib << 20 else f"size {size}"
            return None

        s3.create_bucket(Bucket="fb-up")
        records: list[dict] = []
        for scen in scenarios:
            reps = args.one_runs if scen == "one" else args.reps
            names = [t for t in tools if not (scen == "dl-small" and t == "aws-cli" and not args.aws_small)
                     and not (t in env_variants and scen not in ("dl-big", "ul-big"))]
            # warm-up, not measured: page cache, .pyc files, s3bulk's endpoint cache (per bucket: a
            # first run resolves the bucket's address with botocore, +20 MiB and ~0.4 s)
            for t in names:
                out = Path(tempfile.mkdtemp(dir=work, prefix=f"{scen}-"))
                argv, env = argv_for(t, scen, out)
                measured(argv, env, work)
                shutil.rmtree(out, ignore_errors=True)
            for rep in range(reps):
                # each rep starts with another tool, so no tool always runs right after aws-cli
                for t in names[rep % len(names):] + names[:rep % len(names)]:
                    out = Path(tempfile.mkdtemp(dir=work, prefix=f"{scen}-"))
                    argv, env = argv_for(t, scen, out)
                    r = measured(argv, env, work, srv.proc.pid)
                    bad = r.get("error") or check(scen, out)
                    shutil.rmtree(out, ignore_errors=True)
                    rec = {"tool": t, "scenario": scen, "rep": rep, "ok": bad is None, "problem": bad,
                           "wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "peak_pss_tree_mib": r["peak_pss_tree_mib"],
                           "peak_rss_tree_mib": r["peak_rss_tree_mib"], "processes": r["processes"],
                           "server_cpu_s": r["server_cpu_s"]}
                    records.append(rec)
                    log(f"{scen} {t} rep {rep}: wall {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s (server {r['server_cpu_s']:.2f} s), PSS {r['peak_pss_tree_mib']:.0f} MiB, "
                        f"RSS {r['peak_rss_tree_mib']:.0f} MiB{'' if bad is None else ', FAILED: ' + bad}")
            if scen == "ul-big":
                shutil.rmtree(srv.root / "fb-up", ignore_errors=True)
                (srv.root / "fb-up").mkdir()
    finally:
        srv.stop()
    info = machine_info()
    md = markdown(records, args, info)
    print(md)
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"footprint-{date.today()}" + ("" if (args.small, args.big_mib) == (20_000, 1024) else "-quick")
    if args.scenarios != ap.get_default("scenarios"):
        stem += "-" + args.scenarios.replace(",", "-")
    if args.name:
        stem += "-" + args.name
    (out_dir / f"{stem}.json").write_text(json.dumps({"machine": info, "records": records}, indent=2))
    (out_dir / f"{stem}.md").write_text(md)
    shutil.rmtree(work, ignore_errors=True)


def markdown(records: list[dict], args: argparse.Namespace, info: dict) -> str:
    load = os.getloadavg()
    lines = [f"{date.today()}, {info.get('nproc', os.cpu_count())} cores shared with other work "
             f"(load average at the end {load[0]:.1f}), versitygw on loopback, data on tmpfs. "
             f"Median of the ok runs (one object: {args.one_runs}, others: {args.reps}); PSS and RSS: "
             "largest sum over the process tree, sampled every 50 ms.", "",
             "| scenario | tool | ok | wall s | rate | CPU s | peak PSS MiB (tree) | peak RSS MiB (tree) | vs s5cmd |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    by: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        by.setdefault((r["scenario"], r["tool"]), []).append(r)
    label = {"one": "one 100 B object down", "dl-small": f"download {args.small:,} x 100 B",
             "dl-big": f"download 1 x {args.big_mib:,} MiB", "ul-big": f"upload 1 x {args.big_mib:,} MiB"}
    med: dict[tuple[str, str], dict] = {}
    for (scen, tool), rs in by.items():
        ok = [r for r in rs if r["ok"]] or rs
        m = {k: statistics.median(r[k] for r in ok) for k in ("wall_s", "cpu_s", "peak_pss_tree_mib",
                                                               "peak_rss_tree_mib")}
        m["ok"] = f"{sum(r['ok'] for r in rs)}/{len(rs)}"
        med[(scen, tool)] = m
    for (scen, tool), m in med.items():
        if scen == "one":
            rate = f"{m['wall_s'] * 1000:.0f} ms"
            base = med.get((scen, "aws-cli"))
            vs = f"{m['wall_s'] / base['wall_s']:.2f}x aws-cli's time" if base else ""
        elif scen == "dl-small":
            rate = f"{args.small / m['wall_s']:,.0f} obj/s"
            base = med.get((scen, "s5cmd"))
            vs = (f"speed {base['wall_s'] / m['wall_s']:.2f}x, CPU {m['cpu_s'] / base['cpu_s']:.2f}x, "
                  f"PSS {m['peak_pss_tree_mib'] / base['peak_pss_tree_mib']:.2f}x" if base else "")
        else:
            rate = f"{(args.big_mib << 20) / 1e6 / m['wall_s']:,.0f} MB/s"
            base = med.get((scen, "s5cmd"))
            vs = (f"speed {base['wall_s'] / m['wall_s']:.2f}x, PSS {m['peak_pss_tree_mib'] / base['peak_pss_tree_mib']:.2f}x"
                  if base else "")
        lines.append(f"| {label[scen]} | {tool} | {m['ok']} | {m['wall_s']:.2f} | {rate} | {m['cpu_s']:.2f} | "
                     f"{m['peak_pss_tree_mib']:.0f} | {m['peak_rss_tree_mib']:.0f} | {vs} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
