"""The Python API reaches what the command line reaches: copy and sync with filters, dry run and
delete, async variants inside a running event loop, options checked when built. On the in-memory
store (in-process, milliseconds) and on local directories."""

from __future__ import annotations

import asyncio

import pytest

import s3bulk
from s3bulk.engine.plan import TransferOptions
from s3bulk.errors import UsageError

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

ONE = TransferOptions(workers=1, concurrency=4)


@pytest.fixture
def two_buckets(two_memory_buckets):
    return two_memory_buckets  # conftest.py's


class DryRuns(s3bulk.Subscriber):
    """The dry run's planned actions, as ("dryrun", DryRunAction) pairs."""

    def __init__(self, into: list) -> None:
        self.into = into

    def on_dry_run(self, event: s3bulk.DryRunAction) -> None:
        self.into.append(("dryrun", event))


def test_sync_with_filters_delete_and_dry_run(two_buckets, capfd):
    s, sb, d, db = two_buckets
    for k in ("a.txt", "b.txt", "c.tmp", "sub/d.txt"):
        sb.put(f"src/{k}", k.encode())
    db.put("dst/old.txt", b"old")
    db.put("dst/keep.tmp", b"excluded from the sync, so not deleted")
    seen: list = []
    dry = s3bulk.sync(f"memory://{s}/src/", f"memory://{d}/dst/", delete=True, dry_run=True, exclude=["*.tmp"],
                      options=ONE, subscriber=DryRuns(seen))
    assert dry.ok and dry.dry_run
    # what it would do, as typed events for the caller (each with the command line's line), nothing printed
    planned = {(e.action, e.dst) for kind, e in seen if kind == "dryrun"}
    assert planned == {("copy", f"memory://{d}/dst/{k}") for k in ("a.txt", "b.txt", "sub/d.txt")} \
        | {("delete", f"memory://{d}/dst/old.txt")}
    lines = {e.line() for kind, e in seen if kind == "dryrun"}
    assert f"(dryrun) delete: memory://{d}/dst/old.txt" in lines
    assert f"(dryrun) copy: memory://{s}/src/a.txt -> memory://{d}/dst/a.txt" in lines
    assert capfd.readouterr().out == ""
    assert set(db.keys_after("dst/", None)) == {"dst/old.txt", "dst/keep.tmp"}, "a dry run changes nothing"
    summary = s3bulk.sync(f"memory://{s}/src/", f"memory://{d}/dst/", delete=True, exclude=["*.tmp"], options=ONE)
    assert summary.ok, summary
    assert set(db.keys_after("dst/", None)) == {"dst/a.txt", "dst/b.txt", "dst/sub/d.txt", "dst/keep.tmp"}
    assert summary.counters.deleted == 1 and summary.counters.done == 3
    again = s3bulk.sync(f"memory://{s}/src/", f"memory://{d}/dst/", delete=True, exclude=["*.tmp"], options=ONE)
    assert again.counters.done == 0 and again.counters.skipped == 3
    assert again.to_dict()["skipped"] == 3


def test_copy_async_inside_a_running_loop(two_buckets):
    s, sb, d, db = two_buckets
    for i in range(20):
        sb.put(f"k{i}", b"x" * i)

    async def main():
        return await s3bulk.copy_async(f"memory://{s}/", f"memory://{d}/", options=ONE, include=["k1*"], exclude=["k1"],
                                       filters=[("exclude", "*"), ("include", "k1*")])

    summary = asyncio.run(main())
    assert summary.ok
    assert set(db.keys_after("", None)) == {f"k1{i}" for i in range(10)} | {"k1"}


@pytest.mark.parametrize("bad", [dict(concurrency=0), dict(workers=-1), dict(part_size="1MiB"), dict(page_size=0),
                                 dict(part_size="lots"), dict(max_bandwidth=None)])
def test_bad_options_raise_usage_error_when_built(bad):
    with pytest.raises(UsageError):
        TransferOptions(**bad)


def test_sizes_as_strings_and_bad_api_arguments(two_buckets, tmp_path):
    assert TransferOptions(part_size="16MiB", max_bytes_in_flight="64MiB").part_size == 16 * 1024 * 1024
    s, sb, d, db = two_buckets
    sb.put("x", b"x")
    assert s3bulk.copy(f"memory://{s}/", f"memory://{d}/", options=ONE, max_memory="256MiB").ok
    with pytest.raises(UsageError):
        s3bulk.sync(f"memory://{s}/", f"memory://{d}/", compare="md5")
    with pytest.raises(UsageError):
        s3bulk.copy(f"memory://{s}/", f"memory://{d}/", include="x")
