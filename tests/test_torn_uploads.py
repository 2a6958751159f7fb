"""A local file changed while it is uploaded never lands torn (issue 24).

A file rewritten in place while `s3bulk copy FILE s3://b/f` sent it in parts used to land as an
object whose first parts were of the old file and the rest of the new one, with exit 0. Now every
read of the file must find it as the listing saw it and as its first open found it (size, mtime,
ctime): a change aborts the upload, the object starts over once from the new file (a `restarted`
event), and a file that changes again fails with one line and leaves nothing, neither an object
nor an open multipart upload. The same for a single PUT streamed from the file: it is cut before
its last chunk, and the server stores nothing.

Through real components on loopback. An upload in parts goes through a FaultProxy gate that holds
its second part's request (its bytes read, the next part's not yet: one part of buffer) until the
file was changed; a streamed single PUT goes through toxiproxy, which slows each connection to
LocalStack to ~2 MB/s, and the file is changed once it is open in s3bulk. Never a fixed sleep."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest

from conftest import ROOT, process_tree, stopped
from faultproxy import Gate
from toxiproxy import started

from s3bulk.errors import SourceFileChanged
from s3bulk.stores.conditions import SOURCE_FILE, FileVersion
from s3bulk.stores.local.store import LocalStore
from s3bulk.stores.reading import read_range
from s3bulk.config.urls import parse_location

MiB = 1024 * 1024
RATE = 2048  # KB/s per connection, client to server: a 5 MiB part takes ~2.5 s
PART = "5MiB"
LINE = "source file changed during the upload"


@pytest.fixture(scope="module")
def toxiproxy(tmp_path_factory):
    server = started(tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def slow_url(toxiproxy, endpoint) -> str:
    """An endpoint URL through which each connection sends ~2 MB/s (the upload direction)."""
    name = f"torn-{uuid.uuid4().hex[:8]}"
    url = toxiproxy.proxy(name, endpoint)
    toxiproxy.toxic(name, "bandwidth", "upstream", rate=RATE)
    return url


@pytest.fixture
def second_part_held(endpoint, make_fault_proxy) -> tuple[str, Gate]:
    """(an endpoint URL, its Gate): the first upload's part 2 is held until the test lets it go."""
    gate = Gate(lambda req: req.method == "PUT" and "partNumber=2&" in req.target + "&"
                and "x-amz-copy-source" not in req.headers)
    proxy = make_fault_proxy(endpoint)
    proxy.hostile = gate
    yield proxy.url, gate
    gate.open()


class Running:
    """One `s3bulk ... --json` run in the background; its output goes to files (never a full pipe)."""

    def __init__(self, args: list[str], tmp_path: Path, url: str) -> None:
        self.out_path, self.err_path = tmp_path / "out.jsonl", tmp_path / "err.txt"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "s3bulk", *args, "--json", "-w", "1", "--endpoint-url", url],
                stdout=out, stderr=err, cwd=ROOT, start_new_session=True,
                env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state")))

    def pids(self) -> set[int]:
        """This run's processes (the coordinator and every descendant)."""
        return process_tree(self.proc.pid)

    def wait_for(self, condition: Callable[[], bool], what: str, deadline: float = 180) -> None:
        """Until condition() holds; fails if the run ends first or the (generous) deadline passes."""
        end = time.monotonic() + deadline
        while not condition():
            if self.proc.poll() is not None:
                pytest.fail(f"the run ended before {what}:\n{self.output()}")
            if time.monotonic() > end:
                self.proc.kill()
                pytest.fail(f"no {what} within {deadline} s:\n{self.output()}")
            time.sleep(0.02)

    def finish(self) -> tuple[int, list[dict], str]:
        """(exit code, --json events, stderr)."""
        try:
            code = self.proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"the run did not end:\n{self.output()}")
        text = self.out_path.read_text()
        return code, [json.loads(line) for line in text.splitlines() if line.startswith("{")], self.err_path.read_text()

    def output(self) -> str:
        return f"{self.out_path.read_text()[-3000:]}\n{self.err_path.read_text()[-3000:]}"


def _uploads(s3, bucket: str) -> list[dict]:
    return s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])


