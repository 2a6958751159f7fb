"""How many requests and round trips `ls`'s split listing takes, simulated: no network, no clock.

    uv run python bench/listing_rounds.py --keys 1000000                 # flat, dated, hashed
    uv run python bench/listing_rounds.py --keys 100000 --shapes dated

Why: requests are what a listing pays for on S3 (and CPU on both sides of bench/listing_bench.py),
and rounds are its wall time at a fixed latency; both depend only on where engine/listing/units.py cuts. Here the
engine (engine/listing/split.py, as `s3bulk ls` calls it: 64 in flight, pages of 1,000) lists slow_s3's
synthetic key shapes from a store that answers as S3 does (up to a page of keys after StartAfter; it
does not know where the unit ends, so a full page that ends exactly at a unit's end needs one more
request to learn that nothing follows), and every request takes one round: all requests sent in a
round are answered together once the event loop has nothing else to do.

Printed per shape and order: rounds, requests, requests that found no key in their range (of them
"tails": the request after a full page that ended exactly at the range's end), short pages, and the
round in which 16 requests were first in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slow_s3  # noqa: E402

from s3bulk.engine.listing.split import ListingLimits, list_in_order  # noqa: E402
from s3bulk.model import ObjectInfo, Page, WorkUnit  # noqa: E402


class RoundStore:
    """An ordered store over a sorted key list; each request is answered in the round after it is sent."""

    ordered = True

    def __init__(self, keys: list[str], blind: bool = True) -> None:
        self.keys = keys
        # blind: answer as S3 does (it does not know the unit's end); otherwise a store that stops at it
        self.blind = blind
        self.pending: list[asyncio.Future[None]] = []
        self.per_round: list[int] = []
        self.requests = self.empty = self.tails = self.short = 0

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        self.requests += 1
        done = asyncio.get_running_loop().create_future()
        self.pending.append(done)
        await done
        keys = self.keys
        i = bisect.bisect_right(keys, unit.after) if unit.after is not None else bisect.bisect_left(keys, prefix)
        j = min(i + limit, len(keys))  # S3's page: it does not know `until`
        if self.blind:
            k = j if unit.until is None else bisect.bisect_right(keys, unit.until, i, j)
            more = k == j < len(keys)  # a full page: only the next request can tell what follows
        else:
            k = j if unit.until is None else min(j, bisect.bisect_right(keys, unit.until))
            more = k < len(keys) and (unit.until is None or keys[k] <= unit.until)
        out = [ObjectInfo(x) for x in keys[i:k]]
        if not out:
            self.empty += 1
            self.tails += unit.after is not None and i > 0 and keys[i - 1] == unit.after
        elif len(out) < limit:
            self.short += 1
        return Page(out, next_after=out[-1].key if more and out else None)

    async def clock(self) -> None:
        while True:
            for _ in range(30):  # let every task run until it waits on a request
                await asyncio.sleep(0)
            if self.pending:
                batch, self.pending = self.pending, []
                self.per_round.append(len(batch))
                for f in batch:
                    f.set_result(None)


def simulate(shape: str, n: int, ordered: bool) -> str:
    store = RoundStore(slow_s3.make_keys(shape, n))

    async def run() -> int:
        clock = asyncio.ensure_future(store.clock())
        listed = 0
        try:
            with tempfile.TemporaryDirectory() as spill:
                async for page in list_in_order(store, "", ListingLimits(
                        page_size=1000, concurrency=64, max_streams=128, ordered=ordered,
                        spill_bytes=1 << 30, spill_dir=spill)):
                    listed += len(page)
        finally:
            clock.cancel()
        return listed

    assert asyncio.run(run()) == n
    r = store.per_round
    at16 = next((i + 1 for i, x in enumerate(r) if x >= 16), None)
    return (f"{shape:7s} {'ordered' if ordered else 'unordered':9s} {n:,} keys: {len(r)} rounds, {store.requests:,} "
            f"requests ({store.empty} found no key, {store.tails} of them tails; {store.short} short pages), "
            f"16 in flight in round {at16}, in flight per round {r[:6]}...")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--shapes", default=",".join(slow_s3.SHAPES))
    ap.add_argument("--unordered", action="store_true", help="also as `ls --unordered` lists")
    a = ap.parse_args()
    for shape in a.shapes.split(","):
        for ordered in (True, False) if a.unordered else (True,):
            print(simulate(shape, a.keys, ordered), flush=True)


if __name__ == "__main__":
    main()
