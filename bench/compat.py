"""Compatibility matrix: the same s3bulk scenarios on every S3 server that installs here.

    uv run --frozen --extra dask python bench/compat.py                       # every server
    uv run --frozen --extra dask python bench/compat.py --servers versitygw,moto --update-readme
    uv run --frozen --extra dask python bench/compat.py --scenarios odd-upload,multipart-upload

Why: S3 servers differ in what they accept (key encodings, checksums, tagging, versioning,
multipart rules), and a tool that works against one can silently lose data against another. This
script runs each scenario through the real `s3bulk` command line against each server and checks the
result by reading it back with botocore (or the file system), so the table in the docs
(docs/reference/compatibility.md) says what a user can rely on, server by server.

Servers (each started on 127.0.0.1 on a free port, data under a temporary directory; installs
cached in ~/.cache/s3bulk-bench unless the repo's .cache/bin already has the binary):

| name | how it is installed | how it is started |
| --- | --- | --- |
| localstack | localstack/start.sh (reuses the one on 127.0.0.1:4566 when it answers) | host mode |
| versitygw | `GOBIN=... go install github.com/versity/versitygw/cmd/versitygw@v1.8.0` | `versitygw --port ... posix --versioning-dir V ROOT` |
| minio | `GOBIN=... go install github.com/minio/minio@latest` (long: ~40 min on 2 shared cores; the first try here had its compiler killed, the second, with the build cache warm and `GOFLAGS=-p=1`, finished) | `minio server ROOT --address ...` |
| moto | `uv venv` + `uv pip install 'moto[server]'` | `moto_server -H 127.0.0.1 -p PORT` |
| s3proxy | `mvn dependency:get org.gaul:s3proxy:3.0.0:jar:jar-with-dependencies` | `java -jar ... --properties P` (transient in-memory backend: the filesystem one lists each directory as a key) |

A server that cannot be installed is reported "not installable here" with the reason, and the run
goes on with the others.

Each scenario is a small function (see SCENARIOS): pass, fail (with the one-line reason) or skip
(with the reason, e.g. "option not in this build" when `s3bulk ... --help` lacks an option another
branch adds, or the server lacks the feature). Output: bench/results/compat-DATE.json and .md, the
markdown on stdout, and with `--update-readme` the table between `<!-- compat:start -->` and
`<!-- compat:end -->` in docs/reference/compatibility.md. Known server bugs and what s3bulk does about them are kept in
NOTES below and printed as footnotes where they explain a failure or skip.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers_bench import Server, free_port, log, start_localstack, wait_http

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("S3BULK_BENCH_CACHE", Path.home() / ".cache" / "s3bulk-bench"))
S3BULK = Path(os.environ.get("S3BULK_COMPAT_BIN") or ROOT / ".venv" / "bin" / "s3bulk")  # another build's s3bulk
VERSITYGW_VERSION = "v1.8.0"
S3PROXY_VERSION = "3.0.0"
SERVERS = ("localstack", "versitygw", "minio", "moto", "s3proxy")
MIB = 1 << 20
BUILD = True  # --skip-build: report a missing Go server instead of building it
PART_FLAGS = ["--part-size", "5MiB", "--multipart-threshold", "5MiB"]
BIG_SIZE = 12 * MIB  # three 5 MiB parts (5, 5, 2): the part-size guess ceil(12/3)=4 MiB is wrong

# Keys that break naive clients: spaces, a character above U+FFFF (a surrogate pair in UTF-16),
# '+' (a space in form encoding), '%' sequences (must not be decoded twice), '?' and '#' (URL
# delimiters), keys that are prefixes of other keys, an empty object, deep paths.
ODD_KEYS = [
    "plain.txt",
    "with space.txt",
    "clef-\U0001D11E-emoji-\U0001F600.txt",
    "accent-\u00e9/\u00fc.txt",
    "plus+sign.txt",
    "percent%41%2Fx.txt",
    "question?mark.txt",
    "hash#tag.txt",
    "amp&eq=semi;.txt",
    "star*tilde~quote'.txt",
    "pre",
    "pre1",
    "prefix/inner.txt",
    "pre.d/x",
    "empty.bin",
    "deep/a/b/c/d.txt",
]


def body_for(key: str) -> bytes:
    if key == "empty.bin":
        return b""
    unit = key.encode() + b"\n"
    return unit * (1 + len(unit) * 7 % 300)


class Fail(Exception):
    """The scenario ran and the result was wrong (or s3bulk exited unexpectedly)."""


class Skip(Exception):
    """The scenario cannot run here: option missing from this build, feature missing on the server."""


# ------------------------------------------------------------------------------------ servers

@dataclass
class Installed:
    """What start_* needs, or why it cannot be had."""
    argv: list[str] | None
    version: str
    why_not: str = ""


def _run_quiet(argv: list[str], timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


def _go() -> str | None:
    return shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)


def _go_binary(name: str, module: str, build_timeout: float) -> tuple[Path | None, str]:
    for d in (ROOT / ".cache" / "bin", CACHE / "bin"):
        if (d / name).exists():
            return d / name, ""
    build_log = CACHE / f"{name}-build.log"
    if not BUILD:
        last = build_log.read_text(errors="replace").strip().splitlines()[-2:] if build_log.exists() else []
        failed = [line for line in last if not line.startswith("rc=")]
        return None, (f"`go install {module}` failed here: {failed[-1][:160]}" if failed
                      else f"not built (`--skip-build`; `go install {module}` is slow on 2 cores)")
    go = _go()
    if go is None:
        return None, "no Go toolchain"
    (CACHE / "bin").mkdir(parents=True, exist_ok=True)
    log(f"building {module} into {CACHE / 'bin'} (slow on 2 cores)")
    try:
        r = _run_quiet([go, "install", module], build_timeout, env=dict(os.environ, GOBIN=str(CACHE / "bin")))
    except subprocess.TimeoutExpired:
        return None, f"`go install {module}` did not finish in {build_timeout:.0f} s"
    build_log.write_text(r.stderr + f"\nrc={r.returncode}\n")  # --skip-build reports a failure from here
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"`go install {module}` failed: {last[:160]}"
    return CACHE / "bin" / name, ""


def install_versitygw(timeout: float) -> Installed:
    exe, why = _go_binary("versitygw", f"github.com/versity/versitygw/cmd/versitygw@{VERSITYGW_VERSION}", timeout)
    return Installed([str(exe)] if exe else None, VERSITYGW_VERSION, why)


def install_minio(timeout: float) -> Installed:
    exe, why = _go_binary("minio", "github.com/minio/minio@latest", timeout)
    if not exe:
        return Installed(None, "", why)
    # `minio --version` says DEVELOPMENT.GOGET for a go-installed build: the module version says which
    mod = [line.split()[2] for line in _run_quiet([_go() or "go", "version", "-m", str(exe)], 60).stdout.splitlines()
           if line.split()[:1] == ["mod"]]
    return Installed([str(exe)], mod[0] if mod else "?")


def install_moto(timeout: float) -> Installed:
    venv = CACHE / "moto-venv"
    exe = venv / "bin" / "moto_server"
    if not exe.exists():
        log(f"installing moto[server] into {venv}")
        py = shutil.which("python3") or sys.executable
        r = _run_quiet(["uv", "venv", "-q", "--python", py, str(venv)], 120)
        if r.returncode == 0:
            r = _run_quiet(["uv", "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                            "moto[server]"], timeout)
        if r.returncode != 0 or not exe.exists():
            return Installed(None, "", f"moto[server] did not install: {(r.stderr.strip() or '?')[-160:]}")
    v = _run_quiet([str(venv / "bin" / "python"), "-c", "import moto; print(moto.__version__)"], 60).stdout.strip()
    return Installed([str(exe)], v)


def install_s3proxy(timeout: float) -> Installed:
    jar = (Path.home() / ".m2" / "repository" / "org" / "gaul" / "s3proxy" / S3PROXY_VERSION /
           f"s3proxy-{S3PROXY_VERSION}-jar-with-dependencies.jar")
    if not shutil.which("java"):
        return Installed(None, "", "no java")
    if not jar.exists():
        if not shutil.which("mvn"):
            return Installed(None, "", "no mvn to fetch the jar from Maven Central")
        log(f"fetching s3proxy {S3PROXY_VERSION} from Maven Central")
        r = _run_quiet(["mvn", "-q", "dependency:get", "-Dtransitive=false",
                        f"-Dartifact=org.gaul:s3proxy:{S3PROXY_VERSION}:jar:jar-with-dependencies"], timeout)
        if r.returncode != 0 or not jar.exists():
            return Installed(None, "", f"mvn dependency:get failed: {(r.stdout + r.stderr).strip()[-160:]}")
    return Installed(["java", "-jar", str(jar)], S3PROXY_VERSION)


def _popen(argv: list[str], log_path: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(argv, stdout=open(log_path, "wb"), stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def start_server(name: str, inst: Installed, work: Path) -> Server:
    srv = Server()
    srv.name = name
    port = free_port()
    srv.url = f"http://127.0.0.1:{port}"
    srv.access, srv.secret = "compat" + secrets.token_hex(4), secrets.token_hex(16)
    data = work / f"{name}-data"
    data.mkdir()
    logf = work / f"{name}.log"
    if name == "versitygw":
        (work / "versitygw-versions").mkdir()
        srv.proc = _popen(inst.argv + ["--port", f"127.0.0.1:{port}", "--access", srv.access, "--secret",
                                       srv.secret, "--quiet", "--keep-alive", "posix", "--versioning-dir",
                                       str(work / "versitygw-versions"), str(data)], logf)
        wait_http(srv.url + "/", name, srv.proc, 60)
    elif name == "minio":
        env = dict(os.environ, MINIO_ROOT_USER=srv.access, MINIO_ROOT_PASSWORD=srv.secret,
                   MINIO_BROWSER="off", MINIO_UPDATE="off")
        srv.proc = _popen(inst.argv + ["server", str(data), "--address", f"127.0.0.1:{port}",
                                       "--console-address", f"127.0.0.1:{free_port()}", "--quiet"], logf, env)
        wait_http(srv.url + "/minio/health/live", name, srv.proc, 120)
    elif name == "moto":
        srv.access, srv.secret = "test", "test"
        srv.proc = _popen(inst.argv + ["-H", "127.0.0.1", "-p", str(port)], logf)
        wait_http(srv.url + "/moto-api/", name, srv.proc, 120)
    elif name == "s3proxy":
        props = work / "s3proxy.properties"
        props.write_text("\n".join([
            f"s3proxy.endpoint=http://127.0.0.1:{port}",
            "s3proxy.authorization=aws-v2-or-v4",
            f"s3proxy.identity={srv.access}",
            f"s3proxy.credential={srv.secret}",
            "jclouds.provider=transient",
            f"jclouds.filesystem.basedir={data}",
            "jclouds.identity=unused",
            "jclouds.credential=unused",
        ]) + "\n")
        srv.proc = _popen(inst.argv + ["--properties", str(props)], logf)
        wait_http(srv.url + "/", name, srv.proc, 120)
    else:
        raise ValueError(name)
    return srv


class _External(Server):
    """A server this script did not start (the shared LocalStack): never stopped here."""

    def stop(self) -> None:
        pass


def localstack_server(work: Path) -> tuple[Server, str]:
    url = "http://127.0.0.1:4566"
    try:
        info = json.loads(urllib.request.urlopen(url + "/_localstack/health", timeout=5).read())
        srv = _External()
        srv.name, srv.url, srv.access, srv.secret = "localstack", url, "test", "test"
        return srv, info.get("version", "?")
    except Exception:
        srv = start_localstack(work)
        info = json.loads(urllib.request.urlopen(srv.url + "/_localstack/health", timeout=5).read())
        return srv, info.get("version", "?")


# ---------------------------------------------------------------------------------- scenarios

@dataclass
class Ctx:
    """One server's run: how to call s3bulk against it and read results back."""
    srv: Server
    work: Path
    helps: dict[str, str]
    timeout: float
    s3: object = None
    env: dict = field(default_factory=dict)
    seed: str = ""  # bucket holding ODD_KEYS under seed/ and big.bin, put with botocore
    odd_dir: Path | None = None
    big_path: Path | None = None

    @property
    def port(self) -> str:
        return self.srv.url.rsplit(":", 1)[1]

    def s3bulk(self, *args: str, endpoint: bool = True, expect: tuple[int, ...] = (0,)) -> tuple[int, list[dict], str]:
        """Run s3bulk; return (exit code, JSON events, stderr); Fail on an unexpected exit code."""
        argv = [str(S3BULK), *args]
        if endpoint:
            argv += ["--endpoint-url", self.srv.url, "--path-style"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its worker processes too
            proc.communicate()
            raise Fail(f"`s3bulk {args[0]}` did not finish in {self.timeout:.0f} s")
        r = subprocess.CompletedProcess(argv, proc.returncode, out, err)
        events = []
        for line in r.stdout.splitlines():
            if line.startswith("{"):
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass
        if r.returncode not in expect:
            why = [e.get("error") for e in events if e.get("event") in ("failure", "error")]
            msg = (why[0] if why else None) or (r.stderr.strip().splitlines() or [""])[-1]
            raise Fail(f"`s3bulk {args[0]}` exit {r.returncode}: {str(msg)[:200]}")
        return r.returncode, events, r.stderr

    def has(self, command: str, option: str) -> None:
        if command not in self.helps:
            r = subprocess.run([str(S3BULK), command, "--help"], capture_output=True, text=True, env=self.env)
            self.helps[command] = r.stdout
        if option not in self.helps[command]:
            raise Skip(f"option not in this build (`s3bulk {command} {option}`)")

    def bucket(self, tag: str, versioned: bool = False) -> str:
        name = f"cx-{tag}-{secrets.token_hex(3)}"
        self.s3.create_bucket(Bucket=name)
        if versioned:
            try:
                self.s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
                st = self.s3.get_bucket_versioning(Bucket=name).get("Status")
            except Exception as exc:
                raise Skip(f"server: no bucket versioning ({_short(exc)})")
            if st != "Enabled":
                raise Skip("server: bucket versioning not enabled after PutBucketVersioning")
        return name

    def get(self, bucket: str, key: str, **kw) -> bytes:
        return self.s3.get_object(Bucket=bucket, Key=key, **kw)["Body"].read()

    def keys(self, bucket: str, prefix: str = "") -> dict[str, int]:
        out = {}
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for o in page.get("Contents", []):
                out[o["Key"]] = o["Size"]
        return out

    def fresh_dir(self, tag: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=tag + "-", dir=self.work))


