"""Issue 35's table in one sitting: every row re-measured with the existing benchmarks, one command,
one results file with the s3bulk figure, the peer's, the ratio, the goal and whether it is met.

    uv run --frozen python bench/scorecard.py                      # the whole table (~17 min on 2 cores)
    uv run --frozen python bench/scorecard.py --update-readme      # ... and its table into bench/README.md
    uv run --frozen python bench/scorecard.py --quick              # every row at small sizes (~3 min)
    uv run --frozen python bench/scorecard.py --rows gib,small     # some rows
    uv run --frozen python bench/scorecard.py --rows sync32        # issue 32's sync A/B (~10 min, not by default)
    uv run --frozen python bench/scorecard.py --from-json bench/results/scorecard-DATE.json --update-readme

Why: issue 35 is done when its whole table, re-measured on main in one sitting on a quiet machine,
meets every goal. Its rows come from six benchmarks with their own flags, servers and output files;
run one by one, the sittings drift apart (another hour, another load) and nobody can say which
flags made a figure. This runs them back to back, each row as a subprocess of the benchmark that
owns it (their checks, interleaving and output files unchanged), reads the row's figures from the
JSON that benchmark writes, and puts beside each: the goal, met or not, the exact sub-command, the
`uptime` before and after (load moves wall times; read each row with the load beside it), and
the machine. A row that fails (a tool's check, a server that does not start) is reported as failed
in one line and the sitting goes on.

| row | benchmark (sub-command at full size) | figure | goal |
| --- | --- | --- | --- |
| ls200k | `listing_bench.py --keys 200000 --keys-copy 0 --shapes flat,dated --ls-tools s3bulk-json,s5cmd --reps 3` (slow_s3, 50 ms a request) | `ls --json` wall vs `s5cmd ls`, each rep paired | >= 12x s5cmd in every run, flat and structured (dated) keys |
| ls1m | `listing_bench.py --keys 1000000 --keys-copy 0 --shapes flat,dated,hashed --ls-tools s3bulk,s3bulk-json,s5cmd --reps 1` | `ls` text and `--json` vs s5cmd, per key shape ("mixed" = each of the three shapes) | >= 20x both, every shape |
| one | `startup_bench.py --runs 15` (LocalStack) | one 100 B object down and up, whole process by the installed entry point, median wall vs s5cmd (aws-cli beside) | <= 2x s5cmd's time, both directions |
| gib | in this script: versitygw on loopback, one 1 GiB object, interleaved reps of `s3bulk copy` and `s5cmd cp` to tmpfs and `ceiling_read.py` (8 ranged GETs at once: curl to /dev/null, and Python threads into a reused buffer); `ceiling_get.py --write` / `--write splice` (the same 8 ranges written into the file: pwritten, or spliced socket -> pipe -> file) | s3bulk MiB/s (whole process; also shown from its first request, by its --log-requests) vs the faster ceiling's (first request to last byte) | >= 0.8x the ceiling |
| link | `link_bench.py --links 25MBps-10ms,loopback --tools s3bulk,crt,crt-tuned,aws-cli --repeats 5` (toxiproxy) | 24 / 256 MiB down and up at 25 MB/s a connection + 10 ms, 1 GiB down on loopback, medians | >= 1.25x the CRT client at its defaults and >= 1.5x aws-cli, every case (crt-tuned reported) |
| lambda | `startup_bench.py --lambda-sandbox --runs 7` (LocalStack, cgroup at 7% of a core) | the handler's cold call, import to result, vs boto3 copy_object | <= 0.7x boto3's time |
| small | `peers_bench.py --scenarios dl-small --tools s3bulk,s5cmd,obstore --reps 5` (versitygw) | 20,000 x 100 B down: obj/s and CPU-us per object, each rep paired | >= 2x s5cmd at <= 0.4x its CPU and >= 1.5x obstore, every run |
| sync32 (off by default) | `sync_ab_bench.py --down-from B` (20,000 x 100 B, 3 reps, loopback and 25 MB/s + 10 ms, A = `--sync-before REV`; both trees download this tree's objects) | sync's wall and CPU, this tree over the tree before | issue 32: no new option slows the default path (read here as CPU B/A <= 1.05 in every scenario: a 5% allowance for noise) |

`--quick` runs each row at small sizes (20,000 / 50,000 keys, 3 one-object runs, 128 MiB, 24 MiB on
the link and 1 GiB loopback once, 2,000 small objects, one rep each): it proves the rows work, not
the goals. Servers: slow_s3 (started by listing_bench), versitygw and toxiproxy (from
~/.cache/s3bulk/bin or .cache/bin, started by the benchmarks), LocalStack for `one` and `lambda`
at `--localstack` (default http://127.0.0.1:4566; started with localstack/start.sh on a free port
when nothing answers there). Peers: s5cmd and aws-cli in .cache/peers, the CRT client in .cache/crt,
obstore in .cache/obstore, boto3 in .cache/bench-boto3, each installed by its benchmark on first use.

Output: bench/results/scorecard-DATE[-quick].{json,md} (the markdown printed too) and beside it
each row's own files, renamed scorecard-DATE-ROW[-quick].* (quick files stay out of git:
.gitignore's `*-quick.*`); `--update-readme` puts the table between `<!-- scorecard:start -->` and
`<!-- scorecard:end -->` in bench/README.md. Exit 1 when a row failed to run (a goal not met is a
result, not a failure).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))

import peers_bench  # noqa: E402
from peers_bench import log, machine_info  # noqa: E402

MiB = 1 << 20
UV = "uv run --frozen python"  # how a sub-command is shown (it runs with this interpreter)


# --------------------------------------------------------------------------------- rows

class Row:
    """One row of issue 35's table: what it measures, its goal, how long it takes, how it runs."""

    def __init__(self, key: str, what: str, goal: str, minutes: float, quick_minutes: float,
                 run: Callable[[Sitting], dict]) -> None:
        self.key, self.what, self.goal = key, what, goal
        self.minutes, self.quick_minutes, self.run = minutes, quick_minutes, run


