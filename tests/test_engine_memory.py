"""The engine on the in-memory store, in-process (workers=1): planner, copy paths, sync decisions,
failures and multipart resume, each in a fraction of a second and without LocalStack. The
LocalStack tests stay for what only a real server and real processes can show."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from typing import Any

import pytest

import s3bulk
from s3bulk.engine.plan import KeyMap, TransferOptions
from s3bulk.engine.job import Job
from s3bulk.engine.planner import build_plan
from s3bulk.engine.run.launch import run_plan
from s3bulk.engine.events import DryRunAction
from s3bulk.engine.plan import SyncOptions
from s3bulk.engine.leftover_uploads import abort_uploads
from s3bulk.engine.transfer.notes import TransferListener
from s3bulk.engine.transfer.one_object import ByteBudget, ResumeTerms, Transfer
from s3bulk.errors import AccessDenied, NotFound
from s3bulk.config.filters import Filters
from s3bulk.model import ObjectInfo
from s3bulk.stores import memory, open_store
from s3bulk.config.urls import parse_location

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

MiB = 1024 * 1024
PART = 5 * MiB
OPTS = TransferOptions(workers=1, concurrency=8, multipart_threshold=PART, part_size=PART, retries=2)


@pytest.fixture
def buckets(memory_buckets):
    return memory_buckets  # conftest.py's


def big(n: int = 2 * PART + 1234) -> bytes:
    return hashlib.sha256(b"seed").digest() * (n // 32) + b"x" * (n % 32)


class DryRuns(s3bulk.Subscriber):
    """The dry run's planned actions, as ("dryrun", DryRunAction) pairs."""

    def __init__(self, into: list) -> None:
        self.into = into

    def on_dry_run(self, event: DryRunAction) -> None:
        self.into.append(("dryrun", event))


def run_sync(src: str, dst: str, options: TransferOptions = OPTS, subscriber: Any = None, **sync: Any):
    plan = asyncio.run(build_plan(Job("sync", src, dst, options=options, sync=SyncOptions(**sync))))
    return run_plan(plan, subscriber)


def test_copy_between_buckets_streams_small_objects_and_multiparts_big_ones(buckets):
    (s, sb), (d, db) = buckets(), buckets()
    objects = {f"src/k{i:03}": bytes([i]) * i for i in range(40)} | {"src/ü/😀": b"odd", "src/big": big()}
    for k, v in objects.items():
        sb.put(k, v)
    sb.put("other/not-copied", b"no")
    summary = s3bulk.copy(f"memory://{s}/src/", f"memory://{d}/out/", options=OPTS)
    assert summary.ok and summary.counters.done == len(objects) and summary.counters.server_side == 0
    assert db.contents("out/") == {k[4:]: v for k, v in objects.items()}
    # the big one went in 3 parts (its S3-style ETag says how many), the others whole
    assert db.objects["out/big"].etag.endswith("-3") and db.calls["upload part"] == 3
    assert db.objects["out/k005"].etag == hashlib.md5(objects["src/k005"]).hexdigest()
    assert not db.uploads


def test_copy_within_one_bucket_is_server_side_and_keeps_mtimes(buckets):
    s, sb = buckets()
    for i in range(10):
        sb.put(f"a/{i}", b"v" * i, mtime=1_000_000_000.0 + i)
    summary = s3bulk.copy(f"memory://{s}/a/", f"memory://{s}/b/", options=OPTS)
    assert summary.ok and summary.counters.server_side == 10
    assert {k: o.mtime for k, o in sb.objects.items() if k.startswith("b/")} == \
        {f"b/{i}": 1_000_000_000.0 + i for i in range(10)}


def test_missing_source_bucket_is_refused_before_any_work(buckets):
    d, _ = buckets()
    with pytest.raises(NotFound):
        s3bulk.copy(f"memory://never-made-{uuid.uuid4().hex[:8]}/x/", f"memory://{d}/", options=OPTS)


