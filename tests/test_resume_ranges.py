"""Resume inside one large object: a download to local disk killed mid-object keeps its temporary
file and the record of the parts in it (stores/files/partfile.py), and --resume fetches only the rest.

Real CLI against LocalStack behind a counting proxy: every ranged GET of an object is seen there
(its Range and If-Match headers), so "fetched again" is counted at the server side over all runs,
even for a run killed without a word. The downloads are slowed (`--max-bandwidth`, one object and
two 5 MiB parts at a time) so that a kill lands mid-object; the test waits on the condition "the
record lists N parts", never on a clock. What a resume may fetch again is then exact: the parts
the record did not list when the run died.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conftest import ROOT, child_pids, read_tree
from faultproxy import FaultProxy

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kills and /proc (Linux)")

MiB = 1024 * 1024
PART = 5 * MiB
SIZE = 8 * PART  # 40 MiB: 8 parts
SLOW = ["-w", "1", "-c", "1", "--max-buffer", "10MiB", "--part-size", "5MiB", "--max-bandwidth", "40MiB", "--json"]


class RangedGets:
    """A proxy rule recording (key, byte range, If-Match) of every ranged GET; forwards them all."""

    def __init__(self, bucket: str) -> None:
        self.pattern = re.compile(rf"/{bucket}/([^?]+)")
        self.seen: list[tuple[str, tuple[int, int], str | None]] = []
        self.lock = threading.Lock()
        self.proxy: FaultProxy | None = None

    def __call__(self, method: str, target: str, headers: dict[str, str]) -> None:
        m = self.pattern.match(target)
        r = re.fullmatch(r"bytes=(\d+)-(\d+)", headers.get("range", ""))
        if method == "GET" and m and r:
            with self.lock:
                self.seen.append((unquote(m.group(1)), (int(r.group(1)), int(r.group(2)) + 1),
                                  headers.get("if-match")))
        return None

    def take(self) -> list[tuple[str, tuple[int, int], str | None]]:
        """What was seen since the last take, once every connection of a stopped run is closed
        (a request sent just before a kill is still being read by the proxy until then)."""
        if self.proxy is not None:
            wait_for(lambda: self.proxy.connections_open == 0, 60, "the proxy to serve the last requests")
        with self.lock:
            out, self.seen = self.seen, []
        return out


def fetched(seen: list, key: str) -> int:
    return sum(end - start for k, (start, end), _ in seen if k == key)


def part_of(span: tuple[int, int]) -> int:
    return span[0] // PART + 1


def temp_of(dst: Path, key: str) -> tuple[Path, Path]:
    """(temporary file, its record) of `key` under dst (stores/local/store.py names them after the key)."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    return dst / f".s3bulk-{digest}.s3bulk.part", dst / f".s3bulk-{digest}.ranges.s3bulk.part"


def recorded(record: Path) -> set[int]:
    """Part numbers a record lists (complete lines after its header)."""
    try:
        lines = record.read_bytes().split(b"\n")[1:-1]
    except FileNotFoundError:
        return set()
    return {int(line.split()[0]) for line in lines if len(line.split()) == 2}


def wait_for(pred, timeout: float = 120.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def start(args: list[str], out: Path, env: dict) -> subprocess.Popen:
    with open(out, "wb") as f:
        return subprocess.Popen([sys.executable, "-m", "s3bulk", *args], stdout=f, stderr=subprocess.STDOUT,
                                cwd=ROOT, env=env, start_new_session=True)


def finish(args: list[str], out: Path, env: dict) -> dict:
    proc = start(args, out, env)
    assert proc.wait(300) == 0, out.read_text()[-3000:]
    text = out.read_text()
    assert "Traceback" not in text
    return [json.loads(x) for x in text.splitlines() if x.startswith('{"event": "summary"')][-1]


@pytest.fixture
def env(tmp_path):
    return dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))