class Sitting:
    """The state of one sitting: options, names of files, the rows' results."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick: bool = args.quick
        self.started = datetime.now(timezone.utc)
        self.stem = args.name or f"scorecard-{self.started.date()}"
        self.work = Path(tempfile.mkdtemp(prefix="s3bulk-scorecard-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK)
                                          else None))
        self.localstack: str | None = None
        self.localstack_server: peers_bench.Server | None = None
        self.versions: dict[str, str] = {}

    def row_stem(self, key: str) -> str:
        return f"{self.stem}-{key}" + ("-quick" if self.quick else "")

    def fresh(self, stem: str) -> None:
        """Remove an earlier sitting's files of this name, so a benchmark that stops before writing
        cannot leave the row judging the old ones."""
        for suffix in (".json", ".md"):
            (RESULTS / f"{stem}{suffix}").unlink(missing_ok=True)

    def size(self, full: Any, quick: Any) -> Any:
        return quick if self.quick else full

    def bench(self, script: str, argv: list[str], key: str) -> tuple[int, str]:
        """Run bench/SCRIPT with argv (this interpreter; its progress on our stderr, its stdout kept in
        the work dir); (exit code, the command as a user would type it)."""
        shown = f"{UV} bench/{script}" + "".join(" " + shlex.quote(a) for a in argv)
        log(f"[{key}] {shown}")
        with open(self.work / f"{key}.stdout", "wb") as out:
            rc = subprocess.run([sys.executable, str(HERE / script), *argv], cwd=ROOT, stdout=out,
                                stdin=subprocess.DEVNULL).returncode
        return rc, shown

    def need_localstack(self) -> str:
        """The LocalStack URL for `one` and `lambda`: --localstack when it answers, else one started here."""
        if self.localstack:
            return self.localstack
        url = self.args.localstack.rstrip("/")
        try:
            urllib.request.urlopen(f"{url}/_localstack/health", timeout=5).read()
            self.localstack = url
        except OSError:
            log(f"LocalStack does not answer at {url}: starting one (localstack/start.sh)")
            self.localstack_server = peers_bench.start_localstack(self.work)
            self.localstack = self.localstack_server.url
        return self.localstack

    def close(self) -> None:
        if self.localstack_server is not None:
            self.localstack_server.stop()
        shutil.rmtree(self.work, ignore_errors=True)


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def loads(up: str) -> str:
    """The three load averages of an `uptime` line."""
    return up.rpartition("load average:")[2].strip() or up


def span(values: list[float], fmt: str = "{:.2f}", unit: str = "") -> str:
    """'a' for one value (or equal ones), 'lo-hi' for several."""
    if not values:
        return "-"
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return (lo if lo == hi else f"{lo}-{hi}") + unit


def read_json(path: Path) -> Any:
    if not path.exists():
        raise RowFailed(f"{path.name} was not written (the benchmark's stderr above says why)")
    return json.loads(path.read_text())


class RowFailed(Exception):
    """A row that could not give its figures; the message is the one line the report shows."""


class Adopted:
    """Files a benchmark writes under a fixed name (startup_bench, sync_ab_bench): after the row they are
    moved to the sitting's names, and whatever had that name before is put back."""

    def __init__(self, pattern: str, where: Path = RESULTS) -> None:
        self.pattern, self.where = pattern, where
        self.before = {p: p.read_bytes() for p in where.glob(pattern)}

    def take(self, stem: str) -> list[Path]:
        moved = []
        for p in sorted(self.where.glob(self.pattern)):
            if self.before.get(p) == p.read_bytes():
                continue
            target = self.where / f"{stem}{p.suffix}"
            shutil.move(p, target)
            moved.append(target)
            if p in self.before:
                p.write_bytes(self.before[p])
        return moved


# ----------------------------------------------------------------------------- listing rows
# Each row is a `row_*` that runs its benchmark and a `judge_*` that reads the benchmark's JSON into
# the row's cells: the judging is plain data in, data out (tests/test_scorecard.py holds it).

def listing_runs(data: dict) -> list[dict]:
    runs = [r for r in data["runs"] if r["kind"] == "ls"]
    bad = [r for r in runs if not r["ok"]]
    if bad:
        raise RowFailed(f"{bad[0]['tool']} {bad[0]['shape']} rep {bad[0]['rep'] + 1}: {bad[0]['check']}")
    return runs


def paired(runs: list[dict], shape: str, tool: str, ref: str) -> list[tuple[float, float]]:
    """(tool's wall, ref's wall) of each rep of one shape: the reps ran interleaved, so a pair shared
    the machine's load."""
    by = {(r["tool"], r["rep"]): r["wall_s"] for r in runs if r["shape"] == shape}
    return [(by[(tool, rep)], by[(ref, rep)]) for (t, rep) in sorted(by) if t == tool and (ref, rep) in by]


def judge_ls200k(data: dict, shapes: list[str]) -> dict:
    runs = listing_runs(data)
    pairs = {shape: paired(runs, shape, "s3bulk-json", "s5cmd") for shape in shapes}
    ratios = {shape: [p / m for m, p in ps] for shape, ps in pairs.items()}
    return {"s3bulk": " / ".join(f"{sh} {span([m for m, _ in ps], unit=' s')}" for sh, ps in pairs.items()),
            "peer": "s5cmd " + " / ".join(f"{span([p for _, p in ps], unit=' s')}" for ps in pairs.values()),
            "ratio": " / ".join(span(r, "{:.1f}", "x") for r in ratios.values()) + " (each rep)",
            "met": all(ratios.values()) and all(x >= 12 for r in ratios.values() for x in r),
            "details": {"pairs_s3bulk_s5cmd_s": pairs, "ratios": ratios}}


