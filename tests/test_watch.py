"""`sync --watch` keeps DST equal to SRC as SRC changes, and survives a kill: a local directory
watched through filesystem events into LocalStack (creates, overwrites, deletes, renames of files
and directories, a file still being written), SIGKILL with changes made while nothing watched and
the same command started again, SIGTERM ending with exit 0, an S3 SRC re-listed at
--watch-interval, the Python API's stop handle. Every wait is on a condition, with a generous
deadline; DST is compared exactly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT, put_tree, read_tree, write_tree
from conftest import bucket_tree as _bucket_tree

DEADLINE = 90.0


def start_watch(tmp_path: Path, endpoint: str, *args: str, name: str = "watch") -> tuple[subprocess.Popen, Path]:
    """`s3bulk sync ARGS --watch --json` in its own process group, stdout to a file (read by `events`)."""
    out = tmp_path / f"{name}-{time.monotonic_ns()}.jsonl"
    err = out.with_suffix(".err")
    proc = subprocess.Popen(
        [sys.executable, "-m", "s3bulk", "sync", *args, "--watch", "--json", "--endpoint-url", endpoint],
        stdout=open(out, "w"), stderr=open(err, "w"), cwd=ROOT, start_new_session=True,
        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state")))
    return proc, out


def events(out: Path) -> list[dict]:
    found = []
    for line in out.read_text().splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            pass  # a line still being written
    return found


def wait_for(what: str, check, proc: subprocess.Popen | None = None, out: Path | None = None) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        if proc is not None and proc.poll() is not None:
            err = out.with_suffix(".err").read_text() if out else ""
            pytest.fail(f"the watcher ended ({proc.returncode}) before {what}: {err[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"not within {DEADLINE:.0f} s: {what}")
        time.sleep(0.2)


def bucket_tree(s3, bucket: str, prefix: str = "") -> dict[str, bytes] | None:
    """The objects under prefix, or None when one changed or went away between the listing and its
    GET (the watcher is writing or deleting it): not equal to anything yet."""
    import botocore.exceptions

    try:
        return _bucket_tree(s3, bucket, prefix)
    except (s3.exceptions.NoSuchKey, botocore.exceptions.ResponseStreamingError):
        return None


def kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def stop(proc: subprocess.Popen, out: Path) -> str:
    """SIGTERM, as a service manager stops it: exit 0 and a line saying it stopped."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    finally:
        kill_group(proc)
    err = out.with_suffix(".err").read_text()
    assert proc.returncode == 0, err
    assert "watch stopped by SIGTERM" in err and "Traceback" not in err, err
    return err


def test_local_directory_mirrored_as_it_changes(s3, bucket, endpoint, tmp_path):
    src = tmp_path / "src"
    write_tree(src, {"keep.txt": b"kept", "old.txt": b"old", "dir/a.txt": b"a", "dir/sub/b.txt": b"bb"})
    proc, out = start_watch(tmp_path, endpoint, str(src), f"s3://{bucket}/m/", "--delete")
    try:
        wait_for("the first full sync", lambda: bucket_tree(s3, bucket, "m/") == read_tree(src), proc, out)
        (src / "new.txt").write_bytes(b"created")                    # a create
        (src / "keep.txt").write_bytes(b"kept, and then rewritten")  # an overwrite
        (src / "old.txt").unlink()                                   # a delete
        (src / "dir" / "a.txt").rename(src / "dir" / "a2.txt")       # a rename
        (src / "dir" / "sub").rename(src / "moved")                  # a directory renamed: one event
        # a file another program is still writing: copied once, whole, when it stops changing
        with open(src / "slow.bin", "wb") as f:
            for i in range(12):
                f.write(bytes([i]) * 4096)
                f.flush()
                time.sleep(0.05)
        wait_for("DST equal to SRC after the changes", lambda: bucket_tree(s3, bucket, "m/") == read_tree(src),
                 proc, out)
        wait_for("a watch status line", lambda: any(e["event"] == "watch" and e["handled"] >= 6
                                                    for e in events(out)), proc, out)
        stop(proc, out)  # every event written by then
    finally:
        kill_group(proc)
    slow = [e for e in events(out) if e["event"] == "copied" and e["src"].endswith("slow.bin")]
    assert [e["size"] for e in slow] == [12 * 4096], "copied before it was complete"
    summary = [e for e in events(out) if e["event"] == "summary"][-1]
    assert summary["failed"] == 0 and summary["fatal"] is None


