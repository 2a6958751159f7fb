"""`ls` and `du`: the listing a user asks for, as pages, text or totals.

A URL is read as `copy` reads SRC (planner.resolve_source): one object, or everything under a
prefix. A prefix is listed in parallel key ranges (engine/listing/split.py), started from where
the last listing's pages ended (engine/listing/hints.py), with pages listed ahead of the output
spilled to disk (engine/listing/spill.py).
`stepped` drives any of these async generators from synchronous code, one item per step.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncGenerator, Callable, Generator, Iterator, TypeVar, cast

from ...model import ObjectInfo, WorkUnit
from ...config.urls import S3Options

if TYPE_CHECKING:  # imported where a listing starts, not with the module (start-up)
    from ...config.filters import Filters
    from ...stores import Store
    from ...stores.base import LevelPage
    from ..listing.hints import BoundarySample
    from ...config.urls import Location

    Resolved = tuple[Location, str | None]  # planner.resolve_source's answer: (location listed, the one key or None)

__all__ = ["DuResult", "LS_SPILL_BYTES", "du", "du_groups", "level_rows", "list_levels", "list_pages", "list_rendered", "stepped"]

LS_SPILL_BYTES = 1 << 30  # ordered `ls`: pages listed ahead of the output, on disk at most (engine/listing/spill.py)
T = TypeVar("T")
Select = Callable[[list[ObjectInfo]], "list[ObjectInfo]"]
"""A page's entries that the filters keep."""


async def list_pages(url: str, *, s3: S3Options | None = None, page_size: int = 1000,
                     concurrency: int = 16, ordered: bool = True,
                     filters: Filters | None = None, resolved: Resolved | None = None,
                     ) -> AsyncGenerator[list[ObjectInfo], None]:
    """Every object URL names (that the filters keep), a page at a time (api.ls_pages_async says
    how); a page the filters leave empty is not yielded. `resolved`: what planner.resolve_source
    made of URL already (du needs it first), so it is not asked again."""
    from ..listing.split import ListingLimits, list_in_order

    limits = ListingLimits(page_size=page_size, concurrency=concurrency, max_streams=max(64, 2 * concurrency),
                           ordered=ordered, spill_bytes=LS_SPILL_BYTES)

    def pages(store: Store, prefix: str, starts: list[WorkUnit] | None,
              sample: BoundarySample | None, select: Select | None) -> AsyncGenerator[list[ObjectInfo], None]:
        listed = list_in_order(store, prefix, limits, starts=starts, sample=sample)
        return listed if select is None else _selected(listed, select)

    listed = _listed(url, s3, concurrency, lambda one: one, pages, filters, resolved)
    try:
        async for entries in listed:
            if entries:
                yield entries
    finally:
        await listed.aclose()  # its listings end now, not when collected (after the loop is closed)


async def list_rendered(url: str, render: Callable[[list[ObjectInfo]], str], *, s3: S3Options | None = None,
                        concurrency: int = 16, ordered: bool = True,
                        filters: Filters | None = None) -> AsyncGenerator[str, None]:
    """`list_pages`, each page turned into text by `render` as soon as it is listed (the CLI's
    `ls`): a page listed ahead of the output then waits as its text, and one spilled to disk is
    written and read back as UTF-8, not as objects."""
    from ..listing.split import ListingLimits, render_in_order

    limits = ListingLimits(concurrency=concurrency, max_streams=max(64, 2 * concurrency), ordered=ordered,
                           spill_bytes=LS_SPILL_BYTES)

    def texts(store: Store, prefix: str, starts: list[WorkUnit] | None,
              sample: BoundarySample | None, select: Select | None) -> AsyncGenerator[str, None]:
        shown = render if select is None else lambda page: render(select(page))
        return render_in_order(store, prefix, shown, limits, starts=starts, sample=sample)

    listed = _listed(url, s3, concurrency, render, texts, filters)
    try:
        async for text in listed:
            yield text
    finally:
        await listed.aclose()