def row_ls200k(s: Sitting) -> dict:
    keys, reps, shapes = s.size(200_000, 20_000), s.size(3, 1), ["flat", "dated"]
    stem = s.row_stem("ls200k")
    s.fresh(stem)
    _, cmd = s.bench("listing_bench.py", ["--keys", str(keys), "--keys-copy", "0", "--shapes", ",".join(shapes),
                                          "--ls-tools", "s3bulk-json,s5cmd", "--reps", str(reps), "--name", stem],
                     "ls200k")
    data = read_json(RESULTS / f"{stem}.json")
    merge_versions(s, data.get("versions", {}))
    return {"commands": [cmd], "files": [f"{stem}.json", f"{stem}.md"], **judge_ls200k(data, shapes)}


def judge_ls1m(data: dict, shapes: list[str]) -> dict:
    runs = listing_runs(data)
    text = {sh: paired(runs, sh, "s3bulk", "s5cmd") for sh in shapes}
    js = {sh: paired(runs, sh, "s3bulk-json", "s5cmd") for sh in shapes}
    rt = [p / m for ps in text.values() for m, p in ps]
    rj = [p / m for ps in js.values() for m, p in ps]
    return {"s3bulk": "text " + span([m for ps in text.values() for m, _ in ps], unit=" s")
                      + " / --json " + span([m for ps in js.values() for m, _ in ps], unit=" s")
                      + f" ({', '.join(shapes)})",
            "peer": "s5cmd " + span([p for ps in text.values() for _, p in ps], unit=" s"),
            "ratio": f"{span(rt, '{:.1f}', 'x')} / {span(rj, '{:.1f}', 'x')} (over the shapes)",
            "met": bool(rt and rj) and min(rt + rj) >= 20,
            "details": {"text_pairs_s": text, "json_pairs_s": js}}


def row_ls1m(s: Sitting) -> dict:
    keys, shapes = s.size(1_000_000, 50_000), s.args.ls1m_shapes.split(",")
    stem = s.row_stem("ls1m")
    s.fresh(stem)
    _, cmd = s.bench("listing_bench.py", ["--keys", str(keys), "--keys-copy", "0", "--shapes", ",".join(shapes),
                                          "--ls-tools", "s3bulk,s3bulk-json,s5cmd", "--reps", "1", "--name", stem],
                     "ls1m")
    data = read_json(RESULTS / f"{stem}.json")
    merge_versions(s, data.get("versions", {}))
    return {"commands": [cmd], "files": [f"{stem}.json", f"{stem}.md"], **judge_ls1m(data, shapes)}


# ----------------------------------------------------------------------------- start-up rows

DIRECTIONS = ("download", "upload")


def judge_one(data: list[dict]) -> dict:
    med = {(r["tool"], r["direction"]): r for r in data}
    try:
        mine = {d: med[("s3bulk", d)] for d in DIRECTIONS}
        s5 = {d: med[("s5cmd", d)] for d in DIRECTIONS}
        aws = {d: med[("aws-cli", d)]["wall_ms"] for d in DIRECTIONS}
    except KeyError as exc:
        raise RowFailed(f"startup_bench's results have no {exc}") from None
    ratios = {d: mine[d]["wall_ms"] / s5[d]["wall_ms"] for d in DIRECTIONS}
    run_ratios = {d: [a[0] / b[0] for a, b in zip(mine[d]["runs"], s5[d]["runs"])] for d in DIRECTIONS}
    return {"s3bulk": " / ".join(f"{mine[d]['wall_ms']} ms ({mine[d]['cpu_ms']} CPU)" for d in DIRECTIONS),
            "peer": "s5cmd " + " / ".join(f"{s5[d]['wall_ms']}" for d in DIRECTIONS) + " ms, aws-cli "
                    + " / ".join(f"{aws[d]}" for d in DIRECTIONS) + " ms",
            "ratio": " / ".join(f"{ratios[d]:.2f}x" for d in DIRECTIONS)
                     + f" s5cmd's time (run by run {span(run_ratios['download'] + run_ratios['upload'], unit='x')})",
            "met": all(r <= 2 for r in ratios.values()),
            "details": {"median_ratio": ratios, "run_ratios": run_ratios}}


def row_one(s: Sitting) -> dict:
    ep = s.need_localstack()
    stem = s.row_stem("one")
    adopted = Adopted("startup-2*.json")
    rc, cmd = s.bench("startup_bench.py", ["--endpoint", ep, "--runs", str(s.size(15, 3))], "one")
    files = adopted.take(stem)
    if rc != 0 or not files:
        raise RowFailed(f"startup_bench.py exited {rc} (its stderr above)")
    return {"commands": [cmd], "files": [f.name for f in files], **judge_one(read_json(files[0]))}


def judge_lambda(data: list[dict]) -> dict:
    by = {r["tool"]: r for r in data}
    mine, boto = by.get("s3bulk handler"), by.get("boto3 copy_object")
    if not (mine and boto):
        raise RowFailed(f"startup_bench's lambda results name {sorted(by)}")
    ratio = mine["wall_s"] / boto["wall_s"]
    return {"s3bulk": f"{mine['wall_s']:.2f} s ({mine['cpu_ms']} ms CPU, {mine['peak_rss_mib']} MiB)",
            "peer": f"boto3 copy_object {boto['wall_s']:.2f} s ({boto['cpu_ms']} ms CPU)",
            "ratio": f"{ratio:.2f}x boto3's time", "met": ratio <= 0.7,
            "details": {"s3bulk_runs": mine.get("runs"), "boto3_runs": boto.get("runs")}}


