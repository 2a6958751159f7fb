"""How many round trips and requests `ls`'s split listing (engine/listing/split.py, as `s3bulk ls`
calls it: 64 in flight, pages of 1,000) takes over 200,000 numbered and hashed keys: counts from a
store that answers every request sent in one round together, as S3 at a fixed latency does; no
clock. One chain of pages takes 200 rounds and 200 requests."""

from __future__ import annotations

import asyncio
import bisect

import pytest

from s3bulk.engine.listing.split import ListingLimits, list_in_order
from s3bulk.model import ObjectInfo, Page, WorkUnit

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

SHAPES = {
    "flat": lambda i: f"obj-{i:07d}",
    "hashed": lambda i: f"{(i * 2654435761) % 2**32:08x}/obj-{i}",
    "hashdirs": lambda i: "{0}/{1}/{2}".format((h := f"{(i * 2654435761) % 2**32:08x}")[:2], h[2:4], h),
}


class RoundStore:
    """A sorted key list answered as S3 does (a page of keys after StartAfter: it does not know the
    range's end), each request in the round after it was sent."""

    ordered = True

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys
        self.pending: list[asyncio.Future[None]] = []
        self.rounds = self.requests = 0

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        self.requests += 1
        done = asyncio.get_running_loop().create_future()
        self.pending.append(done)
        await done
        i = bisect.bisect_right(self.keys, unit.after) if unit.after is not None else 0
        j = min(i + limit, len(self.keys))
        k = j if unit.until is None else bisect.bisect_right(self.keys, unit.until, i, j)
        out = [ObjectInfo(x) for x in self.keys[i:k]]
        return Page(out, next_after=out[-1].key if out and k == j < len(self.keys) else None)

    async def clock(self) -> None:
        while True:
            for _ in range(30):  # every listing runs until it waits on a request
                await asyncio.sleep(0)
            if self.pending:
                batch, self.pending = self.pending, []
                self.rounds += 1
                for f in batch:
                    f.set_result(None)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_ls_lists_200k_keys_in_few_rounds_and_few_extra_requests(shape: str, tmp_path) -> None:
    """A range cut at its next character values can hold ten pages, listed one a round while the
    rest is done (14-15 rounds); ranges cut evenly by their length take half that, for at most
    1.3x the requests of a single chain."""
    keys = sorted({SHAPES[shape](i) for i in range(200_000)})
    store = RoundStore(keys)
    assert asyncio.run(_listing(store, tmp_path)) == keys
    print(f"{shape}: {store.rounds} rounds, {store.requests} requests")
    assert store.rounds <= 9
    assert store.requests <= 260


def test_ls_lists_200k_date_partitioned_keys_in_few_rounds(tmp_path) -> None:
    """Date-partitioned paths (400 days of 500 keys) are cut at each field's next values; a range
    inside one value of the field a page varies in (`day=1`: days 10-19, five pages) was listed as a
    chain, one page a round while the rest was done: 12 rounds. Cut every 1.5 pages while requests
    are idle, 9; the rest of a page's month cut at days at once and each later month once
    (engine/listing/dates.py), 7, for ~1.4x the requests of a single chain (empty months and years among them)."""
    from datetime import date, timedelta
    keys = [f"year={d.year}/month={d.month:02d}/day={d.day:02d}/part-{j:06d}.parquet"
            for d in (date(2020, 1, 1) + timedelta(days=n) for n in range(400)) for j in range(500)]
    store = RoundStore(keys)
    assert asyncio.run(_listing(store, tmp_path)) == keys
    print(f"dated: {store.rounds} rounds, {store.requests} requests")
    assert store.rounds <= 7
    assert store.requests <= 290


async def _listing(store: RoundStore, tmp_path) -> list[str]:
    clock = asyncio.ensure_future(store.clock())
    seen: list[str] = []
    try:
        async for page in list_in_order(store, "", ListingLimits(page_size=1000, concurrency=64, max_streams=128,
                                                                 spill_bytes=1 << 30, spill_dir=str(tmp_path))):
            seen.extend(e.key for e in page)
    finally:
        clock.cancel()
    return seen