def _short(exc: BaseException) -> str:
    s = str(exc).strip().splitlines()
    return (s[0] if s else type(exc).__name__)[:160]


def summary(events: list[dict]) -> dict:
    for e in reversed(events):
        if e.get("event") == "summary":
            return e
    raise Fail("no JSON summary")


def expect_tree(root: Path, expected: dict[str, bytes], what: str) -> None:
    got = {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    if missing or extra:
        raise Fail(f"{what}: missing {missing[:3]} extra {extra[:3]}")
    for rel, data in expected.items():
        if got[rel].read_bytes() != data:
            raise Fail(f"{what}: {rel!r} differs")


def expect_objects(ctx: Ctx, bucket: str, prefix: str, expected: dict[str, bytes], what: str) -> None:
    got = ctx.keys(bucket, prefix)
    want = {prefix + k for k in expected}
    missing, extra = sorted(want - set(got)), sorted(set(got) - want)
    if missing or extra:
        raise Fail(f"{what}: missing {missing[:3]} extra {extra[:3]}")
    for k, data in expected.items():
        body = ctx.get(bucket, prefix + k)
        if body != data:
            raise Fail(f"{what}: {prefix + k!r} has {len(body)} bytes, not the {len(data)} written")


def odd_expected() -> dict[str, bytes]:
    return {k: body_for(k) for k in ODD_KEYS}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sc_odd_upload(ctx: Ctx) -> None:
    b = ctx.bucket("up")
    ctx.s3bulk("copy", str(ctx.odd_dir) + "/", f"s3://{b}/t/", "-w", "1", "--json")
    expect_objects(ctx, b, "t/", odd_expected(), "after upload")


def sc_odd_download(ctx: Ctx) -> None:
    d = ctx.fresh_dir("down")
    ctx.s3bulk("copy", f"s3://{ctx.seed}/seed/", str(d) + "/", "-w", "1", "--json")
    expect_tree(d, odd_expected(), "after download")


def sc_multipart_upload(ctx: Ctx) -> None:
    b = ctx.bucket("mpu")
    ctx.s3bulk("copy", str(ctx.big_path), f"s3://{b}/big.bin", "-w", "1", *PART_FLAGS, "--json")
    head = ctx.s3.head_object(Bucket=b, Key="big.bin")
    if not head["ETag"].strip('"').endswith("-3"):
        raise Fail(f"ETag {head['ETag']} is not a 3-part multipart ETag")
    if sha256(ctx.get(b, "big.bin")) != sha256(ctx.big_path.read_bytes()):
        raise Fail("bytes read back differ")


def sc_multipart_download(ctx: Ctx) -> None:
    d = ctx.fresh_dir("mpd")
    ctx.s3bulk("copy", f"s3://{ctx.seed}/big.bin", str(d / "big.bin"), "-w", "1", *PART_FLAGS, "--json")
    if sha256((d / "big.bin").read_bytes()) != sha256(ctx.big_path.read_bytes()):
        raise Fail("downloaded bytes differ")


def sc_server_side_copy(ctx: Ctx) -> None:
    b = ctx.bucket("ssc")
    _, ev, _ = ctx.s3bulk("copy", f"s3://{ctx.seed}/seed/", f"s3://{b}/c/", "-w", "1", "--json")
    s = summary(ev)
    if s.get("server_side_copies", 0) != len(ODD_KEYS):
        raise Fail(f"{s.get('server_side_copies')} server-side copies, not {len(ODD_KEYS)}")
    expect_objects(ctx, b, "c/", odd_expected(), "after server-side copy")


def sc_server_side_copy_meta(ctx: Ctx) -> None:
    b = ctx.bucket("sscm")
    _, ev, _ = ctx.s3bulk("copy", f"s3://{ctx.seed}/meta/", f"s3://{b}/m/", "-w", "1", "--json")
    h = ctx.s3.head_object(Bucket=b, Key="m/page.html")
    if h.get("ContentType") != "text/html" or h.get("Metadata", {}).get("owner") != "compat":
        raise Fail(f"Content-Type {h.get('ContentType')!r}, metadata {h.get('Metadata')} after CopyObject")


def _streamed(ctx: Ctx, src: str, dst: str, *extra: str) -> dict:
    _, ev, _ = ctx.s3bulk("copy", src, dst, "-w", "1", "--src-endpoint-url", ctx.srv.url,
                          "--dst-endpoint-url", f"http://localhost:{ctx.port}", "--path-style",
                          *PART_FLAGS, "--json", *extra, endpoint=False)
    s = summary(ev)
    if s.get("server_side_copies"):
        raise Fail("copied server-side although the endpoints differ")
    return s


def sc_streamed_copy(ctx: Ctx) -> None:
    b = ctx.bucket("str")
    _streamed(ctx, f"s3://{ctx.seed}/seed/", f"s3://{b}/s/")
    expect_objects(ctx, b, "s/", odd_expected(), "after streamed copy")
    _streamed(ctx, f"s3://{ctx.seed}/big.bin", f"s3://{b}/big.bin")
    if sha256(ctx.get(b, "big.bin")) != sha256(ctx.big_path.read_bytes()):
        raise Fail("streamed multipart copy: bytes differ")


def _sync_tree(ctx: Ctx) -> tuple[Path, dict[str, bytes]]:
    d = ctx.fresh_dir("synctree")
    exp = odd_expected()
    for k, v in exp.items():
        (d / k).parent.mkdir(parents=True, exist_ok=True)
        (d / k).write_bytes(v)
    shutil.copyfile(ctx.big_path, d / "big.bin")
    exp["big.bin"] = ctx.big_path.read_bytes()
    old = time.time() - 3600  # settle mtimes in the past, as files that were not just written
    for p in d.rglob("*"):
        if p.is_file():
            os.utime(p, (old, old))
    return d, exp


def _sync_idem(ctx: Ctx, mode: list[str]) -> None:
    local, exp = _sync_tree(ctx)
    b = ctx.bucket("sync")
    n = len(exp)
    up = ["sync", str(local) + "/", f"s3://{b}/y/", "-w", "1", *PART_FLAGS, "--json", *mode]
    s1 = summary(ctx.s3bulk(*up)[1])
    if s1.get("copied") != n:
        raise Fail(f"upload: first sync copied {s1.get('copied')} of {n}")
    s2 = summary(ctx.s3bulk(*up)[1])
    if s2.get("copied"):
        raise Fail(f"upload: second sync copied {s2.get('copied')} again (expected 0)")
    down = ctx.fresh_dir("syncdown")
    dn = ["sync", f"s3://{b}/y/", str(down) + "/", "-w", "1", *PART_FLAGS, "--json", *mode]
    s3_ = summary(ctx.s3bulk(*dn)[1])
    if s3_.get("copied") != n:
        raise Fail(f"download: first sync copied {s3_.get('copied')} of {n}")
    s4 = summary(ctx.s3bulk(*dn)[1])
    if s4.get("copied"):
        raise Fail(f"download: second sync copied {s4.get('copied')} again (expected 0)")
    expect_tree(down, exp, "after sync down")


def sc_sync_default(ctx: Ctx) -> None:
    _sync_idem(ctx, [])


def sc_sync_size_only(ctx: Ctx) -> None:
    _sync_idem(ctx, ["--size-only"])


def sc_sync_exact_ts(ctx: Ctx) -> None:
    _sync_idem(ctx, ["--exact-timestamps"])


def sc_sync_checksum(ctx: Ctx) -> None:
    _sync_idem(ctx, ["--checksum", "--hash-cache", str(ctx.fresh_dir("hc") / "h.sqlite")])


def sc_sync_delete(ctx: Ctx) -> None:
    local, exp = _sync_tree(ctx)
    (local / "big.bin").unlink()
    del exp["big.bin"]
    b = ctx.bucket("del")
    ctx.s3bulk("sync", str(local) + "/", f"s3://{b}/z/", "-w", "1", "--json")
    ctx.s3.put_object(Bucket=b, Key="z/stray.txt", Body=b"stray")
    ctx.s3.put_object(Bucket=b, Key="outside.txt", Body=b"outside")
    gone = "with space.txt"
    (local / gone).unlink()
    del exp[gone]
    s = summary(ctx.s3bulk("sync", str(local) + "/", f"s3://{b}/z/", "-w", "1", "--delete", "--json")[1])
    if s.get("deleted") != 2:
        raise Fail(f"deleted {s.get('deleted')} (expected 2)")
    expect_objects(ctx, b, "z/", exp, "after sync --delete")
    if "outside.txt" not in ctx.keys(b):
        raise Fail("a key outside DST was deleted")


def sc_rm(ctx: Ctx) -> None:
    b = ctx.bucket("rm")
    for k in ODD_KEYS:
        ctx.s3.put_object(Bucket=b, Key="r/" + k, Body=body_for(k))
    ctx.s3.put_object(Bucket=b, Key="r-keep", Body=b"keep")
    ctx.s3bulk("rm", f"s3://{b}/r/", "--json")
    left = ctx.keys(b)
    if set(left) != {"r-keep"}:
        raise Fail(f"left after rm: {sorted(left)[:4]}")


def sc_du(ctx: Ctx) -> None:
    _, ev, _ = ctx.s3bulk("du", f"s3://{ctx.seed}/seed/", "--json")
    tot = [e for e in ev if e.get("event") == "total"]
    want = (len(ODD_KEYS), sum(len(v) for v in odd_expected().values()))
    if not tot or (tot[-1].get("objects"), tot[-1].get("bytes")) != want:
        raise Fail(f"du total {tot[-1] if tot else None}, expected objects, bytes = {want}")


def sc_check(ctx: Ctx) -> None:
    b = ctx.bucket("chk")
    for k in ODD_KEYS:
        ctx.s3.put_object(Bucket=b, Key="k/" + k, Body=body_for(k))
    for extra in ([], ["--checksum"]):
        ctx.s3bulk("check", str(ctx.odd_dir) + "/", f"s3://{b}/k/", "-w", "1", *extra)
    ctx.s3.delete_object(Bucket=b, Key="k/hash#tag.txt")
    ctx.s3.put_object(Bucket=b, Key="k/plus+sign.txt", Body=b"X" * len(body_for("plus+sign.txt")))
    code, ev, _ = ctx.s3bulk("check", str(ctx.odd_dir) + "/", f"s3://{b}/k/", "-w", "1", "--checksum",
                             "--json", expect=(1,))
    diffs = {(e.get("kind"), (e.get("src") or "").rsplit("/", 1)[-1]) for e in ev if e.get("event") == "difference"}
    if diffs != {("only-in-src", "hash#tag.txt"), ("differs", "plus+sign.txt")}:
        raise Fail(f"differences reported: {sorted(diffs)}")


CONTENT_TYPES = {"index.html": "text/html", "style.css": "text/css", "pic.png": "image/png",
                 "data.json": "application/json"}


def sc_content_type(ctx: Ctx) -> None:
    d = ctx.fresh_dir("ct")
    for k in CONTENT_TYPES:
        (d / k).write_bytes(b"x")
    b = ctx.bucket("ct")
    ctx.s3bulk("copy", str(d) + "/", f"s3://{b}/", "-w", "1", "--json")
    got = {k: ctx.s3.head_object(Bucket=b, Key=k).get("ContentType") for k in CONTENT_TYPES}
    if got != CONTENT_TYPES:
        raise Fail("Content-Type " + ", ".join(f"{k}: {v}" for k, v in got.items() if v != CONTENT_TYPES[k]))


def sc_metadata_upload(ctx: Ctx) -> None:
    ctx.has("copy", "--metadata")
    d = ctx.fresh_dir("md")
    (d / "a.txt").write_bytes(b"a")
    shutil.copyfile(ctx.big_path, d / "big.bin")
    b = ctx.bucket("md")
    ctx.s3bulk("copy", str(d) + "/", f"s3://{b}/", "-w", "1", *PART_FLAGS, "--metadata", "owner=compat,team=x",
               "--cache-control", "max-age=60", "--content-disposition", "attachment",
               "--content-language", "en", "--json")
    for k in ("a.txt", "big.bin"):
        h = ctx.s3.head_object(Bucket=b, Key=k)
        got = (h.get("Metadata"), h.get("CacheControl"), h.get("ContentDisposition"), h.get("ContentLanguage"))
        if got != ({"owner": "compat", "team": "x"}, "max-age=60", "attachment", "en"):
            raise Fail(f"{k}: metadata, Cache-Control, Content-Disposition, Content-Language = {got}")


def sc_metadata_streamed(ctx: Ctx) -> None:
    ctx.has("copy", "--copy-props")
    b = ctx.bucket("mds")
    _streamed(ctx, f"s3://{ctx.seed}/meta/", f"s3://{b}/m/")
    for k in ("m/page.html", "m/big.bin"):
        h = ctx.s3.head_object(Bucket=b, Key=k)
        if h.get("ContentType") != "text/html" or h.get("Metadata", {}).get("owner") != "compat":
            raise Fail(f"{k}: Content-Type {h.get('ContentType')!r}, metadata {h.get('Metadata')}")


def _tags(ctx: Ctx, b: str, k: str) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in ctx.s3.get_object_tagging(Bucket=b, Key=k)["TagSet"]}


