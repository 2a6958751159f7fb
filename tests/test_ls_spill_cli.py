"""`s3bulk ls` with pages listed ahead of its output spilled to temporary files (engine/listing/spill.py),
against bench/slow_s3.py (a real HTTP S3 endpoint over a synthetic key space): the output is every
key once in S3's order, and the spill files are gone when ls ends, also when it is interrupted
(Ctrl-C) while its output is blocked and files are on disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import slow_s3  # noqa: E402

KEYS = 60_000


@pytest.fixture(scope="module")
def hashed():
    srv = slow_s3.start_thread("hashed", keys=KEYS, size=10, delay_ms=20)
    yield srv
    srv.stop()


def env(tmp: Path) -> dict[str, str]:
    return dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
                TMPDIR=str(tmp), XDG_STATE_HOME=str(tmp / "state"), S3BULK_HINTS="0")


def spill_files(tmp: Path) -> list[Path]:
    return [p for d in tmp.glob("s3bulk-ls-*") for p in d.iterdir()]


def test_ls_prints_every_key_in_order_and_leaves_no_spill(hashed, tmp_path):
    r = subprocess.run([sys.executable, "-m", "s3bulk", "ls", "s3://b/", "--endpoint-url", hashed.url],
                       capture_output=True, text=True, env=env(tmp_path), timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    keys = [line.rsplit(" ", 1)[-1] for line in r.stdout.splitlines()]
    assert keys == slow_s3.make_keys("hashed", KEYS)
    assert not list(tmp_path.glob("s3bulk-ls-*"))


def test_ctrl_c_removes_the_spill_files(hashed, tmp_path):
    """A slow reader of ls's output (4 KiB at a time): pages listed ahead of it go to disk. SIGINT
    then ends ls (exit 130, no traceback) and the files go with it."""
    p = subprocess.Popen([sys.executable, "-m", "s3bulk", "ls", "s3://b/", "--endpoint-url", hashed.url],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(tmp_path), cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        assert p.stdout is not None
        while not spill_files(tmp_path) and p.poll() is None and time.monotonic() < deadline:
            os.read(p.stdout.fileno(), 4096)  # a slow reader: the output trails the listing
            time.sleep(0.01)
        assert spill_files(tmp_path), "no page was spilled while the output was blocked"
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)  # reads the pipe: the interrupted write is let go
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert b"Traceback" not in err, err
    assert not list(tmp_path.glob("s3bulk-ls-*"))


def test_a_reader_that_stops_early_leaves_no_traceback_and_no_spill(hashed, tmp_path):
    """`s3bulk ls ... | head`: the reader goes away after a few lines; ls stops quietly (exit 0), its
    listings in flight are cancelled before its event loop closes, and the spill files are gone."""
    p = subprocess.Popen([sys.executable, "-m", "s3bulk", "ls", "s3://b/", "--endpoint-url", hashed.url],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(tmp_path), cwd=ROOT)
    try:
        assert p.stdout is not None and p.stderr is not None
        for _ in range(3):
            assert p.stdout.readline()
        p.stdout.close()
        err = p.stderr.read()
        p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert b"Traceback" not in err and b"destroyed" not in err, err
    assert not list(tmp_path.glob("s3bulk-ls-*"))


def test_ctrl_c_just_as_a_page_is_ready_still_closes_the_listing():
    """Ctrl-C can land after a step of the listing finished but before the event loop ran the
    callback that ends that step's run (a `loop.stop()` left queued). Closing the listing then ran
    that stale stop first: 'internal error: Event loop stopped before Future completed' (exit 3, not
    130), and the listing's cleanup (its requests, the spill files) did not run to its end."""
    import asyncio

    from s3bulk.api import _stepped

    closed: list[bool] = []

    def interrupt() -> None:
        raise KeyboardInterrupt

    async def pages():
        try:
            asyncio.get_running_loop().call_soon(interrupt)  # runs right after this step completes
            yield "first page"
            yield "second page"
        finally:
            await asyncio.sleep(0)  # cleanup that needs the loop (cancelled listings, spill files)
            closed.append(True)

    got: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        for text in _stepped(pages()):
            got.append(text)
    assert closed == [True]
