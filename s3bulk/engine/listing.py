"""Listing one prefix through many key ranges at once, yielding keys in order, in bounded memory.

`s3bulk ls` (and the API's `ls`/`alist`) prints keys in key order, because people diff listings.
A single chain of pages waits one round trip per page; here the range after each listed page is
split (units.py) into streams that are listed concurrently, and the output walks the streams in key
order. Each stream holds the pages it has listed but not yet printed; while `max_pages` pages are
held, only the stream being printed and the next `concurrency` streams that hold no page yet list
on (so output always progresses and the streams printed next are ready), so at most `max_pages +
concurrency` pages are held whatever the bucket's size. A store that cannot list by key (a list/get server) is read
through its single chain.

`ordered=False` (`s3bulk ls --unordered`) hands each page on as soon as it arrives: no page waits
for the range before it, so nothing is held and the listing runs as fast as `concurrency` requests
allow; each page is still in key order within itself.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, AsyncIterator

from ..model import ObjectInfo, WorkUnit
from .hints import BoundarySample
from .units import split_unit


class _Stream:
    """One key range being listed: its remaining unit (None when listed to its end) and its pages."""

    __slots__ = ("unit", "pages", "listing")

    def __init__(self, unit: WorkUnit | None) -> None:
        self.unit = unit
        self.pages: deque[list[ObjectInfo]] = deque()
        self.listing = False


async def list_in_order(store: Any, prefix: str, *, page_size: int = 1000, concurrency: int = 16,
                        max_streams: int = 64, max_pages: int = 32,
                        start: WorkUnit | None = None, ordered: bool = True,
                        starts: list[WorkUnit] | None = None,
                        sample: BoundarySample | None = None) -> AsyncIterator[list[ObjectInfo]]:
    """Pages of every key under `prefix` (inside `start`, default everything), in key order.
    `concurrency` list requests in flight at most, `max_streams` ranges at once, about `max_pages`
    listed pages held (plus those in flight). `ordered=False`: pages as they arrive. `starts`:
    contiguous units covering everything, to begin with (hints.py); `sample` collects where pages
    ended, for the next listing of the same prefix."""
    unit: WorkUnit | None = start or WorkUnit()
    if not getattr(store, "ordered", False) or concurrency <= 1:
        while unit is not None:
            page = await store.list_page(prefix, unit, page_size)
            if page.entries:
                yield page.entries
            unit = unit.rest(page)
        return
    first: list[WorkUnit] = starts if start is None and starts else [start or WorkUnit()]
    if not ordered:
        async for entries in _list_as_listed(store, prefix, first, page_size, concurrency, max_streams, sample):
            yield entries
        return
    streams: list[_Stream] = [_Stream(u) for u in first]
    inflight: dict[asyncio.Task[Any], _Stream] = {}
    held = 0
    try:
        while streams:
            for i, s in enumerate(streams):  # start listings, earliest ranges first
                if len(inflight) >= concurrency or (held >= max_pages and i >= concurrency):
                    break
                if held >= max_pages and i > 0 and s.pages:
                    # pages held are at the limit: only the next ranges to print that hold nothing
                    # yet list on (one page each at most), so the head never waits alone
                    continue
                if s.unit is not None and not s.listing:
                    s.listing = True
                    inflight[asyncio.ensure_future(store.list_page(prefix, s.unit, page_size))] = s
            head = streams[0]
            if head.pages:
                held -= 1
                yield head.pages.popleft()
                continue
            if head.unit is None and not head.listing:
                streams.pop(0)
                continue
            done, _ = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                s = inflight.pop(task)
                s.listing = False
                page = task.result()  # a failure ends the listing (the finally cancels the others)
                listed_unit = s.unit
                assert listed_unit is not None
                if page.entries:
                    s.pages.append(page.entries)
                    held += 1
                rest = listed_unit.rest(page)
                if sample is not None and rest is not None and rest.after is not None:
                    sample.add(rest.after)
                if rest is not None and len(streams) < max_streams:
                    pieces = split_unit(rest, prefix, [e.key for e in page.entries],
                                        max_pieces=max_streams - len(streams) + 1)
                    s.unit = pieces[0]
                    at = streams.index(s) + 1
                    streams[at:at] = [_Stream(p) for p in pieces[1:]]
                else:
                    s.unit = rest
    finally:
        for task in inflight:
            task.cancel()
        if inflight:
            await asyncio.gather(*inflight, return_exceptions=True)


async def _list_as_listed(store: Any, prefix: str, units: list[WorkUnit], page_size: int, concurrency: int,
                          max_streams: int, sample: BoundarySample | None) -> AsyncIterator[list[ObjectInfo]]:
    """Every key in `units`, a page at a time in the order pages arrive. Ranges waiting for a
    request slot are at most `max_streams`; no listed page is held."""
    waiting: deque[WorkUnit] = deque(units)
    inflight: dict[asyncio.Task[Any], WorkUnit] = {}
    try:
        while waiting or inflight:
            while waiting and len(inflight) < concurrency:
                u = waiting.popleft()
                inflight[asyncio.ensure_future(store.list_page(prefix, u, page_size))] = u
            done, _ = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                listed = inflight.pop(task)
                page = task.result()  # a failure ends the listing (the finally cancels the others)
                rest = listed.rest(page)
                if sample is not None and rest is not None and rest.after is not None:
                    sample.add(rest.after)
                if rest is not None:
                    room = max_streams - len(waiting) - len(inflight)
                    waiting.extend(split_unit(rest, prefix, [e.key for e in page.entries], max_pieces=room))
                if page.entries:
                    yield page.entries
    finally:
        for task in inflight:
            task.cancel()
        if inflight:
            await asyncio.gather(*inflight, return_exceptions=True)