def test_sigkill_then_restart_misses_nothing_and_copies_nothing_twice(s3, bucket, endpoint, tmp_path):
    src = tmp_path / "src"
    write_tree(src, {f"f{i:02d}": b"x" * i for i in range(20)})
    args = (str(src), f"s3://{bucket}/", "--delete")
    proc, out = start_watch(tmp_path, endpoint, *args)
    try:
        wait_for("the first full sync", lambda: bucket_tree(s3, bucket) == read_tree(src), proc, out)
        (src / "during.txt").write_bytes(b"while watched")
        wait_for("a change while watched", lambda: bucket_tree(s3, bucket) == read_tree(src), proc, out)
    finally:
        kill_group(proc)  # SIGKILL: no chance to clean up
    # changed while nothing watched
    (src / "f03").write_bytes(b"rewritten while down")
    (src / "f04").unlink()
    (src / "down.txt").write_bytes(b"created while down")
    proc, out = start_watch(tmp_path, endpoint, *args)  # the same command again
    try:
        wait_for("DST equal to SRC after the restart", lambda: bucket_tree(s3, bucket) == read_tree(src), proc, out)
        (src / "after.txt").write_bytes(b"and it goes on watching")
        wait_for("a change after the restart", lambda: bucket_tree(s3, bucket) == read_tree(src), proc, out)
        stop(proc, out)  # every event written by then
    finally:
        kill_group(proc)
    copied = sorted(e["src"].rsplit("/", 1)[1] for e in events(out) if e["event"] == "copied")
    assert copied == ["after.txt", "down.txt", "f03"], "only what changed is copied"


def test_s3_source_relisted_at_the_interval(s3, make_bucket, endpoint, tmp_path):
    src_bucket = make_bucket()
    put_tree(s3, src_bucket, {"p/a": b"a", "p/b": b"bb", "other/x": b"not under the prefix"})
    dst = tmp_path / "dst"
    proc, out = start_watch(tmp_path, endpoint, f"s3://{src_bucket}/p/", str(dst), "--delete",
                            "--watch-interval", "1s", "--allow-empty-source")
    try:
        wait_for("the first full sync", lambda: dst.exists() and read_tree(dst) == bucket_tree(s3, src_bucket, "p/"),
                 proc, out)
        s3.put_object(Bucket=src_bucket, Key="p/c", Body=b"created")
        s3.put_object(Bucket=src_bucket, Key="p/b", Body=b"overwritten, longer")
        s3.delete_object(Bucket=src_bucket, Key="p/a")
        wait_for("DST equal to SRC", lambda: read_tree(dst) == bucket_tree(s3, src_bucket, "p/"), proc, out)
        # SRC emptied: a sync would refuse an empty prefix as a typo, and sync --delete an empty SRC
        # (--allow-empty-source says it is meant)
        for key in ("p/b", "p/c"):
            s3.delete_object(Bucket=src_bucket, Key=key)
        wait_for("DST emptied", lambda: read_tree(dst) == {}, proc, out)
        stop(proc, out)
    finally:
        kill_group(proc)


def test_watch_options_need_watch(cli, tmp_path):
    r = cli("sync", str(tmp_path), str(tmp_path / "out"), "--watch-interval", "5s")
    assert r.code == 2 and "go with --watch" in r.err and "Traceback" not in r.err, r
    r = cli("sync", str(tmp_path), str(tmp_path / "out"), "--watch", "--dry-run")
    assert r.code == 2 and "--dry-run" in r.err and "Traceback" not in r.err, r