def _parts_landed(s3, bucket: str, key: str, after: set[str] = frozenset()) -> Callable[[], bool]:
    """A condition: an open upload of `key` (other than those in `after`) holds a part."""
    def landed() -> bool:
        for up in _uploads(s3, bucket):
            if up["Key"] == key and up["UploadId"] not in after:
                if s3.list_parts(Bucket=bucket, Key=key, UploadId=up["UploadId"]).get("Parts"):
                    return True
        return False
    return landed


def _open_in(run: Running, path: Path) -> Callable[[], bool]:
    """A condition: a process of the run has `path` open (the streamed PUT is reading it)."""
    want = str(path)

    def is_open() -> bool:
        for pid in run.pids():
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == want:
                        return True
                except OSError:
                    pass
        return False
    return is_open


@contextlib.contextmanager
def _paused(run: Running) -> Iterator[None]:
    """The run's processes stopped (SIGSTOP) while the test changes the file, continued after: a
    change made of two writes is then one change for every read of it. Without this, an attempt
    started over at once could open the file between the two writes and see a second change (a busy
    CI machine did: restarted, then failed)."""
    with stopped(run.pids()):
        yield


def _rewrite_ends(path: Path) -> bytes:
    """Its first and its last MiB rewritten in place (same size, as a database does); the new bytes."""
    size = path.stat().st_size
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, os.urandom(MiB), 0)
        os.pwrite(fd, os.urandom(MiB), size - MiB)
    finally:
        os.close(fd)
    return path.read_bytes()


def _append(path: Path) -> bytes:
    with open(path, "ab") as f:
        f.write(os.urandom(MiB))
    return path.read_bytes()


def _object(s3, bucket: str, key: str) -> bytes | None:
    try:
        return s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        return None


class Changer:
    """Rewrites the file's first MiB again and again until stopped: a file that keeps changing."""

    def __init__(self, path: Path) -> None:
        self.path, self.stop_ = path, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        fd = os.open(self.path, os.O_WRONLY)
        try:
            while not self.stop_.is_set():
                os.pwrite(fd, os.urandom(MiB), 0)
                self.stop_.wait(0.05)  # pacing of the changes, not a wait for anything
        finally:
            os.close(fd)

    def __enter__(self) -> "Changer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_.set()
        self.thread.join()


@pytest.mark.parametrize("command,change", [("copy", _rewrite_ends), ("sync", _append)],
                         ids=["copy-rewritten-in-place", "sync-appended"])
def test_a_file_changed_between_its_parts_lands_whole_from_its_new_version(
        command, change, second_part_held, s3, bucket, tmp_path):
    """24 MiB in 5 MiB parts, one part at a time (--max-buffer): changed while part 2 is held
    (part 1 landed), three parts before its last part is read. Before: exit 0 and an object neither old nor
    new (the rewrite), or the old bytes under the new file's name (the append), never a restart."""
    src = tmp_path / "src"
    src.mkdir()
    path = src / "f"
    old = os.urandom(24 * MiB)
    path.write_bytes(old)
    target = [str(path), f"s3://{bucket}/f"] if command == "copy" else [str(src), f"s3://{bucket}/"]
    url, gate = second_part_held
    run = Running([command, *target, "--part-size", PART, "--max-buffer", PART], tmp_path, url)
    held = gate.wait_held(run.proc)
    assert _parts_landed(s3, bucket, "f")(), "part 1 landed"
    new = change(path)
    held.set()

    code, events, err = run.finish()
    assert code == 0, run.output()
    got = _object(s3, bucket, "f")
    assert got is not None
    assert got in (old, new), "the object is torn: neither the old nor the new file"
    # the change was seen (the parts after it were never sent), and the restart sent the new file
    assert [(e["src"], e["reason"]) for e in events if e["event"] == "restarted"] == \
        [(str(path), "source file changed during the upload")], run.output()
    assert got == new
    assert _uploads(s3, bucket) == []  # the first attempt's upload was aborted