def sc_tags_upload(ctx: Ctx) -> None:
    ctx.has("copy", "--tagging")
    d = ctx.fresh_dir("tg")
    (d / "a.txt").write_bytes(b"a")
    shutil.copyfile(ctx.big_path, d / "big.bin")
    b = ctx.bucket("tg")
    ctx.s3bulk("copy", str(d) + "/", f"s3://{b}/", "-w", "1", *PART_FLAGS, "--tagging", "a=1&b=two words",
               "--json")
    for k in ("a.txt", "big.bin"):
        if _tags(ctx, b, k) != {"a": "1", "b": "two words"}:
            raise Fail(f"{k}: tags {_tags(ctx, b, k)}")


def sc_tags_streamed(ctx: Ctx) -> None:
    ctx.has("copy", "--copy-props")
    b = ctx.bucket("tgs")
    _streamed(ctx, f"s3://{ctx.seed}/meta/", f"s3://{b}/m/")
    for k in ("m/page.html", "m/big.bin"):
        if _tags(ctx, b, k) != {"src": "seed"}:
            raise Fail(f"{k}: tags {_tags(ctx, b, k)}")


def _checksum(ctx: Ctx, alg: str) -> None:
    ctx.has("copy", "--checksum-algorithm")
    d = ctx.fresh_dir("ck")
    (d / "small.txt").write_bytes(body_for("plain.txt"))
    shutil.copyfile(ctx.big_path, d / "big.bin")
    b = ctx.bucket("ck")
    code, ev, err = ctx.s3bulk("copy", str(d) + "/", f"s3://{b}/", "-w", "1", *PART_FLAGS,
                               "--checksum-algorithm", alg, "--json", expect=(0, 2))
    if code == 2:
        raise Skip(f"s3bulk refused {alg} here: {(err.strip().splitlines() or [''])[-1][:120]}")
    field_ = "Checksum" + alg.upper()
    for k in ("small.txt", "big.bin"):
        h = ctx.s3.head_object(Bucket=b, Key=k, ChecksumMode="ENABLED")
        if not h.get(field_):
            raise Fail(f"{k}: HEAD with checksum mode has no {field_}")
    down = ctx.fresh_dir("ckd")
    ctx.s3bulk("copy", f"s3://{b}/", str(down) + "/", "-w", "1", *PART_FLAGS, "--json")
    expect_tree(down, {"small.txt": body_for("plain.txt"), "big.bin": ctx.big_path.read_bytes()},
                "download of the checksummed objects")