@pytest.mark.unit
def test_api_watch_stops_on_its_handle(tmp_path):
    import s3bulk

    src, dst = tmp_path / "src", tmp_path / "dst"
    write_tree(src, {"a": b"a"})
    stop_event = threading.Event()
    seen: list[s3bulk.Event] = []

    class Recorder(s3bulk.Subscriber):
        def notify(self, event: s3bulk.Event) -> None:
            seen.append(event)

    result: list[s3bulk.Summary] = []
    t = threading.Thread(target=lambda: result.append(
        s3bulk.watch(str(src), str(dst), delete=True, stop=stop_event, subscriber=Recorder())))
    t.start()
    try:
        wait_for("the first sync", lambda: dst.exists() and read_tree(dst) == read_tree(src))
        (src / "b").write_bytes(b"bb")
        (src / "a").unlink()
        wait_for("DST equal to SRC", lambda: read_tree(dst) == read_tree(src))
        wait_for("a WatchStatus", lambda: any(isinstance(e, s3bulk.WatchStatus) and e.handled >= 3 for e in seen))
    finally:
        stop_event.set()
        t.join(timeout=60)
    assert not t.is_alive() and result and result[0].interrupted
    assert any(isinstance(e, s3bulk.Deleted) and e.url.endswith("a") for e in seen)


