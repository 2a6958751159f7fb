"""Run invocations that must fail (bad input, refusals, unreachable or missing stores) with two
s3bulk installs and compare what each prints and how it exits.

A refactor (issue 34) must not change what a user sees when they err: the one line, the exit code,
the `--json` error object. This runs each invocation below with A's and B's `s3bulk` (their own
virtualenvs), in fresh empty directories and state homes, no server needed (memory:// buckets are
empty per process, an endpoint on a closed port fails at once), and prints every difference.

    python scripts/compare_failures.py A_TREE [B_TREE]     # B defaults to this checkout

Exit 0 when all outputs are the same (paths of the temporary directories normalised), 1 otherwise.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEAD = "http://127.0.0.1:1"  # nothing listens: connection refused at once

INVOCATIONS: list[str] = [
    "",
    "--version-bogus",
    "copy",
    "copy only-one-arg",
    "copy {d}/missing {d}/out",
    "copy {d}/missing {d}/out --json",
    "copy memory://nobucket/ {d}/out",
    "copy memory://nobucket/ {d}/out --json",
    "copy {d}/src/ memory://b/p/ --part-size 1",
    "copy {d}/src/ memory://b/p/ --part-size banana",
    "copy {d}/src/ memory://b/p/ --max-memory 1",
    "copy {d}/src/ memory://b/p/ --workers -1",
    "copy {d}/src/ memory://b/p/ --concurrency 0",
    "copy {d}/src/ memory://b/p/ --retries -2",
    "copy {d}/src/ ftp://host/x",
    "copy {d}/src/ s3://",
    "copy {d}/src/ s3://Bad_Bucket!/x",
    "copy {d}/src/ s3://b/x --endpoint-url notaurl",
    "copy {d}/src/ s3://b/x --endpoint-url " + DEAD + " --retries 0",
    "copy {d}/src/ s3://b/x --endpoint-url " + DEAD + " --retries 0 --json",
    "copy {d}/src/ {d}/src/inside/",
    "copy {d}/src/ {d}/out --include '['",
    "copy {d}/src/ {d}/out --files-from {d}/nofile",
    "copy {d}/src/ {d}/out --resume --no-journal",
    "copy {d}/src/ {d}/out --max-transfer lots",
    "copy {d}/src/ {d}/out --max-duration soon",
    "copy {d}/src/ {d}/out --report {d}/r.txt",
    "copy {d}/src/ {d}/out --backup-dir {d}/out/bak",
    "copy {d}/src/ {d}/out --suffix .old",
    "copy {d}/src/ {d}/out --cluster nowhere:1",
    "copy {d}/src/ {d}/out --storage-class SHINY",
    "copy {d}/src/ {d}/out --metadata novalue",
    "copy {d}/src/ {d}/out --checksum-algorithm MD4",
    "copy {d}/src/ {d}/out --all-versions",
    "copy {d}/src/ {d}/out --version-id abc",
    "copy - {d}/out/x --size -5",
    "sync",
    "sync {d}/src/ {d}/out --delete --max-delete -1",
    "sync {d}/src/ {d}/out --delete --max-delete 120%",
    "sync {d}/src/ {d}/out --max-delete 5",
    "sync {d}/src/ {d}/out --compare sometimes",
    "sync {d}/empty/ {d}/full/ --delete",
    "sync {d}/empty/ {d}/full/ --delete --json",
    "sync {d}/src/ {d}/out --delete-during",
    "sync {d}/src/ {d}/out --watch --watch-queue https://sqs.example/q",
    "sync memory://nobucket/ {d}/out",
    "sync {d}/src/ {d}/out --delete --backup-dir {d}/out/inside",
    "mv {d}/missing {d}/out",
    "mv {d}/src/ {d}/src/",
    "mv {d}/src/ {d}/out --no-clobber --update --backup-dir",
    "rm",
    "rm {d}/src/",
    "rm memory://nobucket/",
    "rm memory://b",
    "rm memory://b/p/ --max-delete lots",
    "rm http://127.0.0.1:1/x",
    "rm memory://b/p/ --incomplete-uploads --all-versions",
    "ls memory://nobucket/",
    "ls memory://nobucket/ --json",
    "ls {d}/missing",
    "ls s3://b/ --endpoint-url " + DEAD + " --retries 0",
    "du {d}/missing",
    "du memory://nobucket/ --json",
    "check {d}/src/ {d}/missing",
    "check {d}/src/ {d}/empty/ --json",
    "check --against-report {d}/nofile {d}/out",
    "cat {d}/missing",
    "cat memory://nobucket/key",
    "serve --port -1",
    "serve {d}/missing",
    "versions memory://nobucket/",
    "watch",
]


def normalise(text: str, d: str) -> str:
    text = text.replace(d, "{d}")
    text = re.sub(r"\d+\.\d+ ?(s|ms|us)\b", "<T>", text)
    text = re.sub(r"[\d,.]+ (objects/s|[KMG]?i?B/s)", r"<R> \1", text)
    text = re.sub(r"\"(elapsed_seconds|cpu_seconds|peak_rss_bytes)\": [^,}]+", r'"\1": <N>', text)
    return re.sub(r"/tmp/[^ \"']*", "<tmp>", text)


def run(exe: str, args: str, home: str) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory() as d:
        for name in ("src", "full"):
            os.makedirs(f"{d}/{name}/sub")
            Path(f"{d}/{name}/a.txt").write_text("a")
            Path(f"{d}/{name}/sub/b.txt").write_text("bb")
        os.makedirs(f"{d}/empty")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3BULK_"))}
        env.update(XDG_STATE_HOME=f"{home}/state", XDG_CACHE_HOME=f"{home}/cache", AWS_ACCESS_KEY_ID="a",
                   AWS_SECRET_ACCESS_KEY="b", AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true",
                   COLUMNS="100", NO_COLOR="1")
        cmd = f"{exe} {args.format(d=d)}"
        try:
            p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env, timeout=120,
                               stdin=subprocess.DEVNULL)
            return p.returncode, normalise(p.stdout, d), normalise(p.stderr, d)
        except subprocess.TimeoutExpired:
            return -1, "", "timed out"


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    trees = [Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT]
    exes = [str(t / ".venv" / "bin" / "s3bulk") for t in trees]
    differ = failing = 0
    with tempfile.TemporaryDirectory() as home:
        for args in INVOCATIONS:
            a, b = (run(exe, args, home) for exe in exes)
            failing += a[0] != 0
            if a != b:
                differ += 1
                print(f"--- s3bulk {args}\n  A: exit {a[0]} out {a[1][-300:]!r} err {a[2][-300:]!r}\n"
                      f"  B: exit {b[0]} out {b[1][-300:]!r} err {b[2][-300:]!r}")
    print(f"{len(INVOCATIONS)} invocations, {failing} failing with A; {differ} differ between A and B")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
