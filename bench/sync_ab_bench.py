"""`sync` of many small objects with default options, the tree before a change (A) against this
checkout (B), in one run, on loopback and on a link shaped like S3: does anything slow the
default path? (issue 32: "No new option slows the default path: 20,000 small objects with sync,
before and after, same run, versitygw on loopback and the 25 MB/s + 10 ms shaped link".)

    uv run --frozen python bench/sync_ab_bench.py                     # 20,000 x 100 B, 3 reps, both links
    uv run --frozen python bench/sync_ab_bench.py --objects 500 --reps 1   # smoke test (~2 min)
    uv run --frozen python bench/sync_ab_bench.py --before ca25f19 --links loopback --scenarios up-new,up-same
    uv run --frozen python bench/sync_ab_bench.py --from-json bench/results/sync-ab-DATE.json --update-readme

The two trees: A is `git worktree add --detach` of `--before REV` (default ca25f19, the commit the
issue-32/33 work started from) into .cache/ab-trees/SHA, with its own `uv sync --frozen` (reused
by later runs); B is this checkout. Each runs its own `.venv/bin/s3bulk` (byte-compiled first, as
an installed s3bulk is), so a dependency that changed between the two is measured too.

Server: versitygw (posix backend, `--keep-alive`, data on tmpfs) on loopback, and for the shaped
link the same server behind toxiproxy at 25,000 KB/s a connection and 10 ms each way (bench/
link_bench.py's `25MBps-10ms`). Each tree writes its own bucket: `seed/` (uploaded once by that
tree's `copy`, unmeasured) and one fresh prefix per rep; local files on tmpfs.

Scenarios (`--scenarios`, in this order; each `sync SRC DST --endpoint-url URL --json`, nothing
else, a fresh XDG_STATE_HOME a run, one XDG_CACHE_HOME per tree):

| name | what | expected |
| --- | --- | --- |
| up-new | local tree of N files -> s3://B/up-REP/ (empty) | copies N |
| up-same | the same again | copies 0, skips N |
| down-new | s3://B/seed/ -> an empty local directory | copies N |
| down-same | the same again | copies 0, skips N |
| delete | `--delete` local tree -> s3://B/up-REP/, which holds the N objects and N more keys (written straight into versitygw's directory, interleaved with the real keys) | copies 0, deletes N |
| down-big | s3://B/big/ (one object of `--big-mib` MiB, default 1024, seeded by the tree's own copy) -> an empty local directory | copies 1, bytes equal |

Not in the default set: down-big (issue 34's "a 1 GiB download, before and after": ask for it with
`--scenarios down-new,down-big`); its CPU column is per run, not per object.

Whose objects a sync down reads (`--down-from`): by default each tree its own seed/, as its own
`copy` uploaded it. The trees' uploads differ in what they store: since issue 32's file times a
`copy` stores each file's time as x-amz-meta-mtime, which the server then reads and sends with
every GET of it (and a download sets). `--down-from B` (or A) has both trees download the same
objects, so that what differs is the downloading client alone (bench/README "Sync down: what
differs on the wire").

up-same and delete need up-new, down-same needs down-new (they run on its result). How the runs
interleave: per link, one unmeasured warm-up per tree (a sync down of seed/'s first 1,000 keys:
page cache, s3bulk's endpoint cache for the link's URL), then `--reps` rounds; in each round every
scenario runs for both trees, the tree that goes first alternating from scenario to scenario and
round to round (A,B / B,A / ...). Each round's prefixes and directories are removed after it, so
the server holds the same for every run. Every run is checked (file counts, sampled bytes, the
summary's copied/skipped/deleted); a run that fails its check is reported and left out of the
medians (unless no run of its cell passed).

Measured per run (bench/footprint_bench.py `measured`): wall time from start to exit; CPU time of
the process tree (wait4: the coordinator and the workers it reaps) and CPU-us per object; peak PSS
of the process tree (summed /proc/PID/smaps_rollup, sampled every 50 ms); the server's and the
proxy's CPU. The table gives medians and B/A per scenario and link.

Output: bench/results/sync-ab-DATE[-NAME][-quick].{json,md} (-quick when --objects or --reps is not
the default; those files are not committed), the markdown printed; `--update-readme` puts it
between `<!-- sync-ab:start -->` and `<!-- sync-ab:end -->` in bench/README.md.

Runtime at the defaults (20,000 x 100 B, 3 reps, both links) on a quiet 2-core machine: see
bench/README.md ("Sync before and after"); the first run adds the A worktree's `uv sync`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
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

from footprint_bench import measured  # noqa: E402
from link_bench import LINKS, compile_roots, shaped_url, start_toxiproxy, versions  # noqa: E402
from peers_bench import (Server, log, machine_info, s3_client, small_body, small_rel, start_versitygw,  # noqa: E402
                         tail, tool_env, tree_cpu_s, write_small_tree)

BEFORE = "ca25f19"  # main before the issue 32/33 work
SCENARIOS = ("up-new", "up-same", "down-new", "down-same", "delete", "down-big")
DEFAULT_SCENARIOS = SCENARIOS[:-1]
NEEDS = {"up-same": "up-new", "delete": "up-new", "down-same": "down-new"}
AB_LINKS = ("loopback", "25MBps-10ms")
WHAT = {"up-new": "sync up into an empty prefix", "up-same": "sync up again (nothing to copy)",
        "down-new": "sync down into an empty directory", "down-same": "sync down again (nothing to copy)",
        "delete": "sync up `--delete`, N extra keys at DST", "down-big": "sync down one object of BIG MiB"}
DEFAULTS = {"objects": 20_000, "reps": 3}


# ----------------------------------------------------------------------------------- trees

def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def before_tree(rev: str, cache: Path) -> Path:
    """A git worktree of rev (detached) in cache/SHA with its own .venv, made once and reused."""
    try:
        sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    except subprocess.CalledProcessError:
        raise SystemExit(f"--before {rev}: not a commit of {ROOT}") from None
    path = cache / sha[:12]
    if (path / ".git").exists():
        if git("rev-parse", "HEAD", cwd=path) != sha or git("status", "--porcelain", "--", "s3bulk", cwd=path):
            raise SystemExit(f"{path} is not a clean checkout of {sha}: remove it (git worktree remove --force {path})")
    else:
        cache.mkdir(parents=True, exist_ok=True)
        log(f"git worktree add {path} {sha[:12]}")
        # --force: a worktree of this path removed by hand (rm -rf) is still registered; take it over
        git("worktree", "add", "--force", "--detach", str(path), sha)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    log(f"uv sync in {path}")
    subprocess.run(["uv", "sync", "--frozen", "-q", "--extra", "dask"], cwd=path, env=env, check=True)
    return path


# ------------------------------------------------------------------------------------- run

class SyncAB:
    def __init__(self, args: argparse.Namespace, trees: dict[str, Path], work: Path) -> None:
        self.args, self.trees, self.work = args, trees, work
        self.n: int = args.objects
        self.runs: list[dict] = []
        self.srv: Server | None = None
        self.tox = None
        self.s3 = None  # a botocore client, for creating buckets
        self.src = work / "src"

    def bucket(self, tree: str) -> str:
        return f"syncab-{tree.lower()}"

    def down_bucket(self, tree: str) -> str:
        """Whose seed/ a sync down reads: the tree's own (--down-from own), or one tree's for both."""
        return self.bucket(tree if self.args.down_from == "own" else self.args.down_from)

    def env(self, tree: str, state: Path) -> dict:
        env = {k: v for k, v in tool_env("s3bulk", self.srv, self.work).items() if not k.startswith("S3BULK_")}
        env.update(XDG_CACHE_HOME=str(self.work / f"cache-{tree}"), XDG_STATE_HOME=str(state))
        return env

    def s3bulk(self, tree: str, url: str, verb: str, src: str, dst: str, extra: list[str], stem: str,
               server_pid: int | None = None) -> tuple[dict, dict | None]:
        """One measured run: footprint_bench's measures and the --json summary (None if missing)."""
        state = self.work / "state" / stem
        state.mkdir(parents=True)
        logs = self.work / "logs" / stem
        logs.mkdir(parents=True)
        argv = [str(self.trees[tree] / ".venv" / "bin" / "s3bulk"), verb, src, dst, "--endpoint-url", url,
                "--json", *extra]
        r = measured(argv, self.env(tree, state), logs, server_pid)
        r["argv"] = argv
        summary = None
        for line in (logs / "run.out").read_text(errors="replace").splitlines():
            if '"summary"' in line:
                try:
                    summary = json.loads(line)
                except ValueError:
                    pass
        shutil.rmtree(state, ignore_errors=True)
        return r, summary

    def seed(self, tree: str) -> None:
        """seed/ of the tree's bucket: the N objects, uploaded by the tree's own copy (unmeasured)."""
        self.s3.create_bucket(Bucket=self.bucket(tree))
        r, _ = self.s3bulk(tree, self.srv.url, "copy", str(self.src), f"s3://{self.bucket(tree)}/seed/", [],
                           f"seed-{tree}")
        n = self.count(self.srv.root / self.bucket(tree) / "seed")
        if r["exit"] != 0 or n != self.n:
            raise SystemExit(f"seeding {tree} failed (exit {r['exit']}, {n} objects): {r.get('error')}")

    def seed_big(self, tree: str) -> None:
        """big/big.bin in the tree's bucket, uploaded by the tree's own copy (unmeasured)."""
        big = self.work / "big" / "big.bin"
        if not big.exists():
            big.parent.mkdir(parents=True)
            chunk = os.urandom(1 << 20)
            with open(big, "wb") as f:
                for i in range(self.args.big_mib):
                    f.write(i.to_bytes(8, "little") + chunk[8:])  # no two MiB alike
        r, _ = self.s3bulk(tree, self.srv.url, "copy", str(big), f"s3://{self.bucket(tree)}/big/big.bin", [],
                           f"seed-big-{tree}")
        if r["exit"] != 0:
            raise SystemExit(f"seeding {tree}'s big object failed (exit {r['exit']}): {r.get('error')}")

    def big_ok(self, out: Path) -> str | None:
        got, want = out / "big.bin", self.work / "big" / "big.bin"
        if not got.is_file() or got.stat().st_size != want.stat().st_size:
            return f"{got} is missing or of another size"
        with open(got, "rb") as g, open(want, "rb") as w:
            while True:
                a, b = g.read(8 << 20), w.read(8 << 20)
                if a != b:
                    return f"{got} differs from what was uploaded"
                if not a:
                    return None

    @staticmethod
    def count(root: Path) -> int:
        return sum(len(files) for _, _, files in os.walk(root))

    def sample_ok(self, root: Path) -> str | None:
        for i in range(0, self.n, max(1, self.n // 50)):
            p = root / small_rel(i)
            if not p.is_file() or p.read_bytes() != small_body(i, self.args.size):
                return f"{p} is missing or differs"
        return None

    def write_extras(self, prefix_dir: Path) -> None:
        """N keys DST has and SRC not, beside each real key (dNNNN/gNNNNNNNN next to dNNNN/fNNNNNNNN),
        written into versitygw's posix directory: it lists and deletes them as objects."""
        for i in range(self.n):
            p = prefix_dir / small_rel(i).replace("/f", "/g")
            p.write_bytes(small_body(i, self.args.size))

    def check(self, scen: str, tree: str, rep: int, out: Path, summary: dict | None) -> str | None:
        want = {"up-new": (self.n, None, 0), "up-same": (0, self.n, 0), "down-new": (self.n, None, 0),
                "down-same": (0, self.n, 0), "delete": (0, self.n, self.n), "down-big": (1, None, 0)}[scen]
        if summary is not None:
            got = tuple(summary.get(k) for k in ("copied", "skipped", "deleted"))
            if summary.get("ok") is False or any(w is not None and g is not None and g != w
                                                 for w, g in zip(want, got)):
                return f"summary ok={summary.get('ok')} copied/skipped/deleted={got}, wanted {want}"
        else:
            return "no --json summary"
        if scen == "down-big":
            return self.big_ok(out)
        where = out if scen.startswith("down") else self.srv.root / self.bucket(tree) / f"up-{rep}"
        n = self.count(where)
        if n != self.n:
            return f"{where} holds {n} objects, wanted {self.n}"
        return self.sample_ok(where)

    def run_one(self, link: str, url: str, scen: str, tree: str, rep: int) -> dict:
        bucket = self.bucket(tree)
        out = self.work / "down" / f"{link}-{tree}-{rep}"
        if scen == "delete":
            self.write_extras(self.srv.root / bucket / f"up-{rep}")
        if scen.startswith("up") or scen == "delete":
            src, dst = str(self.src), f"s3://{bucket}/up-{rep}/"
        elif scen == "down-big":
            src, dst = f"s3://{bucket}/big/", str(out)
        else:  # down-new, down-same: the objects --down-from says
            src, dst = f"s3://{self.down_bucket(tree)}/seed/", str(out)
        stem = f"{link}-{scen}-{tree}-{rep}"
        proxy0 = tree_cpu_s(self.tox.proc.pid) if self.tox and url != self.srv.url else 0.0
        load = os.getloadavg()[0]
        at = f"{datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}"
        r, summary = self.s3bulk(tree, url, "sync", src, dst, ["--delete"] if scen == "delete" else [], stem,
                                 self.srv.server_pid())
        proxy_cpu = (tree_cpu_s(self.tox.proc.pid) - proxy0) if self.tox and url != self.srv.url else 0.0
        if r["timed_out"]:
            problem: str | None = "timed out"
        elif r["exit"] != 0:
            problem = f"exit {r['exit']}: {tail(self.work / 'logs' / stem / 'run.err', 400)}"
        else:
            problem = self.check(scen, tree, rep, out, summary)
        objects = 1 if scen == "down-big" else self.n
        rec = {"link": link, "scenario": scen, "tree": tree, "rep": rep, "ok": problem is None, "problem": problem,
               "utc": at, "load1_before": round(load, 2), "objects": objects, "argv": r["argv"],
               "wall_s": round(r["wall_s"], 4), "cpu_s": round(r["cpu_s"], 4),
               "cpu_us_per_object": round(r["cpu_s"] / objects * 1e6, 1),
               "peak_pss_tree_mib": round(r["peak_pss_tree_mib"], 1), "peak_rss_tree_mib": round(r["peak_rss_tree_mib"], 1),
               "processes": r["processes"], "server_cpu_s": round(r["server_cpu_s"], 3),
               "proxy_cpu_s": round(proxy_cpu, 3),
               "requests": sum(n for by in ((summary or {}).get("requests") or {}).values() for n in by.values()),
               "summary": {k: summary.get(k) for k in ("copied", "skipped", "deleted", "failed", "requests")}
               if summary else None}
        log(f"  {link} {scen} {tree} rep {rep}: wall {rec['wall_s']:.2f} s, CPU {rec['cpu_s']:.2f} s "
            f"({rec['cpu_us_per_object']:.0f} us/object), PSS {rec['peak_pss_tree_mib']:.0f} MiB, "
            f"server CPU {rec['server_cpu_s']:.2f} s" + (f"  FAILED: {problem[:300]}" if problem else ""))
        return rec

    def run_link(self, link: str) -> None:
        if LINKS[link]["rate_kbps"] is not None and self.tox is None:
            self.tox = start_toxiproxy(self.work)
        url = shaped_url(self.tox, link, self.srv.url)
        log(f"link {link} ({LINKS[link]['what']}) at {url}")
        trees = list(self.trees)
        for tree in trees:  # warm-up, not measured
            self.s3bulk(tree, url, "sync", f"s3://{self.down_bucket(tree)}/seed/{small_rel(0).split('/')[0]}/",
                        str(self.work / "warm" / tree), [], f"{link}-warm-{tree}")
            shutil.rmtree(self.work / "warm", ignore_errors=True)
        for rep in range(self.args.reps):
            for i, scen in enumerate(self.args.scenarios):
                k = (rep + i) % len(trees)
                for tree in trees[k:] + trees[:k]:
                    self.runs.append(self.run_one(link, url, scen, tree, rep))
            for tree in trees:  # the server holds the same for every round
                shutil.rmtree(self.srv.root / self.bucket(tree) / f"up-{rep}", ignore_errors=True)
            shutil.rmtree(self.work / "down", ignore_errors=True)
            shutil.rmtree(self.work / "logs", ignore_errors=True)


# --------------------------------------------------------------------------------- summary

def summarize(runs: list[dict]) -> list[dict]:
    cells: dict[tuple[str, str], dict] = {}
    for r in runs:
        c = cells.setdefault((r["link"], r["scenario"]), {"link": r["link"], "scenario": r["scenario"], "trees": {}})
        c["trees"].setdefault(r["tree"], []).append(r)
    out = []
    for c in cells.values():
        med: dict[str, dict] = {}
        for tree, rs in c["trees"].items():
            ok = [r for r in rs if r["ok"]] or rs
            med[tree] = {k: round(statistics.median(r.get(k, 0) for r in ok), 4)
                         for k in ("wall_s", "cpu_s", "cpu_us_per_object", "peak_pss_tree_mib", "server_cpu_s",
                                   "proxy_cpu_s", "requests")}
            med[tree]["ok"] = f"{sum(r['ok'] for r in rs)}/{len(rs)}"
            med[tree]["walls"] = [r["wall_s"] for r in rs]
        row = {"link": c["link"], "scenario": c["scenario"], "median": med}
        if "A" in med and "B" in med:
            row["b_over_a"] = {k: round(med["B"][k] / med["A"][k], 3) if med["A"][k] else None
                               for k in ("wall_s", "cpu_s", "peak_pss_tree_mib", "server_cpu_s", "proxy_cpu_s")}
        out.append(row)
    order_l = {ln: i for i, ln in enumerate(AB_LINKS)}
    order_s = {s: i for i, s in enumerate(SCENARIOS)}
    return sorted(out, key=lambda c: (order_l.get(c["link"], 9), order_s[c["scenario"]]))


def markdown(meta: dict, summary: list[dict], runs: list[dict]) -> str:
    n, big = meta["objects"], meta.get("big_mib", 1024)
    lines = [f"{meta['started_utc']}, {meta['machine']['nproc']} cores ({meta['machine']['cpu_model']}), "
             f"load average (1 min) before the runs {meta['load_before']:.1f}, after {meta.get('load_after', 0):.1f}. "
             f"{n:,} objects of {meta['size']} B, median of {meta['reps']} rep(s), A and B interleaved.", "",
             f"Command: `{meta['command']}`", "",
             "| link | scenario | wall s A -> B | B/A | CPU s A -> B | B/A | CPU us/object A -> B | "
             "peak PSS MiB A -> B | B/A | server CPU s A -> B | proxy CPU s A -> B | requests A, B | ok A, B |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in summary:
        a, b = c["median"].get("A"), c["median"].get("B")
        if not (a and b):
            continue
        q = c["b_over_a"]

        def ratio(k: str) -> str:
            if q.get(k) is None:
                return ""
            return f"**{q[k]:.2f}**" if abs(q[k] - 1) >= 0.1 else f"{q[k]:.2f}"
        what = WHAT[c["scenario"]].replace("BIG", f"{big:,}").replace("N", f"{n:,}")
        lines.append(f"| {LINKS[c['link']]['what']} | {what} | "
                     f"{a['wall_s']:.2f} -> {b['wall_s']:.2f} | {ratio('wall_s')} | "
                     f"{a['cpu_s']:.2f} -> {b['cpu_s']:.2f} | {ratio('cpu_s')} | "
                     f"{a['cpu_us_per_object']:.0f} -> {b['cpu_us_per_object']:.0f} | "
                     f"{a['peak_pss_tree_mib']:.0f} -> {b['peak_pss_tree_mib']:.0f} | {ratio('peak_pss_tree_mib')} | "
                     f"{a['server_cpu_s']:.2f} -> {b['server_cpu_s']:.2f} ({ratio('server_cpu_s') or '-'}) | "
                     f"{a.get('proxy_cpu_s', 0):.2f} -> {b.get('proxy_cpu_s', 0):.2f} ({ratio('proxy_cpu_s') or '-'}) | "
                     f"{a.get('requests', 0):.0f}, {b.get('requests', 0):.0f} | {a['ok']}, {b['ok']} |")
    bad = [r for r in runs if not r["ok"]]
    lines += ["", f"Down scenarios read the objects of: {meta.get('down_from', 'own')} ('own': each tree its own "
              "upload). Ratios at least 10% from 1 in bold. " + "; ".join(f"{k}: {v}" for k, v in meta["versions"].items())
              + "."]
    if bad:
        lines += ["", f"{len(bad)} run(s) failed their check (left out of the medians):"]
        lines += [f"- {r['link']} {r['scenario']} {r['tree']} rep {r['rep']}: {r['problem']}" for r in bad[:20]]
    return "\n".join(lines) + "\n"


def update_readme(md: str) -> None:
    readme = HERE / "README.md"
    text = readme.read_text()
    start, end = "<!-- sync-ab:start -->", "<!-- sync-ab:end -->"
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        raise SystemExit("bench/README.md has no sync-ab markers")
    readme.write_text(text[: i + len(start)] + "\n" + md.strip() + "\n" + text[j:])
    log("bench/README.md updated")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--before", default=BEFORE, metavar="REV", help="the tree A (default %(default)s)")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "ab-trees"), help="where A's worktree goes")
    ap.add_argument("--objects", type=int, default=DEFAULTS["objects"])
    ap.add_argument("--size", type=int, default=100, help="bytes per object (default %(default)s)")
    ap.add_argument("--reps", type=int, default=DEFAULTS["reps"], help="rounds per link (default %(default)s)")
    ap.add_argument("--links", default=",".join(AB_LINKS), help="comma list of " + ", ".join(AB_LINKS))
    ap.add_argument("--scenarios", default=",".join(DEFAULT_SCENARIOS),
                    help="comma list of " + ", ".join(SCENARIOS) + " (default all but down-big)")
    ap.add_argument("--down-from", default="own", choices=("own", "A", "B"),
                    help="whose seed/ down-new and down-same read: each tree's own upload (default), or the "
                         "objects tree A or B uploaded, for both (the same objects: the client compared alone)")
    ap.add_argument("--big-mib", type=int, default=1024, help="down-big's object in MiB (default %(default)s)")
    ap.add_argument("--name", default="", help="added to the results' file names")
    ap.add_argument("--update-readme", action="store_true", help="put the table between the markers in bench/README.md")
    ap.add_argument("--from-json", default=None, metavar="FILE", help="run nothing: print a results file's table")
    args = ap.parse_args()
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
        md = markdown(data["meta"], data["summary"], data["runs"])
        print(md)
        if args.update_readme:
            update_readme(md)
        return
    args.links = [x for x in args.links.split(",") if x]
    asked = [x for x in args.scenarios.split(",") if x]
    args.scenarios = [s for s in SCENARIOS if s in asked]  # always in the table's order
    unknown = [x for x in args.links if x not in AB_LINKS] + [x for x in asked if x not in SCENARIOS]
    if unknown or not args.scenarios or args.objects < 1 or args.reps < 1:
        ap.error(f"unknown {unknown}: --links from {AB_LINKS}, --scenarios from {SCENARIOS}; --objects and "
                 "--reps >= 1")
    missing = {s: NEEDS[s] for s in args.scenarios if s in NEEDS and NEEDS[s] not in args.scenarios}
    if missing:
        ap.error("; ".join(f"{s} runs on {need}'s result: add {need}" for s, need in missing.items()))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the clean-up below runs

    cmdline = "uv run --frozen python bench/sync_ab_bench.py" + "".join(" " + shlex.quote(x) for x in sys.argv[1:])
    started = datetime.now(timezone.utc)
    t0 = time.monotonic()
    trees = {"A": before_tree(args.before, Path(args.cache_dir)), "B": ROOT}
    if not (ROOT / ".venv" / "bin" / "s3bulk").exists():
        raise SystemExit(f"{ROOT}/.venv/bin/s3bulk is missing: run `uv sync --frozen` here")
    compile_roots(trees)
    meta = {"benchmark": "sync-ab", "date": str(started.date()), "started_utc": f"{started:%Y-%m-%d %H:%M} UTC",
            "command": cmdline, "objects": args.objects, "size": args.size, "reps": args.reps,
            "links": args.links, "scenarios": args.scenarios, "big_mib": args.big_mib, "down_from": args.down_from, "machine": machine_info(),
            "versions": versions(trees, []), "load_before": os.getloadavg()[0]}
    work = Path(tempfile.mkdtemp(prefix="s3bulk-syncab-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    bench = SyncAB(args, trees, work)
    try:
        bench.srv = start_versitygw(work, keep_alive=True)
        bench.s3 = s3_client(bench.srv)
        log(f"work dir {work}; writing {args.objects:,} files of {args.size} B and seeding each tree's bucket")
        write_small_tree(bench.src, args.objects, args.size)
        for tree in trees:
            if set(args.scenarios) - {"down-big"}:
                bench.seed(tree)
            if "down-big" in args.scenarios:
                bench.seed_big(tree)
        for link in args.links:
            bench.run_link(link)
    finally:
        if bench.tox is not None:
            bench.tox.stop()
        if bench.srv is not None:
            bench.srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    meta["load_after"] = os.getloadavg()[0]
    meta["runtime_s"] = round(time.monotonic() - t0, 1)
    summary = summarize(bench.runs)
    md = markdown(meta, summary, bench.runs)
    print(md)
    out = HERE / "results"
    out.mkdir(parents=True, exist_ok=True)
    stem = f"sync-ab-{started.date()}" + (f"-{args.name}" if args.name else "")
    if (args.objects, args.reps) != (DEFAULTS["objects"], DEFAULTS["reps"]) or args.big_mib != 1024:
        stem += "-quick"  # last, so that .gitignore's bench/results/*-quick.* keeps it out of git
    (out / f"{stem}.json").write_text(json.dumps({"meta": meta, "summary": summary, "runs": bench.runs}, indent=1))
    (out / f"{stem}.md").write_text(md)
    log(f"wrote {out / stem}.json and .md in {meta['runtime_s']:.0f} s")
    if args.update_readme:
        update_readme(md)
    if any(not r["ok"] for r in bench.runs):
        log(f"{sum(not r['ok'] for r in bench.runs)} run(s) failed their check")
        sys.exit(1)


if __name__ == "__main__":
    main()
