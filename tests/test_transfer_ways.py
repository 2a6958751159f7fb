"""The ways one object moves (engine/transfer/ways.py, in_parts.py), on the in-memory store: which
way a Transfer chooses for which object, and what its listener hears (engine/transfer/notes.py).
No server needed: these run in a second."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import pytest

from s3bulk.config.urls import parse_location
from s3bulk.engine.plan import KeyMap, TransferOptions
from s3bulk.engine.transfer.in_parts import InParts
from s3bulk.engine.transfer.notes import TransferListener, UploadBegun, UploadEnd, UploadNote
from s3bulk.engine.transfer.one_object import ByteBudget, Transfer
from s3bulk.engine.transfer.ways import ServerSide, Unsized, Whole
from s3bulk.model import ObjectInfo
from s3bulk.stores import open_store

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

MiB = 1024 * 1024
PART = 5 * MiB
OPTS = TransferOptions(workers=1, concurrency=8, multipart_threshold=PART, part_size=PART, retries=2)


@pytest.fixture
def bucket(memory_buckets):
    return memory_buckets  # conftest.py's


class Heard(TransferListener):
    def __init__(self) -> None:
        self.notes: list[UploadNote] = []
        self.part_bytes: list[int] = []

    def on_upload(self, note: UploadNote) -> None:
        self.notes.append(note)

    def on_part_bytes(self, n: int) -> None:
        self.part_bytes.append(n)


async def _transfer(src_url: str, dst_url: str, listener: TransferListener | None = None) -> Transfer:
    src = await open_store(parse_location(src_url), OPTS.store_options())
    dst = await open_store(parse_location(dst_url), OPTS.store_options())
    return Transfer(src, dst, KeyMap("", ""), OPTS, ByteBudget(64 * MiB), listener=listener or Heard())


def _chosen(t: Transfer, info: ObjectInfo) -> type:
    return type(next(w for w in t.ways if w.applies(t.src, t.dst, info)))


def test_each_object_goes_the_first_way_that_applies(bucket):
    (s, _), (d, _) = bucket(), bucket()

    async def go() -> None:
        between = await _transfer(f"memory://{s}/", f"memory://{d}/")
        assert not between.server_side and not any(isinstance(w, ServerSide) for w in between.ways)
        assert _chosen(between, ObjectInfo("a", 10, None, "e")) is Whole
        assert _chosen(between, ObjectInfo("a", PART, None, "e")) is Whole
        assert _chosen(between, ObjectInfo("a", PART + 1, None, "e")) is InParts
        assert _chosen(between, ObjectInfo("a", None, None, None)) is Unsized
        within = await _transfer(f"memory://{s}/a/", f"memory://{s}/b/")
        assert within.server_side
        assert _chosen(within, ObjectInfo("a", 10, None, "e")) is ServerSide
        assert _chosen(within, ObjectInfo("a", 3 * PART, None, "e")) is ServerSide
        assert _chosen(within, ObjectInfo("a", None, None, None)) is Unsized

    asyncio.run(go())


def test_the_listener_hears_an_upload_by_name_and_its_parts_as_they_land(bucket):
    (s, sb), (d, db) = bucket(), bucket()
    data = hashlib.sha256(b"ways").digest() * ((2 * PART + 99) // 32)
    sb.put("big", data)
    heard = Heard()

    async def go() -> tuple[int, bool]:
        t = await _transfer(f"memory://{s}/", f"memory://{d}/", heard)
        return await t.copy(await t.src.head("big"))

    size, server_side = asyncio.run(go())
    assert (size, server_side) == (len(data), False) and db.objects["big"].data == data
    intent, begun, end = heard.notes
    # asked for (no id yet), begun, ended: read by name, and still the tuples the journal writes
    assert isinstance(intent, UploadBegun) and intent.upload_id is None and intent.part_size == PART
    assert isinstance(begun, UploadBegun) and begun.upload_id is not None and begun.src_size == len(data)
    assert isinstance(end, UploadEnd) and end == ("upload_end", "big", begun.upload_id)
    assert begun[:5] == ("upload", "big", begun.upload_id, len(data), PART)
    # bytes of parts as they land, taken back when the object ends: its size counts once, at the end
    assert sum(n for n in heard.part_bytes if n > 0) == len(data) and sum(heard.part_bytes) == 0


def test_a_small_object_is_one_read_and_one_put_with_nothing_to_hear(bucket):
    (s, sb), (d, db) = bucket(), bucket()
    sb.put("small", b"x" * 100)
    heard = Heard()

    async def go() -> Any:
        t = await _transfer(f"memory://{s}/", f"memory://{d}/", heard)
        return await t.copy(await t.src.head("small"))

    assert asyncio.run(go()) == (100, False)
    assert db.objects["small"].data == b"x" * 100 and heard.notes == [] and heard.part_bytes == []