def sc_checksum_crc32(ctx: Ctx) -> None:
    _checksum(ctx, "CRC32")


def sc_checksum_crc32c(ctx: Ctx) -> None:
    _checksum(ctx, "CRC32C")


def sc_checksum_crc64(ctx: Ctx) -> None:
    _checksum(ctx, "CRC64NVME")


def sc_checksum_sha256(ctx: Ctx) -> None:
    _checksum(ctx, "SHA256")


def sc_checksum_composite(ctx: Ctx) -> None:
    """A SHA256 multipart object (COMPOSITE, 5 MiB parts and a short last one, written by botocore)
    downloaded in parts: s3bulk checks it by its parts when the server tells them (GetObjectAttributes),
    else says once that it did not; either way the bytes must arrive whole."""
    ctx.has("copy", "--checksum-algorithm")
    b = ctx.bucket("cc")
    body = os.urandom(11 * 1024 * 1024 + 3)
    part = 5 * 1024 * 1024
    try:
        up = ctx.s3.create_multipart_upload(Bucket=b, Key="c.bin", ChecksumAlgorithm="SHA256")
        parts = []
        for n, at in enumerate(range(0, len(body), part), 1):
            r = ctx.s3.upload_part(Bucket=b, Key="c.bin", UploadId=up["UploadId"], PartNumber=n,
                                   Body=body[at:at + part], ChecksumAlgorithm="SHA256")
            parts.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumSHA256": r.get("ChecksumSHA256")})
        ctx.s3.complete_multipart_upload(Bucket=b, Key="c.bin", UploadId=up["UploadId"],
                                         MultipartUpload={"Parts": parts})
    except Exception as exc:
        raise Skip(f"server: no SHA256 multipart upload ({_short(exc)})")
    if not str(ctx.s3.head_object(Bucket=b, Key="c.bin", ChecksumMode="ENABLED").get("ChecksumSHA256", "")).endswith("-3"):
        raise Skip("server: keeps no composite SHA256 for a multipart upload")
    down = ctx.fresh_dir("ccd")
    _, _, err = ctx.s3bulk("copy", f"s3://{b}/", str(down) + "/", "-w", "1", *PART_FLAGS, "--json")
    expect_tree(down, {"c.bin": body}, "download of the composite object")
    if "not verified" in err:
        raise Fail("downloaded whole, composite checksum not verified: " + err.strip().splitlines()[-1][:160])