def test_reconcile_catches_what_no_event_said(endpoint, tmp_path):
    """A change no event reports (here: DST altered behind the watcher's back) is undone by the next
    full sync, every --reconcile-every."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    write_tree(src, {"a": b"a", "b": b"bb"})
    proc, out = start_watch(tmp_path, endpoint, str(src), str(dst), "--delete", "--reconcile-every", "1s")
    try:
        wait_for("the first full sync", lambda: dst.exists() and read_tree(dst) == read_tree(src), proc, out)
        (dst / "a").unlink()
        (dst / "stray").write_bytes(b"not in SRC")
        wait_for("DST reconciled", lambda: read_tree(dst) == read_tree(src), proc, out)
        stop(proc, out)
    finally:
        kill_group(proc)


@pytest.mark.unit
def test_a_burst_beyond_the_feed_bound_becomes_one_full_sync(tmp_path):
    """More changed keys than the local feed keeps: it stops recording them (memory stays bounded)
    and says a full sync is needed, instead of growing without limit."""
    import asyncio

    from s3bulk.engine.watch.local_feed import LocalFeed

    async def burst() -> tuple[bool, int | None, bool]:
        feed = await LocalFeed.open(str(tmp_path), settle=0.2, max_pending=50)
        try:
            for i in range(300):
                (tmp_path / f"f{i:03d}").write_bytes(b"x")
            deadline = time.monotonic() + DEADLINE
            while not feed._overflowed and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            depth = await feed.depth()
            return feed.needs_full_sync(), depth, feed.needs_full_sync()
        finally:
            await feed.aclose()

    overflowed, depth, again = asyncio.run(burst())
    assert overflowed and depth is not None and depth <= 50 and not again


def test_s3_source_from_its_queue_through_a_sigkill(s3, make_bucket, endpoint, tmp_path):
    """An S3 SRC mirrored to disk from its bucket's notifications in SQS: creates, overwrites,
    deletes, a stale event sent by hand (it must not undo the newer state), a SIGKILL with changes
    made while nothing watched (their messages wait in the queue), the same command again."""
    import uuid

    import botocore.session

    sqs = botocore.session.get_session().create_client("sqs", endpoint_url=endpoint, region_name="us-east-1")
    src_bucket = make_bucket()
    name = f"w-{uuid.uuid4().hex[:16]}"
    queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    s3.put_bucket_notification_configuration(Bucket=src_bucket, NotificationConfiguration={"QueueConfigurations": [
        {"QueueArn": arn, "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]}]})
    put_tree(s3, src_bucket, {"p/a": b"a", "p/b": b"bb"})
    dst = tmp_path / "dst"
    args = (f"s3://{src_bucket}/p/", str(dst), "--delete", "--watch-queue", queue_url)
    try:
        proc, out = start_watch(tmp_path, endpoint, *args)
        try:
            wait_for("the first full sync",
                     lambda: dst.exists() and read_tree(dst) == bucket_tree(s3, src_bucket, "p/"), proc, out)
            s3.put_object(Bucket=src_bucket, Key="p/c", Body=b"created")
            s3.put_object(Bucket=src_bucket, Key="p/b", Body=b"overwritten, longer")
            s3.delete_object(Bucket=src_bucket, Key="p/a")
            s3.put_object(Bucket=src_bucket, Key="elsewhere/x", Body=b"outside SRC's prefix")
            wait_for("DST equal to SRC", lambda: read_tree(dst) == bucket_tree(s3, src_bucket, "p/"), proc, out)
            # a late, repeated removal of a key that exists again: it must stay
            stale = {"Records": [{"eventVersion": "2.1", "eventSource": "aws:s3", "eventName": "ObjectRemoved:Delete",
                                  "s3": {"bucket": {"name": src_bucket},
                                         "object": {"key": "p/c", "sequencer": "0000000000000000"}}}]}
            sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(stale))
            s3.put_object(Bucket=src_bucket, Key="p/d", Body=b"after the stale event")
            wait_for("the change after the stale event", lambda: (dst / "d").exists(), proc, out)
            assert read_tree(dst) == bucket_tree(s3, src_bucket, "p/")
        finally:
            kill_group(proc)  # SIGKILL
        s3.put_object(Bucket=src_bucket, Key="p/e", Body=b"created while down")
        s3.delete_object(Bucket=src_bucket, Key="p/b")
        proc, out = start_watch(tmp_path, endpoint, *args)  # the same command again
        try:
            wait_for("DST equal to SRC after the restart",
                     lambda: dst.exists() and read_tree(dst) == bucket_tree(s3, src_bucket, "p/"), proc, out)
            stop(proc, out)
        finally:
            kill_group(proc)
    finally:
        sqs.delete_queue(QueueUrl=queue_url)


def test_watch_serves_its_lag_and_changes_on_metrics(s3, bucket, endpoint, tmp_path):
    """`sync --watch --metrics`: a scraper sees the changes handled rise and the lag come back to 0."""
    import re
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    def scrape(url: str) -> dict[str, float]:
        with urllib.request.urlopen(url, timeout=30) as resp:
            text = resp.read().decode()
        return {s.name + (str(sorted(s.labels.items())) if s.labels else ""): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    src = tmp_path / "src"
    write_tree(src, {"a.txt": b"a"})
    proc, out = start_watch(tmp_path, endpoint, str(src), f"s3://{bucket}/w/", "--metrics", "127.0.0.1:0")
    try:
        err = out.with_suffix(".err")
        url: list[str] = []

        def served() -> bool:
            url[:] = re.findall(r"metrics at (http://\S+)", err.read_text())
            return bool(url)

        wait_for("the metrics URL on stderr", served, proc, out)
        wait_for("the first full sync", lambda: bucket_tree(s3, bucket, "w/") == read_tree(src), proc, out)
        (src / "b.txt").write_bytes(b"bb")
        wait_for("the change at DST", lambda: bucket_tree(s3, bucket, "w/") == read_tree(src), proc, out)
        wait_for("the change counted on /metrics, the lag back to 0",
                 lambda: (lambda m: m.get("s3bulk_watch_changes_handled_total", 0) >= 1
                          and m.get("s3bulk_watch_lag_seconds") == 0.0)(scrape(url[0])), proc, out)
        stop(proc, out)
    finally:
        kill_group(proc)
