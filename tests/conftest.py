"""Fixtures: a real LocalStack S3 on loopback (started once per session, or reused), a bucket per
test, and a helper that runs the real `s3bulk` command line."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
CREDS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint}/_localstack/health", timeout=2) as r:
            return json.loads(r.read()).get("services", {}).get("s3") in ("running", "available")
    except Exception:
        return False


# ------------------------------------------------------------------------------------ unit tests
# `pytest -m unit` runs the tests that need no server (the in-memory store, local files, parsers,
# the engine's decisions) in seconds and starts no LocalStack. The marker is kept true here: a
# test marked unit that asks for LocalStack, by name or through another fixture (s3, bucket, cli,
# fault_proxy, ...), fails at once with one line instead of starting it.

UNIT_REFUSED = "a unit test may not start LocalStack: it asks for the `endpoint` fixture{how}; " \
               "drop the unit mark or use the in-memory store"
_unit_test_running = False  # set around each unit test, for a fixture asked by getfixturevalue


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture is set up: a unit test whose fixtures reach `endpoint` fails here."""
    global _unit_test_running
    _unit_test_running = item.get_closest_marker("unit") is not None
    if _unit_test_running and "endpoint" in getattr(item, "fixturenames", ()):
        pytest.fail(UNIT_REFUSED.format(how=""), pytrace=False)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    global _unit_test_running
    _unit_test_running = False


@pytest.fixture(scope="session")
def endpoint(tmp_path_factory) -> str:
    """The LocalStack S3 endpoint: S3BULK_TEST_ENDPOINT if set and healthy, else one we start."""
    if _unit_test_running:  # asked at run time (request.getfixturevalue), which setup cannot see
        pytest.fail(UNIT_REFUSED.format(how=" (through request.getfixturevalue)"), pytrace=False)
    given = os.environ.get("S3BULK_TEST_ENDPOINT")
    if given:
        # asked again for up to two minutes: on a busy machine one health request may take longer
        # than its 2 s, and failing here would fail every test of this pytest worker
        deadline = time.monotonic() + 120
        while not _healthy(given):
            if time.monotonic() > deadline:
                pytest.fail(f"S3BULK_TEST_ENDPOINT={given} does not answer as LocalStack S3")
            time.sleep(1)
        yield given
        return
    port = _free_port()
    log = tmp_path_factory.mktemp("localstack") / "localstack.log"
    state = tmp_path_factory.mktemp("localstack-state")
    env = dict(os.environ, FILESYSTEM_ROOT=str(state))
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", str(ROOT / "localstack" / "start.sh"), str(port)], stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while not _healthy(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"LocalStack did not start; its log:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    yield url
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="session", autouse=True)
def aws_env():
    """Tests talk to LocalStack with its dummy credentials, never to a real account."""
    saved = {k: os.environ.get(k) for k in list(CREDS) + ["AWS_PROFILE", "AWS_CONFIG_FILE",
                                                         "AWS_SHARED_CREDENTIALS_FILE"]}
    os.environ.update(CREDS)
    os.environ.pop("AWS_PROFILE", None)
    os.environ["AWS_CONFIG_FILE"] = "/nonexistent/s3bulk-tests/config"
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = "/nonexistent/s3bulk-tests/credentials"
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def s3(endpoint):
    """A plain botocore client for setting up and checking buckets (the real LocalStack behind it)."""
    import botocore.session

    return botocore.session.get_session().create_client("s3", endpoint_url=endpoint, region_name="us-east-1")


@pytest.fixture
def bucket(s3) -> str:
    name = f"t-{uuid.uuid4().hex[:20]}"
    s3.create_bucket(Bucket=name)
    return name


@pytest.fixture
def make_bucket(s3):
    def make() -> str:
        name = f"t-{uuid.uuid4().hex[:20]}"
        s3.create_bucket(Bucket=name)
        return name
    return make


class Run:
    """The result of one `s3bulk` invocation."""

    def __init__(self, proc: subprocess.CompletedProcess) -> None:
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    @property
    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.out.splitlines() if line.startswith("{")]

    @property
    def summary(self) -> dict:
        found = [e for e in self.events if e.get("event") == "summary"]
        assert found, f"no summary in output:\n{self.out}\n{self.err}"
        return found[-1]

    def __repr__(self) -> str:
        return f"Run(code={self.code}, out={self.out[-2000:]!r}, err={self.err[-2000:]!r})"


@pytest.fixture(scope="session")
def state_home(tmp_path_factory):
    """Where CLI runs keep their resume journals: not the user's ~/.local/state."""
    return str(tmp_path_factory.mktemp("state"))


@pytest.fixture
def cli(endpoint, state_home):
    """Run `python -m s3bulk ARGS` against LocalStack; returns a Run."""

    def run(*args: str, env: dict | None = None, timeout: float = 600, endpoint_url: bool = True) -> Run:
        argv = [sys.executable, "-m", "s3bulk", *args]
        if endpoint_url and args and args[0] in ("copy", "sync", "ls", "du", "rm", "check", "mv") and not any(
                a.startswith(("--endpoint-url", "--src-endpoint-url", "--dst-endpoint-url")) for a in args):
            argv += ["--endpoint-url", endpoint]
        full_env = dict(os.environ, XDG_STATE_HOME=state_home)
        full_env.update(env or {})
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=ROOT)
        return Run(proc)

    return run


def child_pids(pid: int) -> set[int]:
    """Child processes of pid, whichever of its threads forked them (Linux: /proc)."""
    out: set[int] = set()
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.update(int(c) for c in f.read().split())
    except OSError:
        pass
    return out


