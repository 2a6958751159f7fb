"""Resume: a copy killed (SIGKILL) or interrupted (Ctrl-C once, twice) at random points, then run
again with --resume, ends byte-identical, and redoes at most the in-flight window.

How transfers are counted: a proxy in front of the real server (LocalStack, `s3bulk serve`) counts
the requests per object (PUTs into the bucket, GETs from the list/get server) over all runs, so
"transferred twice" is exact even when a run is killed without a word. The journal records every
finished object at once (not only finished pages), so what a resume may redo is what was in flight:
workers x concurrency transfers per stop, whatever the page size and however loaded the machine is.
"""

from __future__ import annotations

import functools
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conftest import ROOT, bucket_tree, read_tree
from faultproxy import FaultProxy

WORKERS, PAGE, PAGES_AHEAD = 2, 20, 2


def in_flight(concurrency: int) -> int:
    """Transfers in flight at any moment: the most a stop can leave unrecorded."""
    return WORKERS * concurrency


class Counting:
    """A proxy rule that counts requests per object and forwards every one."""

    def __init__(self, method: str, pattern: str) -> None:
        self.method, self.pattern = method, re.compile(pattern)
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, method: str, target: str, headers: dict[str, str]) -> None:
        if method == self.method:
            m = self.pattern.match(target)
            if m:
                with self.lock:
                    self.counts[unquote(m.group(1))] += 1
        return None

    @property
    def total(self) -> int:
        with self.lock:
            return sum(self.counts.values())

    def twice(self) -> int:
        with self.lock:
            return sum(n - 1 for n in self.counts.values() if n > 1)


def s3bulk(*args: str, out: Path, env: dict) -> subprocess.Popen:
    with open(out, "wb") as f:
        return subprocess.Popen([sys.executable, "-m", "s3bulk", *args], stdout=f, stderr=subprocess.STDOUT,
                                cwd=ROOT, env=env, start_new_session=True)


def wait_for(pred, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def summary_of(path: Path) -> dict:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.startswith('{"event": "summary"')]
    assert lines, path.read_text()[-3000:]
    return lines[-1]


@pytest.fixture
def env(tmp_path):
    return dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))