@pytest.fixture
def proxied(endpoint, bucket):
    host, port = urlsplit(endpoint).hostname, urlsplit(endpoint).port
    gets = RangedGets(bucket)
    with FaultProxy(host, port, [gets]) as proxy:
        gets.proxy = proxy
        yield proxy.url, gets


def kill_mid_object(args: list[str], dst: Path, key: str, parts: int, sig: int, tmp_path: Path, env: dict) -> set[int]:
    """Run until `key`'s record lists `parts` parts, send `sig` to the run; the parts it then lists."""
    _, record = temp_of(dst, key)
    proc = start(args, tmp_path / "killed.out", env)
    wait_for(lambda: len(recorded(record)) >= parts or proc.poll() is not None, 120, f"{parts} parts recorded")
    assert proc.poll() is None, (tmp_path / "killed.out").read_text()[-3000:]
    os.killpg(proc.pid, sig)
    code = proc.wait(120)
    assert code in (-signal.SIGKILL, 130, 1), (code, (tmp_path / "killed.out").read_text()[-3000:])
    return recorded(record)


def test_sigkill_mid_object_then_resume_fetches_only_the_missing_parts(s3, bucket, proxied, tmp_path, env,
                                                                      no_leftovers):
    url, gets = proxied
    bodies = {f"big{i}.bin": os.urandom(SIZE) for i in range(3)}
    for key, body in bodies.items():
        s3.put_object(Bucket=bucket, Key=key, Body=body)
    dst = tmp_path / "dst"
    args = ["copy", f"s3://{bucket}/", str(dst), "--endpoint-url", url, *SLOW]
    kept = kill_mid_object(args, dst, "big0.bin", 3, signal.SIGKILL, tmp_path, env)
    first = gets.take()
    tmp, record = temp_of(dst, "big0.bin")
    assert tmp.exists() and tmp.stat().st_size == SIZE, "the killed run's temporary file is kept"
    assert not (dst / "big0.bin").exists(), "no partial file under the final name"

    finish([*args, "--resume"], tmp_path / "resumed.out", env)
    second = gets.take()
    assert read_tree(dst) == bodies
    no_leftovers(dst)
    etag = s3.head_object(Bucket=bucket, Key="big0.bin")["ETag"]
    again = [span for k, span, _ in second if k == "big0.bin"]
    assert {part_of(s) for s in again} == set(range(1, 9)) - kept, "exactly the parts not recorded are fetched"
    assert all(m == etag for k, _, m in second if k == "big0.bin"), "a resumed object's parts ask If-Match"
    refetched = sum(min(fetched(first, k), fetched(second, k)) for k in bodies)
    print(f"kill after {len(kept)} of 8 parts recorded: {fetched(second, 'big0.bin') / MiB:.0f} MiB of big0.bin "
          f"fetched again, {refetched / MiB:.0f} MiB fetched twice in all")
    assert fetched(second, "big0.bin") == SIZE - len(kept) * PART
    assert refetched <= SIZE - len(kept) * PART


def test_a_download_spread_over_helper_processes_resumes_too(s3, bucket, proxied, tmp_path, no_leftovers):
    """engine/transfer/spread.py: the helpers' parts are recorded by the run's own process (they report each
    over their pipe), and on resume the helpers fetch only missing parts, with If-Match."""
    url, gets = proxied
    body = os.urandom(SIZE)
    s3.put_object(Bucket=bucket, Key="big.bin", Body=body)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), S3BULK_SPREAD_ABOVE="8MiB",
               S3BULK_SPREAD_PROCESSES="2")
    dst = tmp_path / "dst"
    args = ["copy", f"s3://{bucket}/", str(dst), "--endpoint-url", url, *SLOW]
    kill_mid_object(args, dst, "big.bin", 3, signal.SIGKILL, tmp_path, env)
    first = gets.take()
    kept = recorded(temp_of(dst, "big.bin")[1])
    assert {part_of(s) for _, s, _ in first} & {2, 4, 6, 8}, "a helper fetched parts before the kill"
    finish([*args, "--resume"], tmp_path / "resumed.out", env)
    second = gets.take()
    assert (dst / "big.bin").read_bytes() == body
    etag = s3.head_object(Bucket=bucket, Key="big.bin")["ETag"]
    assert {part_of(s) for _, s, _ in second} == set(range(1, 9)) - kept
    assert all(m == etag for _, _, m in second)
    no_leftovers(dst)


