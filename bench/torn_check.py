"""An object or a file that changes while s3bulk moves it in parts: does it land whole, from one version?

Not a speed benchmark: the scenario of the "never torn" guarantee (docs/reference/guarantees.md),
run against versitygw (a real S3 server, which honours If-Match) behind toxiproxy giving each
connection a few MB/s, so that a copy in parts takes seconds and the change falls between its
first and its last part. Each s3bulk tree given runs the same two cases:

- download: `s3bulk copy s3://b/obj DIR/obj` while the object is overwritten (same size, other
  bytes, one PUT straight to the server) once the first bytes landed;
- upload: `s3bulk copy FILE s3://b/up` while the file's first and last MiB are rewritten in place
  once the first part is at the server.

The outcome of each is one of: "old" or "new" (whole, from one version), "absent" (nothing under the
final name), "TORN" (bytes of both). Run:

    uv run --frozen --extra dask python bench/torn_check.py [--size-mib 128] [--rate-kbs 8000] \
        [--s3bulk-root /path/to/an/older/tree]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import botocore.session
from botocore.config import Config

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from peers_bench import base_env, start_versitygw  # noqa: E402
from toxiproxy import Toxiproxy  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024
BUCKET = "torn-check"


def toxiproxy_server(work: Path) -> Toxiproxy:
    exe = subprocess.run(["bash", str(ROOT / "scripts" / "toxiproxy.sh")], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    return Toxiproxy(exe, work / "toxiproxy.log")


def s3_client(url: str, srv) -> object:
    return botocore.session.get_session().create_client("s3", endpoint_url=url, aws_access_key_id=srv.access, aws_secret_access_key=srv.secret,
                        region_name="us-east-1", config=Config(s3={"addressing_style": "path"},
                                                                       request_checksum_calculation="when_required"))


def outcome(data: bytes | None, old: bytes, new: bytes) -> str:
    if data is None:
        return "absent"
    if data == old:
        return "old"
    if data == new:
        return "new"
    return "TORN"


def wait_until(check, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def run_s3bulk(root: Path | None, argv: list[str], env: dict) -> subprocess.Popen:
    if root is None:
        cmd = [str(ROOT / ".venv" / "bin" / "s3bulk"), *argv]
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # another tree: run its package with this environment's dependencies
    env = dict(env, PYTHONPATH=str(root))
    return subprocess.Popen([sys.executable, "-m", "s3bulk", *argv], env=env, cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def download_case(label: str, root: Path | None, srv, proxy_url: str, work: Path, size: int) -> dict:
    s3 = s3_client(srv.url, srv)
    old, new = os.urandom(size), os.urandom(size)
    # written in parts of unequal size: a multipart ETag and no full-object checksum, as most real
    # objects are, so that nothing but the version check can notice a change
    mp = s3.create_multipart_upload(Bucket=BUCKET, Key="obj")
    parts, cut = [], [0, 5 * MiB + 123, size]
    for n, (a, b) in enumerate(zip(cut, cut[1:]), 1):
        r = s3.upload_part(Bucket=BUCKET, Key="obj", UploadId=mp["UploadId"], PartNumber=n, Body=old[a:b])
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    s3.complete_multipart_upload(Bucket=BUCKET, Key="obj", UploadId=mp["UploadId"], MultipartUpload={"Parts": parts})
    dst = work / f"down-{label}"
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir()
    env = dict(base_env(srv), XDG_STATE_HOME=str(work / f"state-{label}"))
    proc = run_s3bulk(root, ["copy", f"s3://{BUCKET}/obj", str(dst / "obj"), "--endpoint-url", proxy_url, "--json",
                             "--part-size", "8MiB", "-w", "1", "--max-memory", "128MiB"], env)
    moved = {"bytes": 0}
    lines: list[dict] = []

    def progressed() -> bool:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if line:
            event = json.loads(line)
            lines.append(event)
            moved["bytes"] = max(moved["bytes"], event.get("moved_bytes", 0) or 0)
        return moved["bytes"] > 0 or proc.poll() is not None

    wait_until(progressed, "the first bytes of the download")
    s3.put_object(Bucket=BUCKET, Key="obj", Body=new)  # one PUT, straight to the server
    out, err = proc.communicate(timeout=900)
    lines += [json.loads(x) for x in out.splitlines() if x.strip()]
    target = dst / "obj"
    got = target.read_bytes() if target.exists() else None
    return {"case": "download", "tree": label, "exit": proc.returncode, "outcome": outcome(got, old, new),
            "restarted": sum(1 for e in lines if e.get("event") == "restarted"),
            "failure": next((e.get("error") for e in lines if e.get("event") == "failure"), None)}


def upload_case(label: str, root: Path | None, srv, proxy_url: str, work: Path, size: int) -> dict:
    s3 = s3_client(srv.url, srv)
    src = work / f"up-{label}.bin"
    old = os.urandom(size)
    src.write_bytes(old)
    new = bytearray(old)
    new[:MiB] = os.urandom(MiB)
    new[-MiB:] = os.urandom(MiB)
    env = dict(base_env(srv), XDG_STATE_HOME=str(work / f"state-{label}"))
    key = f"up-{label}"
    proc = run_s3bulk(root, ["copy", str(src), f"s3://{BUCKET}/{key}", "--endpoint-url", proxy_url, "--json",
                             "--part-size", "8MiB", "-w", "1", "--max-memory", "128MiB"], env)

    def a_part_landed() -> bool:
        if proc.poll() is not None:
            return True
        for u in s3.list_multipart_uploads(Bucket=BUCKET, Prefix=key).get("Uploads", []):
            if s3.list_parts(Bucket=BUCKET, Key=key, UploadId=u["UploadId"]).get("Parts"):
                return True
        return False

    wait_until(a_part_landed, "the first part of the upload")
    with open(src, "r+b") as f:  # in place, as a database or a log rotation does
        f.write(new[:MiB])
        f.seek(size - MiB)
        f.write(new[-MiB:])
    out, err = proc.communicate(timeout=900)
    lines = [json.loads(x) for x in out.splitlines() if x.strip()]
    try:
        got: bytes | None = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        got = None
    left_open = len(s3.list_multipart_uploads(Bucket=BUCKET, Prefix=key).get("Uploads", []))
    return {"case": "upload", "tree": label, "exit": proc.returncode, "outcome": outcome(got, old, bytes(new)),
            "restarted": sum(1 for e in lines if e.get("event") == "restarted"), "uploads_left_open": left_open,
            "failure": next((e.get("error") for e in lines if e.get("event") == "failure"), None)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=128)
    ap.add_argument("--rate-kbs", type=int, default=8000, help="each connection's bandwidth, KB/s")
    ap.add_argument("--s3bulk-root", action="append", default=[], help="also run an older tree's s3bulk")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="s3bulk-torn-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    srv = start_versitygw(work, keep_alive=True)
    tox = toxiproxy_server(work)
    try:
        s3_client(srv.url, srv).create_bucket(Bucket=BUCKET)
        proxy_url = tox.proxy("s3", srv.url)
        tox.toxic("s3", "bandwidth", "downstream", rate=args.rate_kbs)
        tox.toxic("s3", "bandwidth", "upstream", rate=args.rate_kbs)
        trees: list[tuple[str, Path | None]] = [("this", None)] + [(Path(r).name, Path(r)) for r in args.s3bulk_root]
        results = []
        for label, root in trees:
            for case in (download_case, upload_case):
                r = case(label, root, srv, proxy_url, work, args.size_mib * MiB)
                print(json.dumps(r), flush=True)
                results.append(r)
    finally:
        tox.stop()
        srv.proc.terminate()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