def test_a_file_that_keeps_changing_fails_with_one_line_and_leaves_nothing(second_part_held, s3, bucket, tmp_path):
    """Changed again and again from the first part on: the upload is aborted, started over once,
    aborted again, and the object fails with one line; no object, no open multipart upload."""
    path = tmp_path / "f"
    path.write_bytes(os.urandom(24 * MiB))
    url, gate = second_part_held
    run = Running(["copy", str(path), f"s3://{bucket}/f", "--part-size", PART, "--max-buffer", PART],
                  tmp_path, url)
    held = gate.wait_held(run.proc)
    with Changer(path):
        held.set()
        code, events, err = run.finish()
    assert code != 0, run.output()
    failures = [e for e in events if e["event"] == "failure"]
    assert len(failures) == 1 and LINE in json.dumps(failures[0]), run.output()
    assert [e["event"] for e in events].count("restarted") == 1, run.output()
    assert "Traceback" not in err, err
    assert _object(s3, bucket, "f") is None
    assert _uploads(s3, bucket) == []


def test_a_file_changed_during_its_streamed_single_put_lands_whole(slow_url, s3, bucket, tmp_path):
    """8 MiB, below the multipart threshold: one PUT streamed from the file (~4 s here). Changed
    while the file is open for it: the PUT is cut before its last chunk, and the object is sent
    again, whole, from the new file. Before: no restart (a change during the send could only be
    caught by the server as a checksum mismatch)."""
    path = tmp_path / "f"
    old = os.urandom(8 * MiB)
    path.write_bytes(old)
    run = Running(["copy", str(path), f"s3://{bucket}/f"], tmp_path, slow_url)
    run.wait_for(_open_in(run, path), "open source file")
    with _paused(run):
        new = _rewrite_ends(path)

    code, events, err = run.finish()
    assert code == 0, run.output()
    got = _object(s3, bucket, "f")
    assert got in (old, new), "the object is torn: neither the old nor the new file"
    assert [e["src"] for e in events if e["event"] == "restarted"] == [str(path)], run.output()
    assert got == new


def test_a_streamed_single_put_of_a_file_that_keeps_changing_stores_nothing(slow_url, s3, bucket, tmp_path):
    """The same PUT with a file that keeps changing: each attempt is cut short of its length, so
    the server never commits one, and the object fails with one line."""
    path = tmp_path / "f"
    path.write_bytes(os.urandom(8 * MiB))
    run = Running(["copy", str(path), f"s3://{bucket}/f"], tmp_path, slow_url)
    run.wait_for(_open_in(run, path), "open source file")
    with Changer(path):
        code, events, err = run.finish()
    assert code != 0, run.output()
    failures = [e for e in events if e["event"] == "failure"]
    assert len(failures) == 1 and LINE in json.dumps(failures[0]), run.output()
    assert "Traceback" not in err, err
    assert _object(s3, bucket, "f") is None


@pytest.mark.unit
def test_reads_of_one_local_object_come_from_one_version_of_the_file(tmp_path):
    """What the tests above rely on, on the store itself and without a clock (also for a local to
    local copy, which no toxiproxy can slow): a file appended to after it was listed is refused by
    a local copy, which leaves nothing under the final name; of two parts read before and after an
    append, the second is refused."""
    src_dir, dst_dir = tmp_path / "src", tmp_path / "dst"
    src_dir.mkdir()
    (src_dir / "f").write_bytes(os.urandom(3 * MiB))

    async def main() -> None:
        src, dst = LocalStore(parse_location(str(src_dir))), LocalStore(parse_location(str(dst_dir)))
        await dst.prepare()
        info = await src.head("f")
        _append(src_dir / "f")
        pin = SOURCE_FILE.set(FileVersion(info.size, info.mtime))
        try:
            with pytest.raises(SourceFileChanged):
                await dst.copy_from(src, "f", "f", info.size or 0, info.mtime)
        finally:
            SOURCE_FILE.reset(pin)
        assert os.listdir(dst_dir) == []  # neither the file nor its temporary

        info = await src.head("f")
        pin = SOURCE_FILE.set(FileVersion(info.size, info.mtime))
        try:
            buf = memoryview(bytearray(MiB))
            await read_range(src, "f", 0, MiB, buf)  # pins the file as it is now
            _append(src_dir / "f")
            with pytest.raises(SourceFileChanged):
                await read_range(src, "f", MiB, 2 * MiB, buf)
        finally:
            SOURCE_FILE.reset(pin)

    asyncio.run(main())
