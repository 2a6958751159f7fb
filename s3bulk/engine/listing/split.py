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
from dataclasses import dataclass
from typing import AsyncGenerator, Callable, Generic, TypeVar

from ...model import ObjectInfo, Page, WorkUnit
from ...stores import Store
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


@dataclass(frozen=True, slots=True)
class ListingLimits:
    """How wide and how far ahead one listing runs (the module docstring says what each bounds):
    `concurrency` list requests in flight at most, `max_streams` ranges still being listed at once,
    `max_ranges` listed and waiting to be yielded, about `max_pages` listed pages held in memory
    (plus those in flight), and with `spill_bytes` > 0 pages listed further ahead of the output on
    disk (spill.py, under `spill_dir` or $TMPDIR). `ordered=False`: pages as they arrive."""

    page_size: int = 1000
    concurrency: int = 16
    max_streams: int = 64
    max_pages: int = 32
    max_ranges: int = 1024
    spill_bytes: int = 0
    spill_dir: str | None = None
    ordered: bool = True


async def list_in_order(store: Store, prefix: str, limits: ListingLimits = ListingLimits(), *,
                        start: WorkUnit | None = None, starts: list[WorkUnit] | None = None,
                        sample: BoundarySample | None = None) -> AsyncGenerator[list[ObjectInfo], None]:
    """Pages of every key under `prefix` (inside `start`, default everything), in key order, within
    `limits`. `starts`: contiguous units covering everything, to begin with (hints.py); `sample`
    collects where pages ended, for the next listing of the same prefix."""
    pages = _listing(store, prefix, _OBJECTS, limits, start, starts, sample)
    try:
        async for entries in pages:
            yield entries
    finally:
        await pages.aclose()  # closed now (its listings cancelled), not whenever it is collected


async def render_in_order(store: Store, prefix: str, render: Callable[[list[ObjectInfo]], str],
                          limits: ListingLimits = ListingLimits(), *, starts: list[WorkUnit] | None = None,
                          sample: BoundarySample | None = None) -> AsyncGenerator[str, None]:
    """`list_in_order`, yielding `render(page)` for each page: called once per page as it arrives
    (so in arrival order when pages arrive out of order, but yielded in key order)."""
    codec: _Codec[str] = _Codec(render, _utf8, _from_utf8)
    texts = _listing(store, prefix, codec, limits, None, starts, sample)
    try:
        async for text in texts:
            yield text
    finally:
        await texts.aclose()


async def _listing(store: Store, prefix: str, codec: _Codec[P], limits: ListingLimits, start: WorkUnit | None,
                   starts: list[WorkUnit] | None, sample: BoundarySample | None) -> AsyncGenerator[P, None]:
    """The three ways to list: one chain (a store that cannot list by key), as pages arrive, or in
    key order (spilling when `limits.spill_bytes` > 0); each page is `codec.keep(entries)`."""
    unit: WorkUnit | None = start or WorkUnit()
    keep = codec.keep
    if not store.ordered or limits.concurrency <= 1:
        while unit is not None:
            page = await store.list_page(prefix, unit, limits.page_size)
            if page.entries:
                yield keep(page.entries)
            unit = unit.rest(page)
        return
    first: list[WorkUnit] = starts if start is None and starts else [start or WorkUnit()]
    if not limits.ordered:
        arrived = _list_as_listed(store, prefix, first, limits, sample)
        try:
            async for entries in arrived:
                yield keep(entries)
        finally:
            await arrived.aclose()
        return
    spill = Spill(limits.spill_bytes, limits.spill_dir) if limits.spill_bytes > 0 else None
    pages = _list_ordered(_Ordered(store, prefix, codec, first, limits, sample, spill))
    try:
        async for one in pages:
            yield one
    finally:
        await pages.aclose()  # cancels its listings now, not when collected
        if spill is not None:
            spill.close()