def row_lambda(s: Sitting) -> dict:
    ep = s.need_localstack()
    stem = s.row_stem("lambda")
    adopted = Adopted("startup-lambda-*.json")
    rc, cmd = s.bench("startup_bench.py", ["--lambda-sandbox", "--endpoint", ep, "--runs", str(s.size(7, 1))],
                      "lambda")
    files = adopted.take(stem)
    if rc != 0 or not files:
        raise RowFailed(f"startup_bench.py --lambda-sandbox exited {rc} (its stderr above)")
    return {"commands": [cmd], "files": [f.name for f in files], **judge_lambda(read_json(files[0]))}


# ----------------------------------------------------------------------------- 1 GiB to the ceiling

def request_span(requests_log: Path) -> float | None:
    """First request's start to the last answer's end, from s3bulk's --log-requests lines ("TIMEZ PID
    METHOD URL STATUS ... time=N.Nms"): s3bulk on the ceilings' clock, which starts at their first request."""
    spans = []
    for line in requests_log.read_text().splitlines() if requests_log.exists() else []:
        m = re.match(r"(\S+)Z .* time=([0-9.]+)ms", line)
        if m:
            start = datetime.fromisoformat(m.group(1)).replace(tzinfo=timezone.utc).timestamp()
            spans.append((start, start + float(m.group(2)) / 1000))
    return max(e for _, e in spans) - min(s for s, _ in spans) if spans else None


def cpu_floor(records: list[dict], goal_wall_s: float, cores: int) -> tuple[dict, str]:
    """Each tool's CPU (its process tree's user+sys, and versitygw's over the same run) against the
    cores x its wall: (client + server CPU) / cores is a floor under any wall of a way that costs that
    much CPU. When the floor of every file-writing way is above the goal's wall, no such way reaches
    the goal on this machine, whatever it overlaps; this puts that arithmetic in the row with numbers."""
    per: dict[str, dict] = {}
    for tool in dict.fromkeys(r["tool"] for r in records):
        good = [r for r in records if r["tool"] == tool and r["ok"] and r.get("server_cpu_s") is not None]
        if not good:
            continue
        client = statistics.median(r["cpu_s"] for r in good)
        server = statistics.median(r["server_cpu_s"] for r in good)
        wall = statistics.median(r["wall_s"] for r in good)
        per[tool] = {"wall_s": round(wall, 3), "client_cpu_s": round(client, 3), "server_cpu_s": round(server, 3),
                     "floor_s": round((client + server) / cores, 3),
                     "busy": round((client + server) / (cores * wall), 3) if wall else None}
    if not per:
        return {}, ""
    above = [t for t, c in per.items() if c["floor_s"] > goal_wall_s]
    text = (f"CPU a run, whole process (client + versitygw = sum, over {cores} cores x wall): "
            + "; ".join(f"{t} {c['client_cpu_s']:.2f} + {c['server_cpu_s']:.2f} = "
                        f"{c['client_cpu_s'] + c['server_cpu_s']:.2f} s over {cores} x {c['wall_s']:.2f} s "
                        f"({c['busy']:.0%} busy, floor {c['floor_s']:.2f} s)" for t, c in per.items())
            + f". The goal's wall (0.8x the ceiling): {goal_wall_s:.2f} s"
            + (f"; below the CPU floor of {', '.join(above)}" if above
               else "; above every tool's CPU floor (CPU alone does not rule it out)"))
    return {"tools": per, "cores": cores, "goal_wall_s": round(goal_wall_s, 3), "floor_above_goal": above}, text


def judge_gib(records: list[dict], mib: int, cores: int | None = None) -> dict:
    """s3bulk's MiB/s (whole process) against the faster ceiling reader's (first request to last byte)."""
    bad = [r for r in records if not r["ok"]]
    med: dict[str, float] = {}
    for tool in dict.fromkeys(r["tool"] for r in records):
        good = [r["seconds"] for r in records if r["tool"] == tool and r["ok"]]
        if good:
            med[tool] = mib / statistics.median(good)  # MiB/s at the median
    ceilings = [t for t in med if t.startswith("ceiling")]
    if "s3bulk" not in med or not ceilings:
        raise RowFailed(f"{bad[0]['tool']}: {bad[0]['problem']}" if bad else "no figures")
    top = max(ceilings, key=lambda t: med[t])
    ratio = med["s3bulk"] / med[top]
    # the best a tool that writes the file reaches here: 8 ranges pwritten, or spliced (one copy a byte)
    files = [t for t in ("ceiling-file", "ceiling-splice") if t in med]
    best_file = max(files, key=lambda t: med[t]) if files else ""
    versus = f"{med['s3bulk'] / med[best_file]:.2f}x {best_file}" if best_file else ""
    if best_file and best_file != "ceiling-file" and "ceiling-file" in med:
        versus += f", {med['s3bulk'] / med['ceiling-file']:.2f}x ceiling-file"
    before = f"; A tree {med['s3bulk-before']:,.0f} MiB/s" if "s3bulk-before" in med else ""
    # s3bulk on the ceilings' clock too (first request to last byte): the verdict stays on the whole process
    spans = [r["from_first_request_s"] for r in records
             if r["tool"] == "s3bulk" and r["ok"] and r.get("from_first_request_s")]
    first_clock = mib / statistics.median(spans) if spans else 0.0
    from_first = (f"; {first_clock:,.0f} MiB/s from its first request ({first_clock / med[top]:.2f}x the ceiling"
                  + (f", {first_clock / med[best_file]:.2f}x {best_file}" if best_file else "") + ")") if spans else ""
    cpu, cpu_text = cpu_floor(records, mib / (0.8 * med[top]), cores or len(os.sched_getaffinity(0)))
    return {"s3bulk": f"{med['s3bulk']:,.0f} MiB/s ({mib} MiB, whole process{from_first})",
            "peer": f"ceiling {med[top]:,.0f} MiB/s (8 ranges at once: "
                    + ", ".join(f"{t.removeprefix('ceiling-')} {med[t]:,.0f}" for t in ceilings) + ")"
                    + (f"; s5cmd {med['s5cmd']:,.0f} MiB/s" if "s5cmd" in med else ""),
            "ratio": f"{ratio:.2f}x the ceiling" + (f" ({versus})" if versus else "")
                     + (f", {med['s3bulk'] / med['s5cmd']:.2f}x s5cmd" if "s5cmd" in med else "") + before,
            "met": ratio >= 0.8 and not bad, "note": cpu_text,
            "details": {"mib_per_s": med, "ceiling": top, "s3bulk_from_first_request_mib_per_s": first_clock,
                        "cpu": cpu,
                        "failed_runs": [f"{r['tool']} rep {r['rep'] + 1}: {r['problem']}" for r in bad]}}


