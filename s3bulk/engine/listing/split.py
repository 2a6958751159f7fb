"""Listing one prefix through many key ranges at once, yielding keys in order, in bounded memory.

`s3bulk ls` (and the API's `ls`/`ls_async`) prints keys in key order, because people diff listings.
A single chain of pages waits one round trip per page; here the range after each listed page is
split (units.py) into streams that are listed concurrently, and the output walks the streams in key
order. Each stream holds the pages it has listed but not yet printed. At most `max_pages` are held
in memory (plus those in flight); with `spill_bytes` > 0 (`ls`), a page listed ahead of the output
beyond that goes to a temporary file (spill.py) and is read back when the output reaches it, so
`concurrency` listings stay in flight however far ahead of the output they run: the output never
waits on the range it prints next while other ranges could be listed, and memory stays flat in the
key count (disk holds what is ahead, at most `spill_bytes`). Without room on disk, only the stream
being printed and the next `concurrency` streams that hold no page yet list on (so output always
progresses and the streams printed next are ready). `max_streams` bounds the ranges still being
listed (each split adds some), `max_ranges` those listed and waiting to be printed. A store that
cannot list by key (a list/get server) is read through its single chain.

`render_in_order` is the same listing with each page turned into its text as it arrives (the CLI's
lines): the rendering is done once either way, and a spilled page is then its text, written and
read back as UTF-8 bytes, with no serialising of objects.

`ordered=False` (`s3bulk ls --unordered`) hands each page on as soon as it arrives: no page waits
for the range before it, so nothing is held and the listing runs as fast as `concurrency` requests
allow; each page is still in key order within itself.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, AsyncGenerator, Callable, Generic, TypeVar

from ...model import ObjectInfo, WorkUnit
from .hints import BoundarySample
from .spill import Spill, Spilled, decode_page, encode_page
from .units import split_unit


P = TypeVar("P")


class _Stream(Generic[P]):
    """One key range: its remaining unit (None when listed to its end) and its pages not yet yielded,
    in order, each in memory or spilled to disk."""

    __slots__ = ("unit", "pages", "listing", "sid")

    def __init__(self, unit: WorkUnit | None, sid: int) -> None:
        self.unit = unit
        self.pages: deque[P | Spilled] = deque()
        self.listing = False
        self.sid = sid  # names its spill file


class _Codec(Generic[P]):
    """What a page is while it waits (`keep`: from the listed objects) and how it goes to disk."""

    def __init__(self, keep: Callable[[list[ObjectInfo]], P], encode: Callable[[P], bytes],
                 decode: Callable[[bytes], P]) -> None:
        self.keep, self.encode, self.decode = keep, encode, decode


def _same(entries: list[ObjectInfo]) -> list[ObjectInfo]:
    return entries


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _from_utf8(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


_OBJECTS: _Codec[list[ObjectInfo]] = _Codec(_same, encode_page, decode_page)


async def list_in_order(store: Any, prefix: str, *, page_size: int = 1000, concurrency: int = 16,
                        max_streams: int = 64, max_pages: int = 32,
                        start: WorkUnit | None = None, ordered: bool = True,
                        starts: list[WorkUnit] | None = None,
                        sample: BoundarySample | None = None, spill_bytes: int = 0,
                        spill_dir: str | None = None, max_ranges: int = 1024) -> AsyncGenerator[list[ObjectInfo], None]:
    """Pages of every key under `prefix` (inside `start`, default everything), in key order.
    `concurrency` list requests in flight at most, `max_streams` ranges still being listed at once,
    about `max_pages` listed pages held in memory (plus those in flight), and with `spill_bytes` > 0
    pages listed further ahead of the output on disk (spill.py, under `spill_dir` or $TMPDIR).
    `ordered=False`: pages as they arrive. `starts`: contiguous units covering everything, to begin
    with (hints.py); `sample` collects where pages ended, for the next listing of the same prefix."""
    pages = _listing(store, prefix, _OBJECTS, page_size, concurrency, max_streams, max_pages, start, ordered, starts,
                     sample, spill_bytes, spill_dir, max_ranges)
    try:
        async for entries in pages:
            yield entries
    finally:
        await pages.aclose()  # closed now (its listings cancelled), not whenever it is collected


async def render_in_order(store: Any, prefix: str, render: Callable[[list[ObjectInfo]], str], *,
                          page_size: int = 1000, concurrency: int = 16, max_streams: int = 64,
                          max_pages: int = 32, ordered: bool = True, starts: list[WorkUnit] | None = None,
                          sample: BoundarySample | None = None, spill_bytes: int = 0,
                          spill_dir: str | None = None, max_ranges: int = 1024) -> AsyncGenerator[str, None]:
    """`list_in_order`, yielding `render(page)` for each page: called once per page as it arrives
    (so in arrival order when pages arrive out of order, but yielded in key order)."""
    codec: _Codec[str] = _Codec(render, _utf8, _from_utf8)
    texts = _listing(store, prefix, codec, page_size, concurrency, max_streams, max_pages, None, ordered, starts,
                     sample, spill_bytes, spill_dir, max_ranges)
    try:
        async for text in texts:
            yield text
    finally:
        await texts.aclose()


async def _listing(store: Any, prefix: str, codec: _Codec[P], page_size: int, concurrency: int, max_streams: int,
                   max_pages: int, start: WorkUnit | None, ordered: bool, starts: list[WorkUnit] | None,
                   sample: BoundarySample | None, spill_bytes: int, spill_dir: str | None,
                   max_ranges: int) -> AsyncGenerator[P, None]:
    """The three ways to list: one chain (a store that cannot list by key), as pages arrive, or in
    key order (spilling when `spill_bytes` > 0); each page is `codec.keep(entries)`."""
    unit: WorkUnit | None = start or WorkUnit()
    keep = codec.keep
    if not getattr(store, "ordered", False) or concurrency <= 1:
        while unit is not None:
            page = await store.list_page(prefix, unit, page_size)
            if page.entries:
                yield keep(page.entries)
            unit = unit.rest(page)
        return
    first: list[WorkUnit] = starts if start is None and starts else [start or WorkUnit()]
    if not ordered:
        arrived = _list_as_listed(store, prefix, first, page_size, concurrency, max_streams, sample)
        try:
            async for entries in arrived:
                yield keep(entries)
        finally:
            await arrived.aclose()
        return
    spill = Spill(spill_bytes, spill_dir) if spill_bytes > 0 else None
    pages = _list_ordered(store, prefix, codec, first, page_size, concurrency, max_streams, max_pages, max_ranges,
                          sample, spill)
    try:
        async for one in pages:
            yield one
    finally:
        await pages.aclose()  # cancels its listings now, not when collected
        if spill is not None:
            spill.close()


async def _list_ordered(store: Any, prefix: str, codec: _Codec[P], first: list[WorkUnit], page_size: int,
                        concurrency: int, max_streams: int, max_pages: int, max_ranges: int,
                        sample: BoundarySample | None, spill: Spill | None) -> AsyncGenerator[P, None]:
    """Every key in `first` (contiguous units), a page at a time in key order. At most `max_streams`
    ranges are still being listed and `max_ranges` wait to be printed; a page listed ahead of the
    output while `max_pages` are held in memory goes to `spill` (when it has room), so listings in
    flight stay at `concurrency` however far the output is behind."""
    streams: list[_Stream[P]] = [_Stream(u, i) for i, u in enumerate(first)]
    next_id = len(streams)
    still_listing = len(streams)  # streams whose unit is not None
    inflight: dict[asyncio.Task[Any], _Stream[P]] = {}
    held = 0  # pages held in memory
    keep, encode, decode = codec.keep, codec.encode, codec.decode
    try:
        while streams:
            if len(inflight) < concurrency:
                # without room on disk, and pages held at the limit, only the next ranges to print
                # that hold nothing yet list on (one page each at most), so the head never waits alone
                limited = held >= max_pages and (spill is None or not spill.room())
                for i, s in enumerate(streams):  # start listings, earliest ranges first
                    if len(inflight) >= concurrency or (limited and i >= concurrency):
                        break
                    if limited and i > 0 and s.pages:
                        continue
                    if s.unit is not None and not s.listing:
                        s.listing = True
                        inflight[asyncio.ensure_future(store.list_page(prefix, s.unit, page_size))] = s
            head = streams[0]
            if head.pages:
                segment = head.pages.popleft()
                if isinstance(segment, Spilled):
                    assert spill is not None
                    yield decode(spill.read(segment))
                else:
                    held -= 1
                    yield segment
                # one turn of the loop per page: listings just started go out, answers come in, while
                # the consumer works through pages that were ready (a run of spilled ones can be long)
                await asyncio.sleep(0)
                continue
            if head.unit is None and not head.listing:
                streams.pop(0)
                if spill is not None:
                    spill.drop(head.sid)
                continue
            done, _ = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                s = inflight.pop(task)
                s.listing = False
                page = task.result()  # a failure ends the listing (the finally cancels the others)
                listed_unit = s.unit
                assert listed_unit is not None
                if page.entries:
                    kept = keep(page.entries)
                    if held >= max_pages and spill is not None and spill.room() and s is not streams[0]:
                        s.pages.append(spill.write(s.sid, encode(kept)))
                    else:
                        s.pages.append(kept)
                        held += 1
                rest = listed_unit.rest(page)
                if sample is not None and rest is not None and rest.after is not None:
                    sample.add(rest.after)
                room = min(max_streams - still_listing, max_ranges - len(streams))
                if rest is not None and room > 0:
                    pieces = split_unit(rest, prefix, [e.key for e in page.entries], max_pieces=room + 1, coarse=True)
                    s.unit = pieces[0]
                    at = streams.index(s) + 1
                    streams[at:at] = [_Stream(p, next_id + k) for k, p in enumerate(pieces[1:])]
                    next_id += len(pieces) - 1
                    still_listing += len(pieces) - 1
                else:
                    s.unit = rest
                    if rest is None:
                        still_listing -= 1
    finally:
        for task in inflight:
            task.cancel()
        if inflight:
            await asyncio.gather(*inflight, return_exceptions=True)


async def _list_as_listed(store: Any, prefix: str, units: list[WorkUnit], page_size: int, concurrency: int,
                          max_streams: int, sample: BoundarySample | None) -> AsyncGenerator[list[ObjectInfo], None]:
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
                    waiting.extend(split_unit(rest, prefix, [e.key for e in page.entries], max_pieces=room, coarse=True))
                if page.entries:
                    yield page.entries
    finally:
        for task in inflight:
            task.cancel()
        if inflight:
            await asyncio.gather(*inflight, return_exceptions=True)
