"""Ordered listing with pages spilled to disk (engine/listing/split.py + engine/listing/spill.py), on the in-memory
store: whatever the keys (above U+FFFF, prefixes of others, empty ranges), the order listings
complete in and how small the in-memory budget is, every key comes out exactly once, in UTF-8 byte
order, pages listed ahead really go to disk, and no spill file is left behind, also when the
consumer stops early. Milliseconds, no clock."""

from __future__ import annotations

import asyncio
import os
import random
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from listing_rounds import RoundStore as Rounds  # noqa: E402  (each request takes one round)

from s3bulk.engine.listing.split import ListingLimits, list_in_order
from s3bulk.model import Page, WorkUnit
from s3bulk.stores import memory
from s3bulk.config.urls import parse_location

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

ALPHABET = ["a", "b", "z", "/", "-", "0", "9", "é", "\u00ff", "\u4e2d", "\U0001F600", "\U0010FFFD", "~", " "]


def random_keys(rng: random.Random, n: int, prefix: str) -> list[str]:
    keys: set[str] = set()
    while len(keys) < n:
        k = prefix + "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 10)))
        keys.add(k)
        if rng.random() < 0.3:  # keys that are prefixes of other keys
            keys.add(k + rng.choice(ALPHABET))
    return sorted(keys)


class Shuffled:
    """The memory store, with each listing finishing after a random number of loop turns: listings
    complete out of order, as over a network."""

    ordered = True

    def __init__(self, store: memory.MemoryStore, rng: random.Random) -> None:
        self.store, self.rng = store, rng
        self.requests = 0

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        self.requests += 1
        for _ in range(self.rng.randint(0, 6)):
            await asyncio.sleep(0)
        return await self.store.list_page(prefix, unit, limit)


@pytest.fixture
def bucket():
    name = f"spill-{uuid.uuid4().hex[:10]}"
    yield name, memory.bucket(name)
    memory.drop(name)


async def listed(store, prefix: str, tmp, **kw) -> tuple[list[str], int]:
    got: list[str] = []
    spilled = 0
    agen = list_in_order(store, prefix, ListingLimits(spill_dir=str(tmp), **kw))
    async for page in agen:
        got.extend(e.key for e in page)
        spilled = max(spilled, sum(len(files) for _, _, files in os.walk(tmp)))
    return got, spilled


@pytest.mark.parametrize("seed", range(40))
def test_spilled_ordered_listing_is_every_key_once_in_order(seed: int, bucket, tmp_path) -> None:
    rng = random.Random(seed)
    name, b = bucket
    prefix = rng.choice(["", "p/", "\U0001F600"])
    keys = random_keys(rng, rng.randint(0, 400), prefix)
    others = ["!before", "\U0010FFFF-after", prefix[:-1] + "\x00" if prefix else "\x00"]
    for k in keys + [o for o in others if not o.startswith(prefix) or not prefix]:
        b.put(k, b"x")
    want = sorted(k for k in b.objects if k.startswith(prefix))
    store = Shuffled(memory.MemoryStore(parse_location(f"memory://{name}/")), rng)
    got, spilled = asyncio.run(listed(store, prefix, tmp_path, page_size=rng.randint(1, 9),
                                      concurrency=rng.randint(2, 12), max_streams=rng.randint(2, 40),
                                      max_pages=rng.randint(0, 3), max_ranges=rng.randint(4, 200),
                                      spill_bytes=1 << 20))
    assert got == want  # str order is code point order is UTF-8 byte order
    assert os.listdir(tmp_path) == []  # the spill directory went with the listing


def test_pages_listed_ahead_go_to_disk_and_memory_stays_bounded(bucket, tmp_path) -> None:
    name, b = bucket
    keys = [f"k/{i:05d}" for i in range(3000)]
    for k in keys:
        b.put(k, b"x")
    store = Shuffled(memory.MemoryStore(parse_location(f"memory://{name}/")), random.Random(1))
    got, spilled = asyncio.run(listed(store, "k/", tmp_path, page_size=10, concurrency=16, max_pages=2,
                                      spill_bytes=1 << 30))
    assert got == keys
    assert spilled > 0  # ranges ahead of the output were written out, not held
    assert os.listdir(tmp_path) == []


def test_spill_files_go_when_the_consumer_stops_early(bucket, tmp_path) -> None:
    name, b = bucket
    for i in range(2000):
        b.put(f"{i:05d}", b"x")
    store = Shuffled(memory.MemoryStore(parse_location(f"memory://{name}/")), random.Random(2))

    async def first_pages() -> int:
        agen = list_in_order(store, "", ListingLimits(page_size=10, concurrency=16, max_pages=1, spill_bytes=1 << 30,
                                                      spill_dir=str(tmp_path)))
        n = 0
        async for _ in agen:
            n += 1
            if n == 30 and any(files for _, _, files in os.walk(tmp_path)):
                break
        await agen.aclose()
        return n

    assert asyncio.run(first_pages()) == 30
    assert os.listdir(tmp_path) == []