def row_gib(s: Sitting) -> dict:
    """1 GiB down on loopback against the machine's ceiling, in one interleaved run on its own server."""
    from sync_peers import ensure_peers

    mib, reps = s.size(1024, 128), s.size(5, 1)
    ensure_peers()
    peers_bench.ensure_bytecode()
    work = s.work / "gib"
    work.mkdir()
    srv = peers_bench.start_versitygw(work, keep_alive=True)
    try:
        import botocore.config
        import botocore.session

        s3 = peers_bench.s3_client(srv)
        s3.create_bucket(Bucket="gib")
        src = work / "big.bin"
        log(f"[gib] writing and putting a {mib} MiB object")
        sha = peers_bench.write_big(src, mib)
        with open(src, "rb") as f:
            s3.put_object(Bucket="gib", Key="big.bin", Body=f)
        src.unlink()
        signer = botocore.session.get_session().create_client(
            "s3", endpoint_url=srv.url, region_name="us-east-1", aws_access_key_id=srv.access,
            aws_secret_access_key=srv.secret,
            config=botocore.config.Config(signature_version="s3v4", s3={"addressing_style": "path"}))
        url = signer.generate_presigned_url("get_object", Params={"Bucket": "gib", "Key": "big.bin"}, ExpiresIn=7200)
        out = work / "out"
        dst = out / "big.bin"
        requests_log = work / "requests.log"
        ceiling = [sys.executable, str(HERE / "ceiling_read.py"), url, "--size", str(mib * MiB)]
        tools: dict[str, list[str]] = {
            # its requests logged (a line each, ~35 lines): its clock from the first request, as the ceilings'
            "s3bulk": [str(peers_bench.S3BULK), "copy", "s3://gib/big.bin", str(dst), "--endpoint-url", srv.url,
                       "--log-requests", str(requests_log)],
            "s5cmd": [str(peers_bench.S5CMD), "--endpoint-url", srv.url, "cp", "s3://gib/big.bin", str(dst)],
            "ceiling-curl": ceiling,
            "ceiling-python": [*ceiling, "--reader", "python"],
            # the same 8 ranges also pwritten into the file, as a download to tmpfs must (ceiling_get.py)
            "ceiling-file": [sys.executable, str(HERE / "ceiling_get.py"), "s3://gib/big.bin", str(dst),
                             "--endpoint-url", srv.url, "--write"],
            # the same, spliced socket -> pipe -> file (one kernel copy a byte): the best file-writing reader here
            "ceiling-splice": [sys.executable, str(HERE / "ceiling_get.py"), "s3://gib/big.bin", str(dst),
                               "--endpoint-url", srv.url, "--write", "splice"],
        }
        if s.args.gib_before:  # the A tree's s3bulk, interleaved with this one's
            tools["s3bulk-before"] = [str(Path(s.args.gib_before) / ".venv" / "bin" / "s3bulk"), *tools["s3bulk"][1:]]
        shown = {t: " ".join(shlex.quote(a) for a in argv).replace(url, "PRESIGNED-URL").replace(str(work), "WORK")
                 .replace(str(ROOT) + "/", "") for t, argv in tools.items()}
        env = dict(peers_bench.tool_env("s3bulk", srv, work), XDG_CACHE_HOME=str(work / "cache"))
        names = list(tools)
        records: list[dict] = []

        def once(tool: str, rep: int) -> dict:
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            run_env = dict(env, XDG_STATE_HOME=str(work / f"state-{tool}-{rep}"))
            requests_log.unlink(missing_ok=True)  # --log-requests appends
            load = os.getloadavg()[0]
            r = peers_bench.run_measured(tools[tool], run_env, work / "run.out", work / "run.err", 600,
                                         srv.server_pid())
            rec = {"tool": tool, "rep": rep, "wall_s": r["wall_s"], "seconds": r["wall_s"], "cpu_s": r["cpu_s"],
                   "exit": r["exit"], "peak_rss_tree_mib": r["peak_rss_tree_mib"],
                   "server_cpu_s": r["server_cpu_s"], "load1_before": load}
            problem = None
            if r["exit"] != 0:
                problem = f"exit {r['exit']}: {peers_bench.tail(work / 'run.err', 300).strip()}"
            elif tool in ("ceiling-file", "ceiling-splice"):  # "N MiB/s (8 ranges, X s)": first request to last byte
                took = re.search(r"([0-9.]+) s\)", (work / "run.out").read_text())
                if took is None:
                    problem = f"ceiling_get printed {peers_bench.tail(work / 'run.out', 200)!r}"
                else:
                    rec["seconds"] = float(took.group(1))
            elif tool.startswith("ceiling"):
                try:
                    rec["seconds"] = json.loads((work / "run.out").read_text())["seconds"]  # first request to last byte
                except (ValueError, KeyError):
                    problem = f"ceiling_read printed {peers_bench.tail(work / 'run.out', 200)!r}"
            elif not dst.exists() or peers_bench.sha256_file(dst) != sha:
                problem = "the downloaded file differs from the object"
            if tool.startswith("s3bulk") and problem is None:
                rec["from_first_request_s"] = request_span(requests_log)
            rec["ok"], rec["problem"] = problem is None, problem
            if rep >= 0:
                log(f"[gib] {tool} rep {rep + 1}: {rec['seconds']:.2f} s"
                    + (f" ({mib / rec['seconds']:,.0f} MiB/s)" if problem is None else f" FAILED: {problem}"))
            shutil.rmtree(out, ignore_errors=True)
            return rec

        for tool in names:  # warm-up, not measured: page cache, .pyc files, s3bulk's endpoint cache
            once(tool, -1)
        for rep in range(reps):  # interleaved, every tool first in turn
            k = rep % len(names)
            for tool in names[k:] + names[:k]:
                records.append(once(tool, rep))
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    stem = s.row_stem("gib")
    versions = {"s5cmd": peers_bench.tool_version("s5cmd"), "versitygw": peers_bench.tool_version("versitygw"),
                "curl": subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.split(" ")[1]}
    (RESULTS / f"{stem}.json").write_text(json.dumps({"mib": mib, "reps": reps, "commands": shown,
                                                      "versions": versions, "records": records}, indent=1))
    merge_versions(s, versions)
    cmd = f"{UV} bench/scorecard.py --rows gib" + (" --quick" if s.quick else "")
    return {"commands": [cmd] + [f"{t}: `{c}`" for t, c in shown.items()], "files": [f"{stem}.json"],
            **judge_gib(records, mib)}


