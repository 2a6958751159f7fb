"""The engine's decisions a user relies on, on the in-memory store through the Python API, where
before only a LocalStack test (through the command line) showed them: sync --delete's deferred
deletes and its guards (engine/run/deletes.py), the transfer caps at the end of a run and in a
dry run (engine/run/caps.py), filters sparing DST keys from --delete (engine/sync/march.py), mv
keeping the source of a failed copy, sync's checksum comparison and the --report rows
(engine/report.py). Each runs in-process in a fraction of a second."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import s3bulk
from s3bulk import TransferOptions
from s3bulk.errors import AccessDenied, UsageError
from s3bulk.stores import memory

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

ONE = TransferOptions(workers=1, concurrency=4, retries=1)
T = 1_000_000_000.0  # an mtime in the past, the same at both sides unless a test says otherwise


@pytest.fixture
def two(two_memory_buckets):
    return two_memory_buckets  # conftest.py's


def url(name: str) -> str:
    return f"memory://{name}/"


def test_a_sync_with_a_failed_copy_deletes_nothing_at_dst(two):
    """A source entry that cannot be read must not cost its DST copy, nor any other, even in
    another work unit: a run with a failure is no mirror to delete against (deletes wait for every
    copy, and are dropped with a notice)."""
    s, sb, d, db = two
    for i in range(60):
        sb.put(f"k{i:03}", b"new", T + 10)
    db.put("k005", b"old", T)
    db.put("z-only-at-dst", b"x", T)  # in a later unit than the failure (pages of 10)
    sb.inject("get", "k005", AccessDenied, times=-1)
    seen: list[str] = []

    class Notices(s3bulk.Subscriber):
        def on_notice(self, event: s3bulk.Notice) -> None:
            seen.append(event.message)

    opts = TransferOptions(workers=1, concurrency=4, page_size=10, retries=1)
    summary = s3bulk.sync(url(s), url(d), delete=True, options=opts, subscriber=Notices())
    assert not summary.ok and summary.counters.failed == 1 and summary.counters.deleted == 0
    assert db.contents()["k005"] == b"old" and db.contents()["z-only-at-dst"] == b"x"
    assert len(db.contents()) == 61
    assert any("1 deletes not done: 1 objects failed" in m for m in seen), seen


def test_deletes_come_after_every_copy_of_the_run(two, monkeypatch):
    """The first delete at DST is sent after the last object landed there, not as each unit's
    march finds the keys (what --delete-during does)."""
    s, sb, d, db = two
    for i in range(60):
        sb.put(f"k{i:03}", b"s", T + 10)
        db.put(f"k{i:03}x", b"d", T)  # only at DST, interleaved with what is copied
    order: list[str] = []
    check = memory.MemoryBucket._check

    def logged(self, op, key, where):
        if self is db and op in ("put", "delete"):
            order.append(op)
        return check(self, op, key, where)

    monkeypatch.setattr(memory.MemoryBucket, "_check", logged)
    opts = TransferOptions(workers=1, concurrency=4, page_size=10)
    summary = s3bulk.sync(url(s), url(d), delete=True, options=opts)
    assert summary.ok and (summary.counters.done, summary.counters.deleted) == (60, 60)
    assert "delete" in order and order.index("delete") > len(order) - 1 - order[::-1].index("put"), order
    assert sorted(db.contents()) == [f"k{i:03}" for i in range(60)]


def test_an_empty_source_deletes_nothing_unless_allowed(two):
    """An empty SRC (an unmounted disk, a mistyped prefix) would make sync --delete empty DST: it is
    refused with a usage error and DST stays whole, unless allow_empty_source says it is meant."""
    s, sb, d, db = two
    for i in range(3):
        db.put(f"x{i}", b"x")
    with pytest.raises(UsageError, match="lists no objects"):
        s3bulk.sync(url(s) + "nothing/", url(d), delete=True, options=ONE)
    assert len(db.contents()) == 3
    summary = s3bulk.sync(url(s) + "nothing/", url(d), delete=True, allow_empty_source=True, options=ONE)
    assert summary.ok and summary.counters.deleted == 3 and db.contents() == {}


def test_max_delete_percent_and_size_are_measured_on_the_whole_run(two):
    """--max-delete P% counts against what DST holds, --max-delete-size against the bytes to delete,
    both over the whole run: over either, nothing at all is deleted."""
    from s3bulk.errors import TooManyDeletes

    s, sb, d, db = two
    sb.put("keep", b"k", T)
    db.put("keep", b"k", T)
    for i in range(3):
        db.put(f"x{i}", b"x" * 100)  # 3 of DST's 4 objects only at DST: 75%, 300 bytes
    for caps in ({"max_delete": "50%"}, {"max_delete_size": "299"}):
        summary = s3bulk.sync(url(s), url(d), delete=True, options=ONE, **caps)
        assert summary.fatal_code == TooManyDeletes.exit_code and not summary.ok, caps
        assert len(db.contents()) == 4, caps
    summary = s3bulk.sync(url(s), url(d), delete=True, options=ONE, max_delete="75%", max_delete_size="300")
    assert summary.ok and summary.counters.deleted == 3 and db.contents() == {"keep": b"k"}


def test_sync_delete_spares_what_the_filters_leave_out(two):
    """A DST key an --exclude (or a missing --include) leaves out is outside the sync: not deleted."""
    s, sb, d, db = two
    sb.put("a.txt", b"a", T)
    for k in ("gone.txt", "notes.tmp", "dir/cache.tmp"):
        db.put(k, b"d", T)
    summary = s3bulk.sync(url(s), url(d), delete=True, exclude=["*.tmp"], options=ONE)
    assert summary.ok and summary.counters.deleted == 1
    assert sorted(db.contents()) == ["a.txt", "dir/cache.tmp", "notes.tmp"]


def test_a_cap_reached_by_the_last_object_is_no_stop_and_a_dry_run_is_never_capped(two):
    """--max-transfer stops a run only when work is left: one reached by the run's last object
    leaves nothing to resume (ok, not capped); a dry run moves nothing, so no cap applies to it."""
    s, sb, d, db = two
    for i in range(50):
        sb.put(f"k{i:02}", b"x" * 1000)
    paged = TransferOptions(workers=1, concurrency=4, page_size=10)  # work units left after the first
    summary = s3bulk.copy(url(s), url(d), dry_run=True, max_transfer="1KiB", options=paged)
    assert summary.ok and summary.capped is None and summary.counters.done == 50 and db.contents() == {}
    sb2 = f"d-{uuid.uuid4().hex[:12]}"
    try:
        memory.bucket(sb2).put("only", b"x" * 100)
        summary = s3bulk.copy(url(sb2), url(d), max_transfer=1, options=ONE)
        assert summary.ok and summary.capped is None and not summary.interrupted and summary.counters.done == 1
    finally:
        memory.drop(sb2)


def test_mv_deletes_only_the_sources_whose_copy_landed(two):
    """mv removes a source object once its copy is at DST; one whose copy failed stays where it was."""
    s, sb, d, db = two
    for k in ("a", "b", "c"):
        sb.put(k, k.encode())
    db.inject("put", "b", AccessDenied, times=-1)
    summary = s3bulk.move(url(s), url(d), options=ONE)
    assert not summary.ok and summary.counters.failed == 1
    assert sb.contents() == {"b": b"b"} and db.contents() == {"a": b"a", "c": b"c"}


def test_checksum_compare_catches_a_change_that_keeps_size_and_mtime(two):
    """Same size, same mtime, other bytes: the default comparison skips it, compare="checksum"
    copies it (and only it)."""
    s, sb, d, db = two
    sb.put("same", b"1234", T)
    db.put("same", b"1234", T)
    sb.put("changed", b"abcd", T)
    db.put("changed", b"wxyz", T)
    summary = s3bulk.sync(url(s), url(d), options=ONE)
    assert summary.ok and (summary.counters.done, summary.counters.skipped) == (0, 2)
    summary = s3bulk.sync(url(s), url(d), compare="checksum", options=ONE)
    assert summary.ok and (summary.counters.done, summary.counters.skipped) == (1, 1)
    assert db.contents() == {"same": b"1234", "changed": b"abcd"}


def test_a_sync_report_has_a_row_per_object_naming_what_happened(two, tmp_path: Path):
    """--report FILE.jsonl: one row for every object the sync looked at, copied, skipped or deleted,
    with its source, destination and size."""
    from s3bulk.engine.report import read_rows

    s, sb, d, db = two
    sb.put("new", b"12345", T)
    sb.put("same", b"12", T)
    db.put("same", b"12", T)
    db.put("old", b"1", T)
    report = tmp_path / "rows.jsonl"
    summary = s3bulk.sync(url(s), url(d), delete=True, report=str(report), options=ONE)
    assert summary.ok
    rows = {(r["outcome"], r["dst"]): r for r in read_rows(str(report))}
    assert set(rows) == {("copied", url(d) + "new"), ("skipped", url(d) + "same"), ("deleted", url(d) + "old")}
    copied = rows[("copied", url(d) + "new")]
    assert copied["src"] == url(s) + "new" and int(copied["size"]) == 5 and not copied["error"]