def test_failures_are_counted_per_object_and_transient_ones_retried(buckets):
    (s, sb), (d, db) = buckets(), buckets()
    for i in range(20):
        sb.put(f"k{i:02}", b"data")
    sb.inject("get", "k03", AccessDenied, times=-1)   # final: reported, not retried
    sb.inject("get", "k07", times=2)                  # transient: retried, then copied
    summary = s3bulk.copy(f"memory://{s}/", f"memory://{d}/", options=OPTS)
    assert not summary.ok and summary.counters.failed == 1 and summary.counters.done == 19
    assert [f.src for f in summary.failures] == [f"memory://{s}/k03"]
    assert "access" in summary.failures[0].kind.lower() or "injected" in summary.failures[0].error
    assert summary.counters.retries >= 2
    assert sorted(db.contents()) == [f"k{i:02}" for i in range(20) if i != 3]


def test_include_exclude_filters(buckets):
    (s, sb), (d, db) = buckets(), buckets()
    for k in ("a.txt", "b.tmp", "dir/c.txt", "dir/keep.tmp"):
        sb.put(k, k.encode())
    plan = asyncio.run(build_plan(Job("copy", f"memory://{s}/", f"memory://{d}/", options=OPTS,
                                      filters=Filters(((False, "*.tmp"), (True, "dir/keep*"))))))
    summary = run_plan(plan)
    assert summary.ok and sorted(db.contents()) == ["a.txt", "dir/c.txt", "dir/keep.tmp"]


def _sync_fixture(buckets):
    (s, sb), (d, db) = buckets(), buckets()
    t = 1_000_000_000.0
    sb.put("same", b"1234", t)
    db.put("same", b"1234", t)
    sb.put("resized", b"longer", t)
    db.put("resized", b"short", t)
    sb.put("newer", b"abcd", t + 100)      # same size, source newer
    db.put("newer", b"wxyz", t)
    sb.put("older", b"abcd", t)            # same size, source older: default leaves it
    db.put("older", b"wxyz", t + 100)
    sb.put("missing", b"new")
    db.put("extra", b"dst only")
    return s, sb, d, db


def test_sync_copies_what_differs_and_deletes_what_only_dst_has(buckets):
    s, sb, d, db = _sync_fixture(buckets)
    kept = {k: db.objects[k] for k in ("same", "older")}
    summary = run_sync(f"memory://{s}/", f"memory://{d}/", delete=True)
    assert summary.ok
    c = summary.counters
    assert (c.done, c.skipped, c.deleted) == (3, 2, 1)
    assert db.contents() == {"same": b"1234", "resized": b"longer", "newer": b"abcd", "older": b"wxyz",
                             "missing": b"new"}
    assert all(db.objects[k] is o for k, o in kept.items())  # equal ones were not rewritten


def test_a_bug_inside_a_unit_ends_the_run_with_one_error_instead_of_hanging(buckets, monkeypatch):
    """An unexpected exception in a worker's unit (here: the comparator) used to be a task exception
    nobody retrieved: the unit never reported back and the run waited forever."""
    from s3bulk.engine.sync.march import Comparator

    async def broken(self, s, d):
        raise IsADirectoryError(21, "Is a directory")

    def broken_now(self, s, d):
        raise IsADirectoryError(21, "Is a directory")

    monkeypatch.setattr(Comparator, "differs_now", broken_now)  # the worker's first, request-free look
    monkeypatch.setattr(Comparator, "differs_later", broken)  # what it leaves to a request
    s, sb, d, db = _sync_fixture(buckets)
    summary = run_sync(f"memory://{s}/", f"memory://{d}/")
    assert not summary.ok and summary.fatal and "internal error" in summary.fatal, summary.fatal


def test_sync_size_only_and_exact_timestamps(buckets):
    s, sb, d, db = _sync_fixture(buckets)
    summary = run_sync(f"memory://{s}/", f"memory://{d}/", compare="size-only")
    assert (summary.counters.done, summary.counters.skipped) == (2, 3)  # resized, missing
    assert db.contents()["newer"] == b"wxyz" and "extra" in db.contents()
    s, sb, d, db = _sync_fixture(buckets)
    summary = run_sync(f"memory://{s}/", f"memory://{d}/", compare="exact-timestamps")
    assert (summary.counters.done, summary.counters.skipped) == (4, 1)  # all but "same"
    assert db.contents()["older"] == b"abcd"