def test_without_room_on_disk_the_held_page_limit_still_bounds_memory(bucket, tmp_path) -> None:
    name, b = bucket
    keys = [f"{i:05d}" for i in range(1500)]
    for k in keys:
        b.put(k, b"x")
    store = Shuffled(memory.MemoryStore(parse_location(f"memory://{name}/")), random.Random(3))
    got, _ = asyncio.run(listed(store, "", tmp_path, page_size=10, concurrency=8, max_pages=2, spill_bytes=1))
    assert got == keys


def list_in_rounds(store: Rounds, tmp_path) -> list[str]:
    """Every key `ls`'s defaults (64 in flight) list from `store`, each request taking one round."""
    async def run() -> list[str]:
        clock = asyncio.ensure_future(store.clock())
        try:
            return [e.key async for page in list_in_order(store, "", ListingLimits(
                page_size=100, concurrency=64, max_streams=128, spill_bytes=1 << 30, spill_dir=str(tmp_path))) for e in page]
        finally:
            clock.cancel()

    return asyncio.run(run())


@pytest.mark.parametrize("shape", ["flat", "dated", "hashed"])
def test_listings_fan_out_in_a_few_rounds_and_pages_stay_full(shape: str, tmp_path) -> None:
    """`ls` defaults (64 in flight): 40,000 keys in pages of 100 (400 pages). The first page's keys
    are enough to put most of the 64 slots to work by the third round, so the listing takes a
    fraction of the chain's 400 rounds; ranges are not cut finer than about a page, so requests
    stay close to the pages listed."""
    import hashlib

    make = {"flat": lambda i: f"obj-{i:07d}",
            "dated": lambda i: f"year={2020 + i // 15000}/month={(i // 1250) % 12 + 1:02d}/day={(i // 50) % 25 + 1:02d}/part-{i:05d}",
            "hashed": lambda i: f"{hashlib.md5(str(i).encode()).hexdigest()[:8]}/obj-{i}"}[shape]
    keys = sorted(make(i) for i in range(40_000))
    store = Rounds(keys, blind=False)
    assert list_in_rounds(store, tmp_path) == keys
    rounds = store.per_round
    print(f"{shape}: {len(rounds)} rounds, {store.requests} requests, in flight per round {rounds[:8]}...")
    assert max(rounds[:3]) >= 16
    assert len(rounds) <= 40  # the chain: 400
    assert store.requests <= 2 * 400


@pytest.mark.parametrize("shape", ["flat", "dated"])
def test_numbered_and_dated_names_cost_few_requests_beyond_the_pages(shape: str, tmp_path) -> None:
    """Requests are what a listing pays for on S3 (and CPU on both sides). A store that, as S3, does
    not know where a unit ends answers a full page that may end exactly at the unit's end; one more
    request then finds nothing. Ranges cut one page long on numbered names (`obj-0001`, `obj-0002`:
    1,000 names each, a page) did that for every range, and cuts at the next letters of fixed text
    (`month=` -> `montj`) listed nothing: 1.65x (flat) and 1.9x (dated) the 400 pages here, now 1.1x
    and 1.46x (dated: 12 rounds, was 14, the rest of a month cut at days at once). The fan-out
    stays: 16 listings in flight within three rounds."""
    make = {"flat": lambda i: f"obj-{i:07d}",
            "dated": lambda i: f"year={2020 + i // 15000}/month={(i // 1250) % 12 + 1:02d}/day={(i // 50) % 25 + 1:02d}/part-{i:05d}"}[shape]
    keys = sorted(make(i) for i in range(40_000))
    store = Rounds(keys)
    assert list_in_rounds(store, tmp_path) == keys
    rounds = store.per_round
    print(f"{shape}: {len(rounds)} rounds, {store.requests} requests, in flight per round {rounds[:8]}...")
    assert max(rounds[:3]) >= 16
    assert len(rounds) <= 40  # the chain: 400
    assert store.requests <= 1.5 * 400


class FailsOnce(Shuffled):
    """Shuffled, with the `fail_at`-th listing request failing: a server's error mid-listing."""

    def __init__(self, store: memory.MemoryStore, rng: random.Random, fail_at: int) -> None:
        super().__init__(store, rng)
        self.fail_at = fail_at
        self.running = 0

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        self.running += 1
        try:
            number = self.requests + 1
            page = await super().list_page(prefix, unit, limit)
            if number == self.fail_at:
                raise OSError("the server went away")
            return page
        finally:
            self.running -= 1


@pytest.mark.parametrize("fail_at", [1, 2, 5, 20, 60])
def test_a_failed_page_request_ends_the_listing_with_its_error(fail_at: int, bucket, tmp_path) -> None:
    """Each page's cut and next requests are done by the task that listed it (split._Ordered._list):
    a failure there must still reach the consumer, not leave the listing waiting, and no request
    or spill file may outlive it."""
    name, b = bucket
    for i in range(2000):
        b.put(f"k/{i:05d}", b"x")
    store = FailsOnce(memory.MemoryStore(parse_location(f"memory://{name}/")), random.Random(fail_at), fail_at)
    with pytest.raises(OSError, match="went away"):
        asyncio.run(asyncio.wait_for(listed(store, "k/", tmp_path, page_size=10, concurrency=8, max_pages=2,
                                            spill_bytes=1 << 20), timeout=120))
    assert store.running == 0
    assert os.listdir(tmp_path) == []