def test_source_changed_between_kill_and_resume_starts_the_object_over(s3, bucket, proxied, tmp_path, env,
                                                                      no_leftovers):
    url, gets = proxied
    s3.put_object(Bucket=bucket, Key="big.bin", Body=os.urandom(SIZE))
    dst = tmp_path / "dst"
    args = ["copy", f"s3://{bucket}/", str(dst), "--endpoint-url", url, *SLOW]
    assert kill_mid_object(args, dst, "big.bin", 2, signal.SIGKILL, tmp_path, env)
    new = os.urandom(SIZE)  # the same size: only the ETag tells the versions apart
    s3.put_object(Bucket=bucket, Key="big.bin", Body=new)
    gets.take()
    finish([*args, "--resume"], tmp_path / "resumed.out", env)
    assert (dst / "big.bin").read_bytes() == new
    assert fetched(gets.take(), "big.bin") == SIZE, "the whole object is fetched again"
    no_leftovers(dst)


def test_ctrl_c_mid_object_keeps_the_file_and_a_plain_run_starts_over(s3, bucket, proxied, tmp_path, env,
                                                                      no_leftovers):
    """Ctrl-C: the parts in flight finish and are recorded, the file stays for a resume; a run
    without --resume removes it and fetches everything."""
    url, gets = proxied
    body = os.urandom(SIZE)
    s3.put_object(Bucket=bucket, Key="big.bin", Body=body)
    dst = tmp_path / "dst"
    args = ["copy", f"s3://{bucket}/", str(dst), "--endpoint-url", url, *SLOW]
    kill_mid_object(args, dst, "big.bin", 2, signal.SIGINT, tmp_path, env)
    tmp, record = temp_of(dst, "big.bin")
    kept = recorded(record)
    assert tmp.exists() and 2 <= len(kept) < 8
    assert {part_of(s) for k, s, _ in gets.take() if k == "big.bin"} == kept, \
        "a graceful stop records every part it fetched"
    finish(args, tmp_path / "plain.out", env)  # no --resume: the kept file is not continued
    assert (dst / "big.bin").read_bytes() == body
    assert fetched(gets.take(), "big.bin") == SIZE
    no_leftovers(dst)