def _versioned_seed(ctx: Ctx) -> tuple[str, list[str]]:
    ctx.has("ls", "--all-versions")
    b = ctx.bucket("ver", versioned=True)
    ids = [ctx.s3.put_object(Bucket=b, Key="v/k", Body=b"version %d" % i).get("VersionId") for i in range(3)]
    if not all(ids):
        raise Skip("server: PUT into a versioned bucket gives no version id")
    ctx.s3.delete_object(Bucket=b, Key="v/k")
    return b, ids


def sc_versions_ls(ctx: Ctx) -> None:
    b, ids = _versioned_seed(ctx)
    _, ev, _ = ctx.s3bulk("ls", f"s3://{b}/v/", "--all-versions", "--json")
    got = [e for e in ev if e.get("version_id") or e.get("delete_marker")]
    vids = {e.get("version_id") for e in got}
    if not set(ids) <= vids or sum(1 for e in got if e.get("delete_marker")) != 1:
        raise Fail(f"ls --all-versions gave {len(got)} entries; expected the 3 versions and 1 delete marker")


def sc_versions_copy(ctx: Ctx) -> None:
    b, ids = _versioned_seed(ctx)
    d = ctx.fresh_dir("vid")
    ctx.s3bulk("copy", f"s3://{b}/v/k", str(d / "k"), "--version-id", ids[0])
    if (d / "k").read_bytes() != b"version 0":
        raise Fail("copy --version-id did not give the first version")
    b2 = ctx.bucket("ver2", versioned=True)
    ctx.s3bulk("copy", f"s3://{b}/v/", f"s3://{b2}/v/", "--all-versions", "--include-delete-markers")
    r = ctx.s3.list_object_versions(Bucket=b2, Prefix="v/")
    vers = sorted(r.get("Versions", []), key=lambda v: v["LastModified"])
    bodies = [ctx.get(b2, "v/k", VersionId=v["VersionId"]) for v in vers]
    if sorted(bodies) != [b"version 0", b"version 1", b"version 2"] or len(r.get("DeleteMarkers", [])) != 1:
        raise Fail(f"DST has {len(bodies)} versions and {len(r.get('DeleteMarkers', []))} delete markers")