# ----------------------------------------------------------------------------- link and small objects

def cell_label(c: dict) -> str:
    """'24 down', '256 up', '1024 down lo' (loopback): a link_bench cell, short."""
    return f"{c['mib']} {c['direction']}" + (" lo" if c["link"] == "loopback" else "")


def seconds(c: dict, tool: str) -> str:
    t = c["tools"].get(tool, {})
    return f"{t['median_s']:.2f} s" if "median_s" in t else "-"


def merge_versions(s: Sitting, versions: dict) -> None:
    """The peers' and servers' versions a row's benchmark recorded; the first row to name one wins."""
    for k, v in versions.items():
        if not k.startswith("s3bulk"):
            s.versions.setdefault(k, v)


def judge_link(data: dict) -> dict:
    """The CRT client's and aws-cli's goals of link_bench's summary (its other goal, loopback >= s5cmd,
    is not this row's: the gib row has s5cmd); crt-tuned reported beside."""
    cells, ratios, met = [], [], True
    for c in data["summary"]:
        tools = c["tools"]
        if "median_s" not in tools.get("s3bulk", {}):
            raise RowFailed(f"s3bulk failed {cell_label(c)} on {c['link']}")
        got = []
        for g in c.get("goals", []):
            if g["ref"] not in ("crt", "aws-cli"):
                continue
            m = g["s3bulk"].get("s3bulk")
            met = met and bool(m and m["met"])
            got.append(f"{m['ratio']:.2f}x" if m else "-")
        tuned = tools.get("crt-tuned", {}).get("median_s")
        cells.append(f"{cell_label(c)} {tools['s3bulk']['median_s']:.2f} s")
        ratios.append(f"{cell_label(c)} {' / '.join(got)}"
                      + (f" (tuned CRT: {tuned / tools['s3bulk']['median_s']:.2f}x)" if tuned else ""))
    return {"s3bulk": "; ".join(cells),
            "peer": "CRT / aws-cli: " + "; ".join(f"{cell_label(c)} {seconds(c, 'crt')} / {seconds(c, 'aws-cli')}"
                                                 for c in data["summary"]),
            "ratio": "vs CRT / aws-cli: " + "; ".join(ratios), "met": met and bool(cells),
            "details": {"summary": data["summary"]}}


def row_link(s: Sitting) -> dict:
    stem = s.row_stem("link")
    s.fresh(stem)
    argv = ["--links", "25MBps-10ms,loopback", "--tools", "s3bulk,crt,crt-tuned,aws-cli",
            "--repeats", str(s.size(5, 1)), "--name", stem,
            "--note", "the scorecard sitting (bench/scorecard.py), load beside its row."]
    if s.quick:
        argv += ["--sizes", "24,1024"]
    _, cmd = s.bench("link_bench.py", argv, "link")
    data = read_json(RESULTS / f"{stem}.json")
    merge_versions(s, data.get("versions", {}))
    return {"commands": [cmd], "files": [f"{stem}.json", f"{stem}.md"], **judge_link(data)}


def judge_small(data: dict) -> dict:
    """Each rep's s3bulk run against the same rep's s5cmd and obstore runs (interleaved: same load)."""
    runs = [r for r in data["runs"] if r["scenario"] == "dl-small"]
    bad = [r for r in runs if not r["ok"]]
    if bad:
        raise RowFailed(f"{bad[0]['tool']} rep {bad[0]['rep'] + 1}: {bad[0]['check']}")
    by = {(r["tool"], r["rep"]): r for r in runs}
    per_rep = []
    for rep in sorted({r["rep"] for r in runs}):
        m, p, o = by.get(("s3bulk", rep)), by.get(("s5cmd", rep)), by.get(("obstore", rep))
        if not (m and p and o):
            raise RowFailed(f"rep {rep + 1} lacks a tool's run")
        per_rep.append({"speed_vs_s5cmd": m["obj_per_s"] / p["obj_per_s"],
                        "cpu_vs_s5cmd": m["cpu_us_per_obj"] / p["cpu_us_per_obj"],
                        "speed_vs_obstore": m["obj_per_s"] / o["obj_per_s"]})

    def fig(tool: str) -> str:
        a = next(v for k, v in data["summary"].items() if k.endswith(f"|dl-small|{tool}"))
        return f"{a['obj_per_s']:,.0f} obj/s at {a['cpu_us_per_obj']:,.0f} CPU-us"
    sp = [r["speed_vs_s5cmd"] for r in per_rep]
    cp = [r["cpu_vs_s5cmd"] for r in per_rep]
    ob = [r["speed_vs_obstore"] for r in per_rep]
    return {"s3bulk": fig("s3bulk") + " (median)", "peer": f"s5cmd {fig('s5cmd')}, obstore {fig('obstore')}",
            "ratio": f"{span(sp, unit='x')} s5cmd at {span(cp, unit='x')} its CPU; {span(ob, unit='x')} obstore "
                     f"(each of {len(per_rep)} rep(s))",
            "met": bool(per_rep) and all(a >= 2 for a in sp) and all(c <= 0.4 for c in cp)
                   and all(b >= 1.5 for b in ob),
            "details": {"per_rep": per_rep}}


