"""Every request of one object names the ETag the run listed, as an argument (stores/conditions.py).

On the in-memory store, no server: the ways of engine/transfer/ways.py and in_parts.py pass the
listed ETag to each ranged get (GetOptions.if_match) and to a server-side copy
(copy_from(if_match=)), never through a context variable, and an object changed since it was
listed is started over once, whichever way it goes. The same against real servers, with the
object overwritten in the middle of its reads: test_torn_reads.py."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import pytest

from s3bulk.config.urls import parse_location
from s3bulk.engine.plan import KeyMap, TransferOptions
from s3bulk.engine.transfer.notes import TransferListener
from s3bulk.engine.transfer.one_object import ByteBudget, Transfer
from s3bulk.model import ObjectInfo
from s3bulk.stores import memory

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)
from s3bulk.stores.base import WHOLE, GetOptions, GetResult, Store

MiB = 1024 * 1024
PART = 5 * MiB
OPTS = TransferOptions(workers=1, concurrency=8, multipart_threshold=PART, part_size=PART, retries=2)


class Recording(memory.MemoryStore):
    """The in-memory store, noting what each get and copy_from was held to."""

    def __init__(self, url: str) -> None:
        super().__init__(parse_location(url))
        self.gets: list[GetOptions] = []
        self.copies: list[str | None] = []

    async def get(self, key: str, opts: GetOptions = WHOLE) -> GetResult:
        self.gets.append(opts)
        return await super().get(key, opts)

    async def copy_from(self, src: Store, src_key: str, dst_key: str, size: int, mtime: float | None = None, *,
                        props: object = None, replace: bool = False, if_match: str | None = None) -> None:
        self.copies.append(if_match)
        await super().copy_from(src, src_key, dst_key, size, mtime, props=props, replace=replace, if_match=if_match)


class Restarts(TransferListener):
    def __init__(self) -> None:
        self.keys: list[str] = []

    def on_restarted(self, key: str, why: str) -> None:
        self.keys.append(key)


@pytest.fixture
def bucket(memory_buckets):
    return memory_buckets  # conftest.py's


def _data(size: int) -> bytes:
    return (hashlib.sha256(b"held").digest() * (size // 32 + 1))[:size]


def _copy(src: Store, dst: Store, info: ObjectInfo, keymap: KeyMap, listener: TransferListener | None = None) -> Any:
    t = Transfer(src, dst, keymap, OPTS, ByteBudget(64 * MiB), listener=listener or Restarts())
    return asyncio.run(t.copy(info))


def test_every_range_of_an_object_in_parts_names_the_listed_etag(bucket):
    (s, sb), (d, db) = bucket(), bucket()
    data = _data(2 * PART + 99)
    sb.put("big", data)
    src = Recording(f"memory://{s}/")
    info = asyncio.run(src.head("big"))
    assert _copy(src, Recording(f"memory://{d}/"), info, KeyMap("", "")) == (len(data), False)
    assert db.objects["big"].data == data
    ranges = [opts for opts in src.gets if opts.range is not None]
    assert len(ranges) == 3 and {opts.if_match for opts in ranges} == {info.etag}


def test_a_server_side_copy_names_the_listed_etag(bucket):
    s, sb = bucket()
    sb.put("a/obj", _data(1000))
    store = Recording(f"memory://{s}/")
    info = asyncio.run(store.head("a/obj"))
    assert _copy(store, store, info, KeyMap("a/", "b/")) == (1000, True)
    assert store.copies == [info.etag] and store.gets == []
    assert sb.objects["b/obj"].data == _data(1000)


@pytest.mark.parametrize("size,within", [(1000, False), (2 * PART + 99, False), (1000, True)],
                         ids=["whole", "in-parts", "server-side"])
def test_an_object_changed_since_it_was_listed_starts_over_once_and_lands_whole(bucket, size, within):
    (s, sb), (d, db) = bucket(), bucket()
    data = _data(size)
    sb.put("a/obj", data)
    src = Recording(f"memory://{s}/")
    dst = src if within else Recording(f"memory://{d}/")
    heard = Restarts()
    listed = ObjectInfo("a/obj", size, None, "not-its-etag")  # the version a listing saw, replaced since
    assert _copy(src, dst, listed, KeyMap("a/", "b/"), heard) == (size, within)
    assert heard.keys == ["a/obj"]
    assert (sb if within else db).objects["b/obj"].data == data