Scenario = Callable[[Ctx], None]
SCENARIOS: list[tuple[str, str, Scenario]] = [
    ("odd-upload", "upload, odd keys (space, U+1D11E, `+`, `%`, `?`, `#`, prefixes, empty)", sc_odd_upload),
    ("odd-download", "download, odd keys, byte-identical", sc_odd_download),
    ("multipart-upload", "multipart upload (5 MiB parts)", sc_multipart_upload),
    ("multipart-download", "multipart download (5 MiB ranges)", sc_multipart_download),
    ("server-side-copy", "server-side copy, odd keys", sc_server_side_copy),
    ("server-side-copy-meta", "server-side copy keeps Content-Type + metadata", sc_server_side_copy_meta),
    ("streamed-copy", "streamed copy between endpoints, odd keys + multipart", sc_streamed_copy),
    ("sync-default", "sync twice, 2nd copies 0: size+mtime (up and down)", sc_sync_default),
    ("sync-size-only", "sync twice: `--size-only`", sc_sync_size_only),
    ("sync-exact-timestamps", "sync twice: `--exact-timestamps`", sc_sync_exact_ts),
    ("sync-checksum", "sync twice: `--checksum` (incl. a 5 MiB-part object)", sc_sync_checksum),
    ("sync-delete", "`sync --delete`", sc_sync_delete),
    ("rm", "`rm` a prefix of odd keys", sc_rm),
    ("du", "`du` count and bytes", sc_du),
    ("check", "`check` (size, `--checksum`, finds a missing and a changed key)", sc_check),
    ("content-type", "Content-Type guessed on upload", sc_content_type),
    ("metadata-upload", "`--metadata`, `--cache-control`, ... on upload (whole + multipart)", sc_metadata_upload),
    ("metadata-streamed", "metadata carried by a streamed copy (whole + multipart)", sc_metadata_streamed),
    ("tags-upload", "`--tagging` on upload (whole + multipart)", sc_tags_upload),
    ("tags-streamed", "tags carried by a streamed copy (whole + multipart)", sc_tags_streamed),
    ("checksum-crc32", "`--checksum-algorithm CRC32` (whole + multipart)", sc_checksum_crc32),
    ("checksum-crc32c", "`--checksum-algorithm CRC32C`", sc_checksum_crc32c),
    ("checksum-crc64nvme", "`--checksum-algorithm CRC64NVME`", sc_checksum_crc64),
    ("checksum-sha256", "`--checksum-algorithm SHA256`", sc_checksum_sha256),
    ("checksum-composite", "composite SHA256 multipart object verified by its parts on download",
     sc_checksum_composite),
    ("versions-ls", "`ls --all-versions`", sc_versions_ls),
    ("versions-copy", "`copy --version-id`, `copy --all-versions --include-delete-markers`", sc_versions_copy),
]