async def _listed(url: str, s3: S3Options | None, concurrency: int, one: Callable[[list[ObjectInfo]], Any],
                  listing: Callable[[Store, str, list[WorkUnit] | None, BoundarySample | None, Select | None],
                                    AsyncGenerator[Any, None]], filters: Filters | None = None,
                  resolved: Resolved | None = None) -> AsyncGenerator[Any, None]:
    """What `ls` of URL lists: `one([object])` when URL names one object, else `listing(store,
    prefix, start units from hints, boundary sample, what the filters select of a page)`; the
    sample is saved when it lists to the end."""
    from ...stores import open_store
    from ..listing import hints
    from ...config.urls import parse_location
    from ..planner import resolve_source

    located = parse_location(url, s3) if resolved is None else resolved[0]
    if filters:
        filters.check_source(located)
    listed: list[bool] | None = None  # the listing itself tells whether the prefix holds anything
    if resolved is None and _names_a_prefix(located):
        src, single = located, None
        if src.prefix:
            listed = [False]
    else:
        src, single = resolved if resolved is not None else await resolve_source(url, s3)
    select = _selector(filters.located(src), len(src.prefix)) if filters else None
    if listed is not None:
        select = _noting(listed, select)
    store = await open_store(src)
    try:
        if single is not None:
            found = [await store.head(single)]
            yield one(found if select is None else select(found))
            return
        sample = starts = None
        if store.ordered and concurrency > 1 and hints.enabled():
            sample, starts = hints.BoundarySample(), hints.start_units(src, concurrency)
        items = listing(store, src.prefix, starts, sample, select)
        try:
            async for item in items:
                yield item
        finally:
            await items.aclose()
        if listed is not None and not listed[0]:
            from ..planner import nothing_under

            nothing_under(src)  # as resolve_source's probe would have raised
        if sample is not None:  # listed to the end: where its pages ended, for the next listing
            hints.save(src, sample)
    finally:
        await store.close()


def _names_a_prefix(src: Location) -> bool:
    """A bucket URL that can only name a prefix (the bucket, or a prefix ending in '/'): no object
    to look for, so the listing's own first page says what resolve_source's one-key probe would
    (the bucket is there, the credentials sign, the endpoint answers, the prefix holds keys), and
    that round trip is saved (~50 ms at a remote region's latency, a quarter of a 200,000-key `ls`'s
    start). Its errors are the same: the probe's request is the listing's first."""
    return src.is_bucket and src.lists_in_order and (not src.prefix or src.prefix.endswith("/"))


def _noting(listed: list[bool], select: Select | None) -> Select:
    """`select`, noting in listed[0] that the store listed an entry (whatever the filters keep):
    a prefix with none is an error, as resolve_source's probe makes it. One call a page."""
    def noted(page: list[ObjectInfo]) -> list[ObjectInfo]:
        listed[0] = True
        return page if select is None else select(page)
    return noted


def _selector(filters: Filters, cut: int) -> Select:
    kept = filters.compiled()
    return lambda page: kept.select(page, cut)


async def _selected(pages: AsyncGenerator[list[ObjectInfo], None], select: Select
                    ) -> AsyncGenerator[list[ObjectInfo], None]:
    try:
        async for page in pages:
            yield select(page)
    finally:
        await pages.aclose()
async def list_levels(url: str, *, s3: S3Options | None = None, page_size: int = 1000
                      ) -> AsyncGenerator[LevelPage, None]:
    """One level under URL (`ls --no-recursive`), a page at a time in key order: the objects
    directly under it and the prefixes below it, from the store's LevelLister (one chain of pages:
    a level is browsed, not bulk-listed). URL is read as `list_pages` reads it; one object is
    one page holding it."""
    from ...errors import ListingBroken, UsageError
    from ...stores import open_store
    from ...stores.base import LevelLister, LevelPage
    from ..planner import resolve_source

    src, single = await resolve_source(url, s3)
    store = await open_store(src)
    try:
        if single is not None:
            yield LevelPage([await store.head(single)], [])
            return
        if not store.features.one_level:
            raise UsageError(f"{src.raw!r} cannot be listed one level at a time: list it recursively")
        lister = cast(LevelLister, store)
        token: str | None = None
        seen: set[str] = set()
        while True:
            page = await lister.list_level(src.prefix, token, page_size)
            yield page
            if page.next_token is None:
                return
            if page.next_token in seen:
                raise ListingBroken(f"listing does not advance: it goes on after {page.next_token!r} again",
                                    op="list", url=src.raw)
            seen.add(page.next_token)
            token = page.next_token
    finally:
        await store.close()


def level_rows(page: LevelPage) -> list[ObjectInfo | str]:
    """A one-level page as one list in key order: its objects (ObjectInfo) and its prefixes (str),
    each list already in order (code point order is UTF-8's)."""
    if not page.prefixes:
        return list(page.entries)
    from heapq import merge

    def key(row: ObjectInfo | str) -> str:
        return row if isinstance(row, str) else row.key

    objects: list[ObjectInfo | str] = list(page.entries)
    prefixes: list[ObjectInfo | str] = list(page.prefixes)
    rows: list[ObjectInfo | str] = list(merge(objects, prefixes, key=key))
    return rows