def process_tree(pid: int) -> set[int]:
    """pid and every process descending from it (a run's coordinator, workers and helpers)."""
    seen, todo = set(), [pid]
    while todo:
        one = todo.pop()
        if one not in seen:
            seen.add(one)
            todo.extend(child_pids(one))
    return seen


@contextlib.contextmanager
def stopped(pids: set[int]) -> Iterator[None]:
    """The processes stopped (SIGSTOP) inside, continued (SIGCONT) after; one already gone is skipped.
    What a test changes inside is in place before any of them sends its next request."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def put_tree(s3, bucket: str, objects: dict[str, bytes]) -> None:
    """PUT each object; a few hundred go 8 at once (a boto3 client is thread-safe), since one at a
    time against LocalStack was most of what some tests cost."""
    if len(objects) < 50:
        for key, body in objects.items():
            s3.put_object(Bucket=bucket, Key=key, Body=body)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        for done in [pool.submit(s3.put_object, Bucket=bucket, Key=k, Body=v) for k, v in objects.items()]:
            done.result()


def read_tree(root: Path) -> dict[str, bytes]:
    """Every regular file under root as {relative posix path: bytes}."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def write_tree(root: Path, objects: dict[str, bytes]) -> None:
    for key, body in objects.items():
        p = root / key
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body)


def bucket_tree(s3, bucket: str, prefix: str = "") -> dict[str, bytes]:
    out = {}
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for c in page.get("Contents", []):
            out[c["Key"][len(prefix):]] = s3.get_object(Bucket=bucket, Key=c["Key"])["Body"].read()
    return out


@pytest.fixture
def no_leftovers():
    """Assert no temporary part files remain under a directory."""

    def check(root: Path) -> None:
        left = [p for p in root.rglob(".s3bulk-*")]
        assert not left, f"temporary files left behind: {left}"

    return check


@pytest.fixture
def make_fault_proxy():
    """make(URL or (host, port), rules=None, rates=Faults(...)) -> a started FaultProxy in front of
    it (tests/faultproxy.py); every one is stopped at teardown."""
    from faultproxy import FaultProxy

    started = []

    def make(upstream, rules=None, *, rates=None):
        proxy = (FaultProxy.for_url(upstream, rules, rates=rates) if isinstance(upstream, str)
                 else FaultProxy(upstream[0], upstream[1], rules, rates=rates))
        started.append(proxy.start())
        return proxy

    yield make
    for proxy in started:
        proxy.stop()


@pytest.fixture
def fault_proxy(endpoint, make_fault_proxy):
    """A FaultProxy in front of LocalStack: pass `--endpoint-url fault_proxy.url`; no faults until
    `fault_proxy.rates = Faults(...)`; `fault_proxy.counts` says what it did."""
    return make_fault_proxy(endpoint)


@pytest.fixture
def listget_server():
    """start(*ARGS) runs `s3bulk serve ARGS --port 0` and returns its base URL (no trailing slash);
    every server is stopped at teardown. Front one with make_fault_proxy(url)."""
    import threading

    procs: list[subprocess.Popen] = []

    def start(*args: str) -> str:
        proc = subprocess.Popen([sys.executable, "-m", "s3bulk", "serve", *args, "--port", "0"],
                                stderr=subprocess.PIPE, text=True, cwd=ROOT)
        procs.append(proc)
        line = proc.stderr.readline()
        assert line.startswith("serving on "), line
        # read the rest of its stderr as it comes: a pipe nobody reads fills at 64 KiB, and a server
        # blocked writing to it runs no signal handler, so SIGTERM at teardown went unanswered
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        return line.split()[-1].rstrip("/")

    yield start
    for proc in procs:  # the server keeps nothing worth a graceful stop: SIGTERM, then SIGKILL soon
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(5)  # a stop takes milliseconds; a server that ignores SIGTERM costs 5 s, not 60
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


def objects_under(s3, bucket: str, prefix: str = "") -> dict[str, bytes]:
    """The bucket's objects under `prefix`, by their whole keys (bucket_tree strips the prefix)."""
    return {k: v for k, v in bucket_tree(s3, bucket).items() if k.startswith(prefix)}


def one_error_line(err: str) -> str:
    """The one `s3bulk: error:` line a refused run printed (and no traceback)."""
    lines = [ln for ln in err.splitlines() if ln.startswith("s3bulk: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


__all__ = ["put_tree", "read_tree", "write_tree", "bucket_tree", "objects_under", "one_error_line", "shutil"]


@pytest.fixture
def memory_buckets():
    """make() -> (name, MemoryBucket): in-memory buckets for unit tests (no server), each under a
    fresh name, all dropped at teardown."""
    from s3bulk.stores import memory

    made: list[str] = []

    def make() -> tuple[str, memory.MemoryBucket]:
        name = f"m-{uuid.uuid4().hex[:12]}"
        made.append(name)
        return name, memory.bucket(name)

    yield make
    for name in made:
        memory.drop(name)


@pytest.fixture
def two_memory_buckets(memory_buckets):
    """(src name, src bucket, dst name, dst bucket): two in-memory buckets, dropped at teardown."""
    return (*memory_buckets(), *memory_buckets())


class DyingProducer(io.RawIOBase):
    """A stream for upload_stream that gives `left` bytes, then fails with `error` on its next
    read: a producer that died part-way through a multipart upload."""

    def __init__(self, left: int, error: OSError) -> None:
        super().__init__()
        self.left, self.error = left, error

    def readable(self) -> bool:
        return True

    def readinto(self, view) -> int:
        if self.left <= 0:
            raise self.error
        n = min(len(view), self.left)
        view[:n] = b"x" * n
        self.left -= n
        return n