# Known behaviour of a server that explains a fail or skip, and what s3bulk does about it:
# (server, text found in the failure's reason, note). The table's footnotes come from here.
NOTES: list[tuple[str, str, str]] = [
    ("s3proxy", "does not support additional checksums",
     "s3proxy (3.0.0; 2.6.0 also for `x-amz-checksum-mode` on GET) answers `501 NotImplemented` to every "
     "request that carries a checksum header: PutObject and UploadPart with `x-amz-checksum-*`, "
     "CreateMultipartUpload with `ChecksumType FULL_OBJECT`, DeleteObjects as botocore 1.36+ signs it (a CRC32 "
     "where it used to send Content-MD5; aws-cli v2 meets the same). s3bulk sends a write refused so once "
     "more without its checksum and none to that server from then on, and DeleteObjects with Content-MD5: "
     "uploads, copies and deletes work. `--checksum-algorithm` asks for checksums s3proxy cannot keep: the "
     "run stops with one line (`this server does not support additional checksums`, exit 3)."),
    ("s3proxy", "501 NotImplemented",
     "s3proxy has no object tagging: a PUT with `x-amz-tagging` is answered `501 NotImplemented` (the object "
     "is reported failed); GetObjectTagging too, which s3bulk reads as no tags when it carries a source's."),
    ("s3proxy", "GetObjectTagging",
     "s3proxy has no object tagging (GetObjectTagging: `501 NotImplemented`), so tags cannot be checked "
     "there; s3bulk reads that answer as no tags when it carries a source's properties."),
    ("s3proxy", "second sync copied",
     "s3proxy ignores `partNumber` on HEAD (it answers for the whole object), so the part size of a "
     "multipart object cannot be learned and its ETag not recomputed from a local file; objects without an "
     "additional checksum (s3proxy keeps none) are then copied again by `sync --checksum` (s3bulk never "
     "guesses a part size, and a same-size change must not be missed)."),
    ("versitygw", "composite checksum not verified",
     "versitygw answers GetObjectAttributes without ObjectParts and HEAD/GET with `partNumber` without the "
     "part's checksum, so a composite checksum cannot be checked by parts there: s3bulk downloads the object "
     "(checked for length only, as before), saying once per worker process that it did not verify it."),
    ("s3proxy", "PutBucketVersioning", "s3proxy has no bucket versioning (PutBucketVersioning: 501)."),
    ("moto", "HEAD with checksum mode has no",
     "moto 5.2.5 keeps an object's checksum only when the PUT also carries `x-amz-sdk-checksum-algorithm` "
     "(botocore always sends both); s3bulk's lean path sends it too since this matrix found it."),
    ("moto", "of the parts read does not match",
     "moto 5.2.5 reports a multipart upload created with `ChecksumType FULL_OBJECT` (CRC32C, CRC64NVME) "
     "as FULL_OBJECT but with a value that is not the CRC of the object's bytes (the parts' CRCs are "
     "combined wrongly); s3bulk verifies downloads against the checksum the server states and so refuses "
     "those objects (nothing written, exit 1). Objects whose checksum type the server does not state are "
     "not verified (that was moto's composite CRC32 without a type: fixed in s3bulk)."),
    ("versitygw", "VersioningNotConfigured",
     "versitygw keeps versions only when started with `posix --versioning-dir DIR`."),
]


def seed(ctx: Ctx) -> None:
    """The source objects the download/copy scenarios read, put with botocore (not s3bulk), so a
    failing s3bulk upload does not fail the scenarios that only read."""
    ctx.odd_dir = ctx.work / "odd"
    if not ctx.odd_dir.exists():
        for k, v in odd_expected().items():
            (ctx.odd_dir / k).parent.mkdir(parents=True, exist_ok=True)
            (ctx.odd_dir / k).write_bytes(v)
    ctx.big_path = ctx.work / "big.bin"
    if not ctx.big_path.exists():
        ctx.big_path.write_bytes(random.Random(16).randbytes(BIG_SIZE))
    ctx.seed = ctx.bucket("seed")
    for k, v in odd_expected().items():
        ctx.s3.put_object(Bucket=ctx.seed, Key="seed/" + k, Body=v)
    ctx.s3.put_object(Bucket=ctx.seed, Key="big.bin", Body=ctx.big_path.read_bytes())
    meta = dict(ContentType="text/html", Metadata={"owner": "compat"}, CacheControl="max-age=60")
    for k, body in (("meta/page.html", b"<p>hi</p>"), ("meta/big.bin", ctx.big_path.read_bytes())):
        try:
            ctx.s3.put_object(Bucket=ctx.seed, Key=k, Body=body, Tagging="src=seed", **meta)
        except Exception:  # a server without tagging still gets the metadata
            ctx.s3.put_object(Bucket=ctx.seed, Key=k, Body=body, **meta)


def s3_client(srv: Server):
    """The botocore client that seeds and reads back. Checksums only where S3 requires them: botocore
    1.36+ otherwise sends CRC32 trailers (aws-chunked) that some servers refuse, and the check would
    then fail for botocore's sake, not s3bulk's."""
    import botocore.config
    import botocore.session

    return botocore.session.get_session().create_client(
        "s3", endpoint_url=srv.url, region_name="us-east-1", aws_access_key_id=srv.access,
        aws_secret_access_key=srv.secret,
        config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 5},
                                      request_checksum_calculation="when_required",
                                      response_checksum_validation="when_required"))


def s3bulk_env(srv: Server, work: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "S3_ENDPOINT")) and k != "PYTHONDONTWRITEBYTECODE"}
    cfg = work / "aws-config"
    cfg.write_text("[default]\nregion = us-east-1\n")
    env.update(AWS_ACCESS_KEY_ID=srv.access, AWS_SECRET_ACCESS_KEY=srv.secret, AWS_DEFAULT_REGION="us-east-1",
               AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE=str(cfg),
               AWS_SHARED_CREDENTIALS_FILE=str(work / "no-credentials"),
               XDG_STATE_HOME=str(work / "state"), XDG_CACHE_HOME=str(work / "xdg-cache"))
    if os.environ.get("S3BULK_COMPAT_BIN"):
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # another checkout's build: leave its tree as it is
    return env


def run_server(name: str, srv: Server, work: Path, only: list[str], timeout: float) -> dict[str, list[str]]:
    ctx = Ctx(srv=srv, work=work, helps={}, timeout=timeout)
    ctx.s3 = s3_client(srv)
    ctx.env = s3bulk_env(srv, work)
    out: dict[str, list[str]] = {}
    try:
        seed(ctx)
    except Exception as exc:
        return {sid: ["fail", f"could not seed the source bucket: {_short(exc)}"] for sid, _, _ in SCENARIOS
                if sid in only}
    for sid, _, fn in SCENARIOS:
        if sid not in only:
            continue
        t0 = time.monotonic()
        try:
            fn(ctx)
            res = ["pass", ""]
        except Skip as exc:
            res = ["skip", str(exc)]
        except Fail as exc:
            res = ["fail", str(exc)]
        except Exception as exc:  # a server error answered to the botocore read-back, etc.
            res = ["fail", f"{type(exc).__name__}: {_short(exc)}"]
            log("  " + traceback.format_exc().strip().splitlines()[-1])
        res.append(f"{time.monotonic() - t0:.1f}")
        log(f"  {name} {sid}: {res[0]} {res[1]} ({res[2]} s)")
        out[sid] = res
    return out