@pytest.fixture
def listget(tmp_path):
    """`s3bulk serve --synthetic 3000` (pages of 20 names) behind a counting proxy."""
    port_file = tmp_path / "serve.out"
    with open(port_file, "wb") as f:
        server = subprocess.Popen([sys.executable, "-m", "s3bulk", "serve", "--synthetic", "3000", "--size", "300",
                                   "--port", "0", "--processes", "1", "--page-size", str(PAGE)],
                                  stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
    try:
        wait_for(lambda: re.search(rb"http://127\.0\.0\.1:(\d+)", port_file.read_bytes()), 30, "s3bulk serve")
        port = int(re.search(rb"http://127\.0\.0\.1:(\d+)", port_file.read_bytes()).group(1))
        gets = Counting("GET", r"/get/([^?]+)")
        with FaultProxy("127.0.0.1", port, [gets]) as proxy:
            yield proxy.url + "/", gets
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


@functools.lru_cache(maxsize=None)
def synthetic(n: int = 3000, size: int = 300) -> dict[str, bytes]:
    from s3bulk.serve.server import synthetic_body, synthetic_name

    return {synthetic_name(i): bytes(synthetic_body(synthetic_name(i), size)) for i in range(n)}


def test_sigkill_then_resume_list_get_source(listget, tmp_path, env, no_leftovers):
    """Token-paged source -> local disk: killed three times at random points, then resumed."""
    url, gets = listget
    dst, journal = tmp_path / "dst", tmp_path / "j.sqlite"
    args = ["copy", url, str(dst), "--json", "-w", str(WORKERS), "-c", "4", "--journal", str(journal)]
    rng = random.Random(6)
    for i, fraction in enumerate(sorted(rng.uniform(0.1, 0.85) for _ in range(3))):
        target = int(fraction * 3000)
        if gets.total >= target:
            continue
        proc = s3bulk(*args, *(["--resume"] if i else []), out=tmp_path / f"run{i}.out", env=env)
        wait_for(lambda: gets.total >= target or proc.poll() is not None, 60, f"{target} GETs")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    leftovers = [p.name for p in dst.iterdir() if p.name.startswith(".s3bulk-")]
    final = s3bulk(*args, "--resume", out=tmp_path / "final.out", env=env)
    assert final.wait(120) == 0, (tmp_path / "final.out").read_text()[-3000:]
    summary = summary_of(tmp_path / "final.out")
    assert read_tree(dst) == synthetic()
    no_leftovers(dst)
    assert not journal.exists(), "a completed run removes its journal"
    twice = gets.twice()
    print(f"list/get -> local: {gets.total} GETs for 3000 objects, {twice} twice (in flight {in_flight(4)}), "
          f"{len(leftovers)} temporary files left by the kills, resumed_skipped {summary['resumed_skipped']}")
    assert set(gets.counts) == set(synthetic())
    assert twice <= 3 * in_flight(4), f"{twice} objects transferred twice, at most {in_flight(4)} in flight per kill"
    assert summary["resumed_skipped"] > 0


def test_sigkill_then_resume_local_to_s3(endpoint, s3, bucket, tmp_path, env):
    """Ordered source (key ranges) -> S3: killed twice at random points, then resumed."""
    src = tmp_path / "src"
    bodies = {f"d{i % 7}/f{i:05d}": os.urandom(200 + i % 50) for i in range(600)}
    for key, body in bodies.items():
        (src / key).parent.mkdir(parents=True, exist_ok=True)
        (src / key).write_bytes(body)
    host, port = urlsplit(endpoint).hostname, urlsplit(endpoint).port
    puts = Counting("PUT", rf"/{bucket}/([^?]+)")
    journal = tmp_path / "j.sqlite"
    with FaultProxy(host, port, [puts]) as proxy:
        args = ["copy", str(src), f"s3://{bucket}/", "--json", "-w", str(WORKERS), "-c", "8",
                "--page-size", str(PAGE), "--endpoint-url", proxy.url, "--journal", str(journal)]
        rng = random.Random(7)
        for i, fraction in enumerate(sorted(rng.uniform(0.15, 0.8) for _ in range(2))):
            target = int(fraction * len(bodies))
            if puts.total >= target:
                continue
            proc = s3bulk(*args, *(["--resume"] if i else []), out=tmp_path / f"run{i}.out", env=env)
            wait_for(lambda: puts.total >= target or proc.poll() is not None, 90, f"{target} PUTs")
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        with sqlite3.connect(journal) as db:
            rows = db.execute("SELECT after, until, objects FROM ranges").fetchall()
        assert rows, "the killed runs journaled finished key ranges"
        final = s3bulk(*args, "--resume", out=tmp_path / "final.out", env=env)
        assert final.wait(180) == 0, (tmp_path / "final.out").read_text()[-3000:]
    summary = summary_of(tmp_path / "final.out")
    assert bucket_tree(s3, bucket) == bodies
    twice = puts.twice()
    print(f"local -> S3: {puts.total} PUTs for {len(bodies)} objects, {twice} twice (in flight {in_flight(8)}); "
          f"journal before the last run: {len(rows)} range rows; resumed_skipped {summary['resumed_skipped']}")
    assert set(puts.counts) == set(bodies)
    assert twice <= 2 * in_flight(8), f"{twice} objects transferred twice, at most {in_flight(8)} in flight per kill"
    assert summary["resumed_skipped"] + summary["copied"] == len(bodies)


@pytest.mark.parametrize("how", ["sigint-once", "sigint-twice"])
def test_ctrl_c_then_resume(listget, tmp_path, env, no_leftovers, how):
    """Ctrl-C once: a graceful stop, exit 130 and a line saying how to resume. Twice: an immediate
    stop. Either way the journal is consistent and --resume completes the copy."""
    url, gets = listget
    dst, journal = tmp_path / "dst", tmp_path / "j.sqlite"
    args = ["copy", url, str(dst), "-w", str(WORKERS), "-c", "4", "--journal", str(journal)]
    proc = s3bulk(*args, out=tmp_path / "run.out", env=env)
    wait_for(lambda: gets.total >= 1000 or proc.poll() is not None, 60, "1000 GETs")
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole process group
    if how == "sigint-twice":
        time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(60) == 130
    out = (tmp_path / "run.out").read_text()
    assert "Traceback" not in out, out
    assert "resume with: s3bulk copy" in out and "--resume" in out, out
    at_stop = gets.total
    assert at_stop < 3000
    no_leftovers(dst)  # whole files only (a partial one is never under its final name)
    for p in dst.iterdir():
        assert p.read_bytes() == synthetic()[p.name]
    assert journal.exists()
    final = s3bulk(*args, "--resume", "--json", out=tmp_path / "final.out", env=env)
    assert final.wait(120) == 0, (tmp_path / "final.out").read_text()[-3000:]
    assert read_tree(dst) == synthetic()
    no_leftovers(dst)
    twice = gets.twice()
    print(f"{how}: {at_stop} GETs before the stop, {twice} objects transferred twice (in flight {in_flight(4)})")
    # once: the transfers in flight finish and are recorded, nothing is redone; twice: they are cut off
    assert twice <= (0 if how == "sigint-once" else in_flight(4))


def test_multipart_interrupted_halfway(endpoint, s3, bucket, tmp_path, env):
    """A 96 MiB object in 8 MiB parts: killed after some parts (SIGKILL), then resumed: the parts
    already uploaded are kept, the object is byte-identical and no multipart upload stays open.
    Then the same with Ctrl-C: the parts in flight finish and the upload waits for the resume."""
    src = tmp_path / "src"
    src.mkdir()
    body = os.urandom(96 * 1024 * 1024)
    (src / "big.bin").write_bytes(body)
    host, port = urlsplit(endpoint).hostname, urlsplit(endpoint).port
    parts = Counting("PUT", rf"/{bucket}/(big\.bin)\?.*partNumber=")
    journal = tmp_path / "j.sqlite"

    def listed_parts() -> int:
        ups = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
        if not ups:
            return 0
        return len(s3.list_parts(Bucket=bucket, Key="big.bin", UploadId=ups[0]["UploadId"]).get("Parts", []))

    with FaultProxy(host, port, [parts]) as proxy:
        args = ["copy", str(src), f"s3://{bucket}/", "--json", "-w", "1", "--part-size", "8MiB",
                "--multipart-threshold", "8MiB", "--max-buffer", "16MiB", "--endpoint-url", proxy.url,
                "--journal", str(journal), "--max-bandwidth", "24MiB"]  # slow enough to stop half-way
        for sig, resume in ((signal.SIGKILL, []), (signal.SIGINT, ["--resume"])):
            seen = listed_parts()
            proc = s3bulk(*args, *resume, out=tmp_path / f"{sig.name}.out", env=env)
            wait_for(lambda: listed_parts() >= seen + 3 or proc.poll() is not None, 90, "3 more parts")
            os.killpg(proc.pid, sig)
            code = proc.wait(60)
            assert code == (-signal.SIGKILL if sig == signal.SIGKILL else 130), \
                (tmp_path / f"{sig.name}.out").read_text()[-2000:]
            assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads"), "the upload stays open for resume"
            with sqlite3.connect(journal) as db:
                assert db.execute("SELECT count(*) FROM uploads").fetchone()[0] == 1
        kept = listed_parts()
        before = parts.total
        final = s3bulk(*args, "--resume", out=tmp_path / "final.out", env=env)
        assert final.wait(120) == 0, (tmp_path / "final.out").read_text()[-3000:]
    got = s3.get_object(Bucket=bucket, Key="big.bin")["Body"].read()
    assert got == body
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads"), "no multipart upload left open"
    print(f"multipart: {parts.total} part uploads for 12 parts; {kept} parts kept across the interruptions, "
          f"{parts.total - before} uploaded by the last run")
    assert parts.total - before == 12 - kept


def test_resume_errors(tmp_path, env, cli):
    """--resume with no journal runs from the start (exit 0); with another run's journal: one line, exit 2."""
    src, dst, journal = tmp_path / "src", tmp_path / "dst", tmp_path / "j.sqlite"
    src.mkdir()
    (src / "a").write_bytes(b"a")
    # no journal yet (a first run, or the last one completed): --resume runs from the start and says so,
    # so a scheduler can put the same command line in a job and restart it as often as it likes
    r = cli("copy", str(src), str(dst), "--journal", str(journal), "--resume", env=env)
    assert r.code == 0, r
    assert "nothing to resume" in r.err and "starting from the beginning" in r.err, r.err
    assert (dst / "a").read_bytes() == b"a" and not journal.exists()
    r = cli("copy", str(src), str(dst), "--journal", str(journal), "--resume", env=env)  # again, after completion
    assert r.code == 0, r
    import shutil

    shutil.rmtree(dst)

    from s3bulk.engine.journal.units import Journal
    from s3bulk.engine.job import Job
    from s3bulk.engine.planner import build_plan
    import asyncio

    other = tmp_path / "other"
    other.mkdir()
    plan = asyncio.run(build_plan(Job("copy", str(other), str(tmp_path / "elsewhere"))))
    Journal.open(str(journal), plan, "copy", resume=False).finish(complete=False)
    r = cli("copy", str(src), str(dst), "--journal", str(journal), "--resume", env=env)
    assert r.code == 2, r
    assert r.err.count("\n") == 1 and "belongs to another run" in r.err, r.err
    assert not dst.exists() or not any(dst.iterdir())

    r = cli("copy", str(src), str(dst), "--journal", str(journal), env=env)  # a fresh run replaces it
    assert r.code == 0, r
    assert not journal.exists()
    r = cli("copy", str(src), str(dst), "--no-journal", "--resume", env=env)
    assert r.code == 2, r