def row_small(s: Sitting) -> dict:
    stem = s.row_stem("small")
    s.fresh(stem)
    argv = ["--scenarios", "dl-small", "--tools", "s3bulk,s5cmd,obstore", "--reps", str(s.size(5, 1)), "--name", stem]
    if s.quick:
        argv += ["--small", "2000"]
    _, cmd = s.bench("peers_bench.py", argv, "small")
    data = read_json(RESULTS / f"{stem}.json")
    merge_versions(s, data.get("versions", {}))
    return {"commands": [cmd], "files": [f"{stem}.json", f"{stem}.md"], **judge_small(data)}


def judge_sync32(data: dict, before: str) -> dict:
    rows = [c for c in data["summary"] if c.get("b_over_a")]
    wall = [c["b_over_a"]["wall_s"] for c in rows if c["b_over_a"]["wall_s"]]
    cpu = [c["b_over_a"]["cpu_s"] for c in rows if c["b_over_a"]["cpu_s"]]
    worst = max(rows, key=lambda c: c["b_over_a"]["cpu_s"] or 0) if rows else None
    return {"s3bulk": f"this tree over {before}: wall {span(wall, unit='x')}, CPU {span(cpu, unit='x')}"
                      + (f" (most CPU: {worst['scenario']} on {worst['link']})" if worst else ""),
            "peer": f"the tree at {before}", "ratio": f"CPU B/A {span(cpu, unit='x')}",
            "met": bool(cpu) and max(cpu) <= 1.05, "details": {"summary": data["summary"]}}


def row_sync32(s: Sitting) -> dict:
    # both trees download the same objects (this tree's uploads, which carry the files' times): the
    # down scenarios then compare the two clients on one server's identical answers, this one doing
    # the file-time work its objects ask for (sync_ab_bench.py --down-from; bench/README "Sync down:
    # what differs on the wire" for the server's side of stored times)
    argv = ["--before", s.args.sync_before, "--name", "scorecard", "--down-from", "B"]
    if s.quick:
        argv += ["--objects", "500", "--reps", "1"]
    adopted = Adopted("sync-ab-*-scorecard*")
    rc, cmd = s.bench("sync_ab_bench.py", argv, "sync32")
    files = adopted.take(s.row_stem("sync32"))
    js = [f for f in files if f.suffix == ".json"]
    if not js:
        raise RowFailed(f"sync_ab_bench.py exited {rc} without results")
    return {"commands": [cmd], "files": [f.name for f in files], **judge_sync32(read_json(js[0]), s.args.sync_before)}


ROWS: dict[str, Row] = {r.key: r for r in (
    Row("ls200k", "`ls` 200,000 keys at 50 ms a request, `--json` (flat / structured keys)",
        ">= 12x s5cmd in every run", 2, 0.5, row_ls200k),
    Row("ls1m", "`ls` 1,000,000 keys at 50 ms (flat, dated, hashed), text / `--json`",
        ">= 20x s5cmd both", 5, 0.7, row_ls1m),
    Row("one", "one small object, whole process (installed entry point), down / up",
        "<= 2x s5cmd's time", 1, 0.3, row_one),
    Row("gib", "1 GiB download to tmpfs (loopback, versitygw)", ">= 0.8x the machine's ceiling", 1, 0.3, row_gib),
    Row("link", "24 / 256 MiB down / up at 25 MB/s a connection + 10 ms; 1 GiB on loopback",
        ">= 1.25x the CRT client at its defaults and >= 1.5x aws-cli, every case", 4, 0.7, row_link),
    Row("lambda", "one object through the Lambda handler, 128 MB sandbox at 7% of a core, cold",
        "<= 0.7x boto3 copy_object's time", 1.5, 0.2, row_lambda),
    Row("small", "20,000 x 100 B down (versitygw)", ">= 2x s5cmd at <= 0.4x its CPU and >= 1.5x obstore, every run",
        2.5, 0.4, row_small),
    Row("sync32", "issue 32: 20,000 x 100 B sync, this tree against the tree before (loopback and shaped)",
        "no slower (CPU B/A <= 1.05, every scenario)", 10, 0.5, row_sync32),
)}
DEFAULT_ROWS = [k for k in ROWS if k != "sync32"]


# ----------------------------------------------------------------------------- the report

def git_rev() -> str:
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "s3bulk"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    return rev + (" + uncommitted changes in s3bulk/" if dirty else "")