def stepped(agen: AsyncGenerator[T, None]) -> Generator[T, None, None]:
    """An async generator driven from synchronous code by an event loop of its own, one item per
    step; closing the generator (or a consumer that stops early) closes the async one in that loop."""
    loop = asyncio.new_event_loop()
    step: asyncio.Future[T] | None = None
    try:
        while True:
            step = asyncio.ensure_future(agen.__anext__(), loop=loop)
            try:
                yield loop.run_until_complete(step)
            except StopAsyncIteration:
                return
    finally:
        if step is not None and not step.done():  # interrupted (Ctrl-C) in the middle of a step
            step.cancel()
            try:
                _settle(loop, step)
            except (asyncio.CancelledError, Exception):
                pass  # the generator ended with it; aclose() below is then a no-op
        _settle(loop, asyncio.ensure_future(agen.aclose(), loop=loop))
        loop.close()


def _settle(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any]) -> Any:
    """loop.run_until_complete(fut), also after Ctrl-C interrupted an earlier run of the loop between
    its step's end and the callback that stops the loop: that stop, still queued, ends the next run
    early ('Event loop stopped before Future completed'); the loop is simply run again."""
    while True:
        try:
            return loop.run_until_complete(fut)
        except RuntimeError:
            if fut.done():
                raise


def du_groups(url: str, *, s3: S3Options | None = None, depth: int = 0, concurrency: int = 16,
              classes: dict[str, list[int]] | None = None, unsized: list[int] | None = None,
              filters: Filters | None = None) -> Iterator[tuple[str | None, int, int]]:
    """(prefix, objects, bytes) for each prefix `depth` levels below URL, in key order, then
    (None, objects, bytes) for everything. Keys arrive in order, so a prefix is complete when the
    next one starts: one running total at a time, whatever the number of prefixes. `classes`, when
    given, is filled with storage class -> [objects, bytes] (S3 sources; listed as S3 says them)
    by the time the total comes; `unsized`, when given ([0]), counts the objects listed without a
    size (a list/get server's), whose bytes no total holds."""
    from ..planner import resolve_source

    loop = asyncio.new_event_loop()
    try:  # once: the listing below is given it (a HEAD and a LIST of one key, for an S3 prefix)
        resolved = loop.run_until_complete(resolve_source(url, s3))
    finally:
        loop.close()
    src, single = resolved
    cut = 0 if single is not None else len(src.prefix)
    total_o = total_b = 0
    group: str | None = None
    group_o = group_b = 0
    for page in stepped(list_pages(url, s3=s3, concurrency=concurrency, filters=filters, resolved=resolved)):
        for obj in page:
            size = obj.size
            if size is None:
                size = 0
                if unsized is not None:
                    unsized[0] += 1
            total_o += 1
            total_b += size
            if classes is not None and obj.storage_class is not None:
                row = classes.get(obj.storage_class)
                if row is None:
                    row = classes[obj.storage_class] = [0, 0]
                row[0] += 1
                row[1] += size
            if depth:
                rel = obj.key[cut:]
                parts = rel.split("/", depth)
                name = "/".join(parts[:depth]) + ("/" if len(parts) > depth else "")
                if name != group:
                    if group is not None:
                        yield group, group_o, group_b
                    group, group_o, group_b = name, 0, 0
                group_o += 1
                group_b += size
    if group is not None:
        yield group, group_o, group_b
    yield None, total_o, total_b


@dataclass(frozen=True, slots=True, repr=False)
class DuResult:
    """What `du` counted: `objects` and `bytes` under the URL, with depth > 0 `groups`, a list of
    (prefix, objects, bytes) in key order, and `classes`, storage class -> (objects, bytes) for an S3
    source."""

    objects: int
    bytes: int
    groups: list[tuple[str, int, int]] = field(default_factory=list)
    classes: dict[str, tuple[int, int]] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"DuResult(objects={self.objects}, bytes={self.bytes}, groups={len(self.groups)})"


def du(url: str, *, s3: S3Options | None = None, depth: int = 0, concurrency: int = 16,
       filters: Filters | None = None) -> DuResult:
    """The totals of `du_groups`, with the groups kept in a list."""
    groups: list[tuple[str, int, int]] = []
    classes: dict[str, list[int]] = {}
    for prefix, objects, nbytes in du_groups(url, s3=s3, depth=depth, concurrency=concurrency, classes=classes,
                                             filters=filters):
        if prefix is None:
            return DuResult(objects, nbytes, groups, {k: (v[0], v[1]) for k, v in sorted(classes.items())})
        groups.append((prefix, objects, nbytes))
    raise AssertionError("du_groups ends with the total")