# ------------------------------------------------------------------------------------- output

MARK = {"pass": "pass", "fail": "**FAIL**", "skip": "skip"}


def markdown(results: dict, versions: dict, cmdline: str, when: str) -> str:
    servers = [s for s in results if results[s].get("scenarios")]
    lines = [f"Run {when} with `{cmdline}` on a shared 2-core machine "
             f"(s3bulk {versions.get('s3bulk', '?')}, Python {platform.python_version()}).", ""]
    lines.append("| server | version | status |")
    lines.append("| --- | --- | --- |")
    for s, r in results.items():
        lines.append(f"| {s} | {r.get('version') or '-'} | {r.get('status')} |")
    lines.append("")
    if not servers:
        return "\n".join(lines) + "\n"
    notes: list[str] = []

    def note(text: str) -> str:
        if text not in notes:
            notes.append(text)
        return f"[{notes.index(text) + 1}]"

    lines.append("| scenario | " + " | ".join(servers) + " |")
    lines.append("| --- |" + " --- |" * len(servers))
    for sid, title, _ in SCENARIOS:
        if not any(sid in results[s]["scenarios"] for s in servers):
            continue
        cells = []
        for s in servers:
            res = results[s]["scenarios"].get(sid)
            if res is None:
                cells.append("-")
                continue
            status, why = res[0], res[1]
            cell = MARK[status]
            if status != "pass":
                known = next((n for srv_, text, n in NOTES if srv_ == s and text in why), None)
                if status == "skip" and why.startswith("option not in this build"):
                    cell += " " + note("option not in this build of s3bulk: the scenario runs once `--help` "
                                       "shows it")
                else:
                    cell += " " + note(f"{s}: {known}" if known else f"{s}: {why}")
            cells.append(cell)
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines.append("")
    for i, n in enumerate(notes, 1):
        lines.append(f"{i}. {n}")
    return "\n".join(lines) + "\n"


def update_readme(md: str) -> None:
    page = ROOT / "docs" / "reference" / "compatibility.md"
    text = page.read_text()
    start, end = "<!-- compat:start -->", "<!-- compat:end -->"
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        raise SystemExit(f"{page} has no compat markers (<!-- compat:start --> ... <!-- compat:end -->)")
    page.write_text(text[: i + len(start)] + "\n" + md.strip() + "\n" + text[j:])
    log(f"{page.relative_to(ROOT)} updated")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", default=",".join(SERVERS), help="comma-separated, from " + ",".join(SERVERS))
    ap.add_argument("--scenarios", default="", help="comma-separated scenario ids (default: all)")
    ap.add_argument("--update-readme", action="store_true")
    ap.add_argument("--build-timeout", type=float, default=3600, help="seconds for one server's install/build")
    ap.add_argument("--timeout", type=float, default=300, help="seconds for one s3bulk command")
    ap.add_argument("--out", default="", help="result file stem (default bench/results/compat-DATE)")
    ap.add_argument("--skip-build", action="store_true", help="do not build a missing Go server (report it instead)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops the servers started here
    global BUILD
    BUILD = not args.skip_build
    servers = [s for s in args.servers.split(",") if s]
    bad = [s for s in servers if s not in SERVERS]
    if bad:
        sys.exit(f"compat.py: unknown server {bad[0]!r} (known: {', '.join(SERVERS)})")
    ids = [sid for sid, _, _ in SCENARIOS]
    only = [s for s in args.scenarios.split(",") if s] or ids
    if [s for s in only if s not in ids]:
        sys.exit(f"compat.py: unknown scenario {[s for s in only if s not in ids][0]!r}")
    if not S3BULK.exists():
        subprocess.run(["uv", "sync", "--frozen", "-q", "--extra", "dask"], cwd=ROOT, check=True)
    v = subprocess.run([str(S3BULK), "--version"], capture_output=True, text=True).stdout.strip()
    versions = {"s3bulk": v.split()[-1] if v else "?"}
    installers = {"versitygw": install_versitygw, "minio": install_minio, "moto": install_moto,
                  "s3proxy": install_s3proxy}
    results: dict[str, dict] = {}
    base = Path(tempfile.mkdtemp(prefix="s3bulk-compat-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        for name in servers:
            work = base / name
            work.mkdir()
            log(f"{name}: installing/starting")
            srv = None
            try:
                if name == "localstack":
                    srv, ver = localstack_server(work)
                else:
                    inst = installers[name](args.build_timeout)
                    if inst.argv is None:
                        results[name] = {"version": inst.version, "status": f"not installable here: {inst.why_not}",
                                         "scenarios": {}}
                        log(f"{name}: {results[name]['status']}")
                        continue
                    ver = inst.version
                    srv = start_server(name, inst, work)
            except (Exception, SystemExit) as exc:
                tail = (work / f"{name}.log").read_text(errors="replace").strip().splitlines()[-1:] \
                    if (work / f"{name}.log").exists() else []
                results[name] = {"version": "", "status": f"did not start: {_short(exc)} {' '.join(tail)[:160]}",
                                 "scenarios": {}}
                log(f"{name}: {results[name]['status']}")
                if srv is not None:
                    srv.stop()
                continue
            t0 = time.monotonic()
            try:
                sc = run_server(name, srv, work, only, args.timeout)
            finally:
                srv.stop()
            counts = {k: sum(1 for r in sc.values() if r[0] == k) for k in ("pass", "fail", "skip")}
            results[name] = {"version": ver, "url": srv.url, "status": "ran: {pass} pass, {fail} fail, {skip} skip"
                             .format(**counts) + f" ({time.monotonic() - t0:.0f} s)", "scenarios": sc}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmdline = "python bench/compat.py " + " ".join(sys.argv[1:])
    if os.environ.get("S3BULK_COMPAT_BIN"):
        cmdline = f"S3BULK_COMPAT_BIN={os.environ['S3BULK_COMPAT_BIN']} {cmdline}"
    md = markdown(results, versions, cmdline.strip(), when)
    stem = args.out or str(ROOT / "bench" / "results" / f"compat-{date.today().isoformat()}")
    Path(stem + ".json").write_text(json.dumps({"when": when, "command": cmdline, "versions": versions,
                                                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                                                "scenarios": {sid: t for sid, t, _ in SCENARIOS},
                                                "results": results}, indent=1, ensure_ascii=False) + "\n")
    Path(stem + ".md").write_text(md)
    print(md)
    if args.update_readme:
        update_readme(md)


if __name__ == "__main__":
    main()