def _alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_spread_helpers_exit_when_their_parent_is_killed(s3, bucket, endpoint, make_fault_proxy, tmp_path):
    """engine/transfer/spread.py: a helper blocked on its part's GET goes when the run is SIGKILLed."""
    s3.put_object(Bucket=bucket, Key="big.bin", Body=os.urandom(4 * PART))
    gate = threading.Event()

    def hold_ranged_gets(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if method == "GET" and "range" in headers:
            gate.wait(120)  # every part waits: the helper is alive and busy when its parent dies
        return None

    proxy = make_fault_proxy(endpoint, [hold_ranged_gets])
    env = dict(os.environ, S3BULK_SPREAD_ABOVE="8MiB", S3BULK_SPREAD_PROCESSES="2")
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", "copy", f"s3://{bucket}/big.bin", str(tmp_path / "o"),
                             "--endpoint-url", proxy.url, "--part-size", "5MiB", "--multipart-threshold", "6MiB",
                             "--no-journal"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    try:
        helpers: set[int] = set()

        def found() -> bool:
            try:  # forked helpers run the parent's command line (no exec)
                mine = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
                helpers.update(p for p in child_pids(proc.pid) if Path(f"/proc/{p}/cmdline").read_bytes() == mine)
            except OSError:
                pass
            return bool(helpers) or proc.poll() is not None

        wait_for(found, 120, "a helper process")
        assert helpers, "no helper process was started"
        proc.kill()
        proc.wait()
        wait_for(lambda: not any(_alive(p) for p in helpers), 30, "the helpers to exit")
    finally:
        gate.set()
        if proc.poll() is None:
            proc.kill()


def test_wrong_bytes_remove_the_kept_file(cli, s3, bucket, endpoint, make_fault_proxy, tmp_path):
    """A part arriving corrupted (the FULL_OBJECT CRC of the parts does not match) every time: the
    object fails, and its temporary file is removed although a journal is kept: wrong bytes are
    never kept for a resume."""
    body = os.urandom(PART + MiB)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "obj").write_bytes(body)
    r = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/", "--checksum-algorithm", "CRC64NVME",
            "--multipart-threshold", "5MiB", "--part-size", "5MiB")
    assert r.code == 0, r

    etag = s3.head_object(Bucket=bucket, Key="obj")["ETag"]  # the object's: only its bytes are wrong

    def flip(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        rng = re.fullmatch(r"bytes=(\d+)-(\d+)", headers.get("range", ""))
        if method == "GET" and target.split("?", 1)[0] == f"/{bucket}/obj" and rng and rng.group(1) == "0":
            end = int(rng.group(2))
            bad = bytearray(body[:end + 1])
            bad[1] ^= 0x01
            return (f"HTTP/1.1 206 Partial Content\r\nContent-Length: {len(bad)}\r\n"
                    f"Content-Range: bytes 0-{end}/{len(body)}\r\nETag: {etag}\r\nConnection: close\r\n\r\n").encode() + bytes(bad)
        return None

    proxy = make_fault_proxy(endpoint, [flip])
    dst = tmp_path / "out"
    r = cli("copy", f"s3://{bucket}/", str(dst), "--endpoint-url", proxy.url, "--path-style",
            "--multipart-threshold", "5MiB", "--part-size", "5MiB", "--json")
    assert r.code == 1 and [e for e in r.events if e["event"] == "failure" and "does not match" in e["error"]], r
    assert not dst.exists() or not list(dst.iterdir()), "no temporary file or record is kept"


def test_a_source_changed_during_the_resumed_run_fails_the_object_and_starts_it_over_next_time(
        s3, bucket, endpoint, tmp_path, env, no_leftovers):
    """The resumed run's listing still shows the recorded version, but the store answers the
    conditional GETs 412 (the object was overwritten after the listing, and again after the
    restart this causes): the object fails with one line, its kept file goes, and the next run
    fetches it whole."""
    from faultproxy import s3_error

    body = os.urandom(SIZE)
    s3.put_object(Bucket=bucket, Key="big.bin", Body=body)
    gets = RangedGets(bucket)
    changed = threading.Event()

    def precondition(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if changed.is_set() and method == "GET" and "if-match" in headers:
            return s3_error(412, "Precondition Failed", "PreconditionFailed",
                            "At least one of the pre-conditions you specified did not hold")
        return None

    host, port = urlsplit(endpoint).hostname, urlsplit(endpoint).port
    with FaultProxy(host, port, [gets, precondition]) as proxy:
        gets.proxy = proxy
        dst = tmp_path / "dst"
        args = ["copy", f"s3://{bucket}/", str(dst), "--endpoint-url", proxy.url, *SLOW]
        assert kill_mid_object(args, dst, "big.bin", 2, signal.SIGKILL, tmp_path, env)
        changed.set()
        proc = start([*args, "--resume"], tmp_path / "resumed.out", env)
        assert proc.wait(300) == 1
        out = (tmp_path / "resumed.out").read_text()
        assert "Traceback" not in out and "source changed during the copy" in out, out[-3000:]
        assert '"event": "restarted"' in out, out[-3000:]
        no_leftovers(dst)
        changed.clear()
        gets.take()
        finish([*args, "--resume"], tmp_path / "again.out", env)
        assert fetched(gets.take(), "big.bin") == SIZE
    assert (dst / "big.bin").read_bytes() == body
    no_leftovers(dst)