class _Ordered(Generic[P]):
    """One listing in key order (_list_ordered): its streams (key ranges, in key order), the
    listings in flight, and how many listed pages are held in memory. At most `max_streams` ranges
    are still being listed and `max_ranges` wait to be yielded; a page listed ahead of the output
    while `max_pages` are held in memory goes to `spill` (when it has room), so listings in flight
    stay at `concurrency` however far the output is behind."""

    def __init__(self, store: Store, prefix: str, codec: _Codec[P], first: list[WorkUnit], limits: ListingLimits,
                 sample: BoundarySample | None, spill: Spill | None) -> None:
        self.store, self.prefix, self.codec, self.limits = store, prefix, codec, limits
        self.sample, self.spill = sample, spill
        self.streams: list[_Stream[P]] = [_Stream(u, i) for i, u in enumerate(first)]
        self.next_id = len(self.streams)
        self.still_listing = len(self.streams)  # streams whose unit is not None
        self.inflight: dict[asyncio.Task[None], _Stream[P]] = {}
        self.held = 0  # pages held in memory

    def start_listings(self) -> None:
        """Listings started, earliest ranges first, up to `concurrency` in flight. Without room on
        disk, and pages held at the limit, only the next ranges to print that hold nothing yet list
        on (one page each at most), so the head never waits alone."""
        limits, inflight = self.limits, self.inflight
        if len(inflight) >= limits.concurrency or len(inflight) >= self.still_listing:
            return  # no room, or every range with keys left is being listed: no walk of the streams
        limited = self.held >= limits.max_pages and (self.spill is None or not self.spill.room())
        for i, s in enumerate(self.streams):
            if len(inflight) >= limits.concurrency or (limited and i >= limits.concurrency):
                break
            if limited and i > 0 and s.pages:
                continue
            if s.unit is not None and not s.listing:
                s.listing = True
                inflight[asyncio.ensure_future(self._list(s, s.unit))] = s

    async def _list(self, s: _Stream[P], unit: WorkUnit) -> None:
        """One page of `s` listed, and what follows from it done at once, in this task: the rest of
        its range cut and the next requests sent before the page is rendered, and before the pages
        that arrived with it are read. Why: when many pages land in one turn of the loop, each costs
        a few ms of CPU (reading, rendering); cut and sent only after all of them were read, every
        round of a chain of pages waited for the whole batch (a dated 200,000-key `ls`: ~30 rounds
        of 50 ms for ~9 in its chains)."""
        page = await self.store.list_page(self.prefix, unit, self.limits.page_size)
        task = asyncio.current_task()
        assert task is not None
        del self.inflight[task]  # out of the count, so that its own range's next page can go out
        try:
            s.listing = False
            self.cut(s, unit, page)
            self.start_listings()
            self.keep(s, page)
        except BaseException:
            self.inflight[task] = s  # back where wait() looks: its failure ends the listing
            raise

    def take(self, head: _Stream[P]) -> P:
        """The head stream's first page, from memory or read back from disk."""
        segment = head.pages.popleft()
        if isinstance(segment, Spilled):
            assert self.spill is not None
            return self.codec.decode(self.spill.read(segment))
        self.held -= 1
        return segment

    def drop(self, head: _Stream[P]) -> None:
        """The head stream is listed to its end and yielded: gone, with its spill file."""
        self.streams.pop(0)
        if self.spill is not None:
            self.spill.drop(head.sid)

    async def wait(self) -> None:
        """Until one listing or more came back (each kept and cut by its own task, _list)."""
        done, _ = await asyncio.wait(self.inflight, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task in self.inflight:  # failed before it could take itself out
                self.inflight.pop(task)
                task.result()  # a failure ends the listing (cancel() ends the others)

    def keep(self, s: _Stream[P], page: Page) -> None:
        """A listed page kept, in memory, or on disk when it is ahead of the output and memory is full."""
        if page.entries:
            kept = self.codec.keep(page.entries)
            spill = self.spill
            if self.held >= self.limits.max_pages and spill is not None and spill.room() and s is not self.streams[0]:
                s.pages.append(spill.write(s.sid, self.codec.encode(kept)))
            else:
                s.pages.append(kept)
                self.held += 1

    def cut(self, s: _Stream[P], listed_unit: WorkUnit, page: Page) -> None:
        """The rest of the range after `page` cut into new streams while there is room for them."""
        rest = listed_unit.rest(page)
        if self.sample is not None and rest is not None and rest.after is not None:
            self.sample.add(rest.after)
        room = min(self.limits.max_streams - self.still_listing, self.limits.max_ranges - len(self.streams))
        if rest is not None and room > 0:
            # fewer ranges than requests allowed in flight: requests are idle, cut finer (units.py)
            idle = self.still_listing < self.limits.concurrency
            pieces = split_unit(rest, self.prefix, [e.key for e in page.entries], max_pieces=room + 1, coarse=True,
                                idle=idle)
            s.unit = pieces[0]
            at = self.streams.index(s) + 1
            self.streams[at:at] = [_Stream(p, self.next_id + k) for k, p in enumerate(pieces[1:])]
            self.next_id += len(pieces) - 1
            self.still_listing += len(pieces) - 1
        else:
            s.unit = rest
            if rest is None:
                self.still_listing -= 1

    async def cancel(self) -> None:
        for task in self.inflight:
            task.cancel()
        if self.inflight:
            await asyncio.gather(*self.inflight, return_exceptions=True)


async def _list_ordered(listing: _Ordered[P]) -> AsyncGenerator[P, None]:
    """Every key of the listing's first units (contiguous), a page at a time in key order."""
    streams = listing.streams
    try:
        while streams:
            listing.start_listings()
            head = streams[0]
            if head.pages:
                yield listing.take(head)
                # one turn of the loop per page: listings just started go out, answers come in, while
                # the consumer works through pages that were ready (a run of spilled ones can be long)
                await asyncio.sleep(0)
                continue
            if head.unit is None and not head.listing:
                listing.drop(head)
                continue
            await listing.wait()
    finally:
        await listing.cancel()


async def _list_as_listed(store: Store, prefix: str, units: list[WorkUnit], limits: ListingLimits,
                          sample: BoundarySample | None) -> AsyncGenerator[list[ObjectInfo], None]:
    """Every key in `units`, a page at a time in the order pages arrive. Ranges waiting for a
    request slot are at most `max_streams`; no listed page is held."""
    waiting: deque[WorkUnit] = deque(units)
    inflight: dict[asyncio.Task[Page], WorkUnit] = {}
    try:
        while waiting or inflight:
            while waiting and len(inflight) < limits.concurrency:
                u = waiting.popleft()
                inflight[asyncio.ensure_future(store.list_page(prefix, u, limits.page_size))] = u
            done, _ = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                listed = inflight.pop(task)
                page = task.result()  # a failure ends the listing (the finally cancels the others)
                rest = listed.rest(page)
                if sample is not None and rest is not None and rest.after is not None:
                    sample.add(rest.after)
                if rest is not None:
                    room = limits.max_streams - len(waiting) - len(inflight)
                    waiting.extend(split_unit(rest, prefix, [e.key for e in page.entries], max_pieces=room, coarse=True))
                if page.entries:
                    yield page.entries
    finally:
        for task in inflight:
            task.cancel()
        if inflight:
            await asyncio.gather(*inflight, return_exceptions=True)
