"""--no-clobber, --update, dry runs and caps as engine logic, on the in-memory store through the
Python API (its keywords) and the transfer itself: the HEAD fallback for a destination that does
not declare conditional writes, and a capped run resumed to the end (engine/transfer/guards.py,
engine/run/caps.py)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

import s3bulk
from s3bulk.config.urls import parse_location
from s3bulk.engine.plan import KeyMap, TransferOptions
from s3bulk.engine.transfer.one_object import ByteBudget, Transfer
from s3bulk.stores import memory, open_store
from s3bulk.errors import DestinationExists

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

MiB = 1024 * 1024
OPTS = TransferOptions(workers=1, concurrency=4, retries=0)


@pytest.fixture
def buckets(memory_buckets):
    return memory_buckets  # conftest.py's


def test_api_no_clobber_update_and_dry_run(buckets, capsys):
    (s, sb), (d, db) = buckets(), buckets()
    for k in ("a", "b", "c"):
        sb.put(f"src/{k}", b"ours " + k.encode(), mtime=1000.0)
    db.put("out/a", b"theirs a", mtime=500.0)   # older than the source
    db.put("out/b", b"theirs b", mtime=2000.0)  # newer

    dry = s3bulk.copy(f"memory://{s}/src/", f"memory://{d}/out/", options=OPTS, dry_run=True)
    assert dry.dry_run and dry.counters.done == 3 and db.contents("out/") == {"a": b"theirs a", "b": b"theirs b"}
    assert capsys.readouterr().out == "", "a library call prints nothing (a subscriber's on_dry_run gets each)"

    updated = s3bulk.copy(f"memory://{s}/src/", f"memory://{d}/out/", options=OPTS, update=True)
    assert updated.ok and updated.counters.kept == 1
    assert db.contents("out/") == {"a": b"ours a", "b": b"theirs b", "c": b"ours c"}

    db.put("out/c", b"theirs c")
    kept = s3bulk.copy(f"memory://{s}/src/", f"memory://{d}/out/", options=OPTS, no_clobber=True)
    assert kept.ok and kept.counters.kept == 3 and kept.counters.done == 0
    assert db.contents("out/") == {"a": b"ours a", "b": b"theirs b", "c": b"theirs c"}


def test_a_destination_without_conditional_writes_is_asked_with_a_head_first(buckets, monkeypatch):
    """A store that does not declare conditional_writes cannot refuse the write itself: the
    transfer looks for the key first. Here the memory store is made to ignore the condition; with
    its declaration left on, the object would be replaced (what the HEAD prevents)."""
    (s, sb), (d, db) = buckets(), buckets()
    sb.put("k", b"ours")
    db.put("k", b"theirs")
    monkeypatch.setattr(memory.MemoryStore, "_absent", lambda self, b, op, key: None)

    async def copy(declared: bool) -> None:
        src = await open_store(parse_location(f"memory://{s}/"), OPTS.store_options())
        dst = await open_store(parse_location(f"memory://{d}/"), OPTS.store_options())
        try:
            dst.features = dataclasses.replace(dst.features, conditional_writes=declared)
            t = Transfer(src, dst, KeyMap("", ""), dataclasses.replace(OPTS, no_clobber=True), ByteBudget(64 * MiB))
            await t.copy(await src.head("k"))
        finally:
            await src.close()
            await dst.close()

    with pytest.raises(DestinationExists):
        asyncio.run(copy(False))
    assert db.objects["k"].data == b"theirs"
    asyncio.run(copy(True))  # trusted to refuse it, and it does not: replaced
    assert db.objects["k"].data == b"ours"


def test_api_max_transfer_stops_and_resume_finishes(buckets, tmp_path):
    (s, sb), (d, db) = buckets(), buckets()
    objects = {f"src/k{i:02}": bytes([i]) * 1000 for i in range(40)}
    for k, v in objects.items():
        sb.put(k, v)
    journal = str(tmp_path / "j.sqlite")
    opts = dataclasses.replace(OPTS, concurrency=1, max_rps=20)
    first = s3bulk.copy(f"memory://{s}/src/", f"memory://{d}/out/", options=opts, max_transfer=5000,
                        journal=journal)
    assert first.capped == "max-transfer" and first.interrupted and not first.ok
    assert 5 <= first.counters.done < 40
    done = s3bulk.copy(f"memory://{s}/src/", f"memory://{d}/out/", options=opts, journal=journal, resume=True)
    assert done.ok and done.capped is None
    assert db.contents("out/") == {k[4:]: v for k, v in objects.items()}