def markdown(data: dict) -> str:
    m = data["machine"]
    lines = [f"Sitting of {data['started_utc']} to {data['ended_utc']}{' (QUICK sizes: proves the rows run, not the goals)' if data['quick'] else ''}: "
             f"s3bulk {data['s3bulk']}; {m['nproc']} cores ({m['cpu_model']}), {m['mem_mib']:,} MiB RAM, Linux "
             f"{m['kernel']}, Python {m['python']}; `uptime` at the start: {data['uptime_start']}.",
             f"Command: `{data['command']}`. Each row's figures are medians of its benchmark's runs unless the "
             "cell says otherwise; its sub-command, files and load are under the table.", "",
             "| row | s3bulk | peer | ratio | goal | met |", "| --- | --- | --- | --- | --- | --- |"]
    for r in data["rows"]:
        met = "FAILED to run" if r.get("error") else {True: "**met**", False: "not met", None: "-"}[r.get("met")]
        if r.get("error"):
            lines.append(f"| {r['what']} | {r['error']} | | | {r['goal']} | {met} |")
        else:
            lines.append(f"| {r['what']} | {r['s3bulk']} | {r['peer']} | {r['ratio']} | {r['goal']} | {met} |")
    lines.append("")
    for r in data["rows"]:
        files = ", ".join(f"`results/{f}`" for f in r.get("files", []))
        lines.append(f"- **{r['key']}** ({r['started_utc'][11:16]} UTC, {r['seconds'] / 60:.1f} min; load "
                     f"{loads(r['uptime_before'])} -> {loads(r['uptime_after'])}): "
                     + "; ".join(f"`{c}`" if not c.endswith("`") else c for c in r.get("commands", []))
                     + (f"; files {files}" if files else "") + "."
                     + (f" {r['note']}." if r.get("note") else ""))
    if data.get("versions"):
        lines += ["", "Versions: " + "; ".join(f"{k} {v}" for k, v in sorted(data["versions"].items())) + "."]
    return "\n".join(lines) + "\n"


def update_readme(md: str, readme: Path = HERE / "README.md") -> None:
    text = readme.read_text()
    start, end = "<!-- scorecard:start -->", "<!-- scorecard:end -->"
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        raise SystemExit("bench/README.md has no scorecard markers")
    readme.write_text(text[: i + len(start)] + "\n" + md.strip() + "\n" + text[j:])
    log("bench/README.md updated")


def run_row(s: Sitting, row: Row) -> dict:
    up0, t0 = uptime(), time.monotonic()
    started = datetime.now(timezone.utc)
    log(f"=== row {row.key}: {row.what} (goal {row.goal}); `uptime`: {up0}")
    rec: dict[str, Any] = {"key": row.key, "what": row.what, "goal": row.goal,
                           "started_utc": f"{started:%Y-%m-%dT%H:%M:%SZ}", "uptime_before": up0}
    try:
        rec.update(row.run(s))
        rec["error"] = None
    except RowFailed as exc:
        rec.update(error=str(exc), met=None)
    except Exception as exc:  # one row's trouble does not end the sitting
        rec.update(error=f"{type(exc).__name__}: {exc}", met=None)
    except SystemExit as exc:  # a helper's one-line refusal (a server that does not start)
        rec.update(error=str(exc.code), met=None)
    rec["uptime_after"], rec["seconds"] = uptime(), round(time.monotonic() - t0, 1)
    log(f"=== row {row.key}: " + (f"FAILED: {rec['error']}" if rec["error"] else
                                   f"{rec['ratio']} ({'met' if rec['met'] else 'not met'}) in {rec['seconds']:.0f} s"))
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--rows", default=",".join(DEFAULT_ROWS),
                    help="comma list of " + ", ".join(ROWS) + " (default all but sync32)")
    ap.add_argument("--quick", action="store_true", help="small sizes, one rep: to check the rows run")
    ap.add_argument("--localstack", default="http://127.0.0.1:4566",
                    help="LocalStack for the one and lambda rows (default %(default)s; one is started if it "
                         "does not answer)")
    ap.add_argument("--ls1m-shapes", default="flat,dated,hashed", help="key shapes of the ls1m row (default %(default)s)")
    ap.add_argument("--gib-before", default="", metavar="ROOT",
                    help="a checkout whose .venv/bin/s3bulk the gib row also runs, interleaved (an A tree)")
    ap.add_argument("--sync-before", default="ca25f19", metavar="REV", help="the A tree of the sync32 row")
    ap.add_argument("--name", default="", help="results stem (default scorecard-DATE; -quick is added when quick)")
    ap.add_argument("--update-readme", action="store_true", help="put the table between the markers in bench/README.md")
    ap.add_argument("--from-json", default=None, metavar="FILE", help="run nothing: print a results file's table")
    args = ap.parse_args()
    if args.from_json:
        md = markdown(json.loads(Path(args.from_json).read_text()))
        print(md)
        if args.update_readme:
            update_readme(md)
        return
    keys = [k for k in args.rows.split(",") if k]
    unknown = [k for k in keys if k not in ROWS]
    if unknown or not keys:
        ap.error(f"unknown rows {unknown}: choose from {', '.join(ROWS)}")
    rows = [ROWS[k] for k in keys]
    sitting = Sitting(args)
    estimate = sum(r.quick_minutes if args.quick else r.minutes for r in rows)
    cmdline = f"{UV} bench/scorecard.py" + "".join(" " + shlex.quote(a) for a in sys.argv[1:])
    log(f"rows {', '.join(keys)}: about {estimate:.0f} min on a quiet 2-core machine; work dir {sitting.work}")
    data: dict[str, Any] = {"benchmark": "scorecard", "command": cmdline, "quick": args.quick,
                            "started_utc": f"{sitting.started:%Y-%m-%d %H:%M} UTC", "s3bulk": git_rev(),
                            "machine": machine_info(), "uptime_start": uptime(), "rows": []}
    stem = sitting.stem + ("-quick" if args.quick else "")
    try:
        for row in rows:
            data["rows"].append(run_row(sitting, row))
            data["versions"] = sitting.versions
            data["ended_utc"] = f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"
            (RESULTS / f"{stem}.json").write_text(json.dumps(data, indent=1, default=str))  # readable early
    finally:
        sitting.close()
    data["uptime_end"] = uptime()
    (RESULTS / f"{stem}.json").write_text(json.dumps(data, indent=1, default=str))
    md = markdown(data)
    (RESULTS / f"{stem}.md").write_text(md)
    print(md)
    log(f"wrote {RESULTS / stem}.json and .md")
    if args.update_readme:
        if args.quick:
            log("note: updating bench/README.md with a quick sitting")
        update_readme(md)
    if any(r.get("error") for r in data["rows"]):
        sys.exit(1)


if __name__ == "__main__":
    main()