def test_sync_dry_run_changes_nothing(buckets, capfd):
    """A dry run changes nothing and says what it would do as events for the subscriber (the
    engine itself prints nothing: the CLI and api.sync print the lines)."""
    s, sb, d, db = _sync_fixture(buckets)
    before = dict(db.objects)
    events: list[tuple[str, Any]] = []
    summary = run_sync(f"memory://{s}/", f"memory://{d}/", delete=True, dry_run=True,
                       subscriber=DryRuns(events))
    assert summary.ok and db.objects == before
    planned = sorted((e.action, e.src, e.dst) for kind, e in events if kind == "dryrun")
    assert ("copy", f"memory://{s}/missing", f"memory://{d}/missing") in planned
    assert ("delete", None, f"memory://{d}/extra") in planned
    assert not any(dst.endswith("/same") for _, _, dst in planned)
    assert all(isinstance(e, DryRunAction) for kind, e in events if kind == "dryrun")
    assert capfd.readouterr().out == ""


class _UploadNotes(TransferListener):
    def __init__(self, events: list) -> None:
        self.events = events

    def on_upload(self, note: Any) -> None:
        self.events.append(note)


async def _transfer(src_url: str, dst_url: str, resumable: dict[str, dict[str, Any]], events: list):
    src = await open_store(parse_location(src_url), OPTS.store_options())
    dst = await open_store(parse_location(dst_url), OPTS.store_options())
    try:
        t = Transfer(src, dst, KeyMap("", ""), OPTS, ByteBudget(64 * MiB), listener=_UploadNotes(events),
                     resume=ResumeTerms(resumable))
        info = await src.head("big")
        return await t.copy(info), info
    finally:
        await src.close()
        await dst.close()


def _left_open(db: memory.MemoryBucket, data: bytes, parts: int) -> str:
    """An upload of `big` a stopped run left open with its first `parts` parts."""
    store = memory.MemoryStore(parse_location(f"memory://{db.name}/"))

    async def go() -> str:
        upload = await store.start_multipart("big", len(data), PART)
        for n in range(1, parts + 1):
            await upload.put_part(n, (n - 1) * PART, data[(n - 1) * PART:n * PART])
        return upload.upload_id

    return asyncio.run(go())


def _row(upload_id: str, data: bytes, info: ObjectInfo | None, **changes: Any) -> dict[str, Any]:
    row = {"dst_key": "big", "upload_id": upload_id, "size": len(data), "part_size": PART,
           "src_size": len(data), "src_mtime": info.mtime if info else None, "src_etag": info.etag if info else None}
    return row | changes


def test_multipart_resume_sends_only_the_missing_parts(buckets):
    (s, sb), (d, db) = buckets(), buckets()
    data = big()
    sb.put("big", data)
    upload_id = _left_open(db, data, 2)
    sent_before = db.calls["upload part"]
    events: list = []
    src_info = ObjectInfo("big", len(data), sb.objects["big"].mtime, sb.objects["big"].etag)
    (size, server_side), _ = asyncio.run(_transfer(f"memory://{s}/", f"memory://{d}/",
                                                   {"big": _row(upload_id, data, src_info)}, events))
    assert size == len(data) and not server_side
    assert db.objects["big"].data == data and db.calls["upload part"] - sent_before == 1
    assert ("upload_end", "big", upload_id) in events and not db.uploads


def test_multipart_of_a_changed_source_is_aborted_and_redone(buckets):
    (s, sb), (d, db) = buckets(), buckets()
    data = big()
    sb.put("big", data)
    upload_id = _left_open(db, data, 2)
    sent_before = db.calls["upload part"]
    events: list = []
    stale = _row(upload_id, data, None, src_etag="not-the-same-etag", src_mtime=None)
    asyncio.run(_transfer(f"memory://{s}/", f"memory://{d}/", {"big": stale}, events))
    assert db.objects["big"].data == data and db.calls["upload part"] - sent_before == 3
    assert events[0] == ("upload_end", "big", upload_id) and not db.uploads


def test_abort_uploads_a_journal_recorded(buckets):
    d, db = buckets()
    data = big()
    ids = [_left_open(db, data, 1) for _ in range(2)]
    asyncio.run(abort_uploads(parse_location(f"memory://{d}/"), OPTS,
                              [{"dst_key": "big", "upload_id": i} for i in ids + ["already-gone"]]))
    assert not db.uploads
