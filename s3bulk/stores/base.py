"""The store interface: one small protocol per capability, as rclone and obspec do it.

Every store lists and reads (`Store`). Writable stores add `Writer`; stores that can
copy inside themselves add `ServerSideCopier`. The engine asks `isinstance(store,
ServerSideCopier) and store.can_copy_from(src)` and falls back to reading and
writing when the answer is no, so a new backend only implements what it can.

Stores know nothing of concurrency or retries of their own; the engine bounds how
many calls are in flight. Every method raises only s3bulk.errors.StoreError
subclasses: each adapter translates its library's exceptions at this boundary.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Protocol, Sequence, runtime_checkable

from ..model import ObjectInfo, Page, WorkUnit
from ..urls import Location


@runtime_checkable
class Store(Protocol):
    """Read side of the generic list/get contract."""

    location: Location
    #: True when list_page returns keys in UTF-8 byte order and accepts `unit.after`
    #: (so the key space can be cut into ranges); False for token-only paging.
    ordered: bool

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        """One page of keys under `prefix` inside `unit`, in key order."""
        ...

    async def head(self, key: str) -> ObjectInfo:
        """Size (and what else the store knows) of one key; NotFound if absent."""
        ...

    async def read(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        """The object's bytes, or bytes [start, end) of it; Corrupt if fewer arrive."""
        ...

    async def read_first(self, key: str, limit: int) -> tuple[bytes, int]:
        """Up to `limit` first bytes and the total size, in one request: how the engine copies
        objects whose size the listing did not give (small ones whole, large ones in parts)."""
        ...

    async def close(self) -> None: ...


class Multipart(Protocol):
    """An object being written in parts, possibly in parallel and out of order."""

    async def put_part(self, number: int, offset: int, data: bytes) -> None: ...

    async def complete(self) -> None: ...

    async def abort(self) -> None: ...


@runtime_checkable
class Writer(Protocol):
    """Write side: whole objects, multipart objects, deletes."""

    async def prepare(self) -> None:
        """Check (and where it makes sense create) the destination before any object is written."""
        ...

    async def put(self, key: str, data: bytes, mtime: float | None = None) -> None:
        """Write a whole object; it appears under `key` only once complete. Stores that can keep a
        modification time (files) set it to `mtime`, so a later sync sees the two sides as equal."""
        ...

    async def start_multipart(self, key: str, size: int, part_size: int,
                              mtime: float | None = None) -> Multipart: ...

    async def delete_many(self, keys: Sequence[str]) -> list[tuple[str, str]]:
        """Delete keys; returns (key, why) for those that could not be deleted."""
        ...


@runtime_checkable
class ServerSideCopier(Protocol):
    """Optional: copy without the bytes passing through us."""

    def can_copy_from(self, src: Store) -> bool: ...

    async def copy_from(self, src: Store, src_key: str, dst_key: str, size: int,
                        mtime: float | None = None) -> None: ...


MAX_PARTS = 10_000
MIN_PART = 5 * 1024 * 1024


def part_size_for(size: int, preferred: int) -> int:
    """The smallest part size >= preferred (and >= 5 MiB) that keeps `size` within 10,000 parts."""
    part = max(preferred, MIN_PART)
    if size > part * MAX_PARTS:
        mib = 1024 * 1024
        part = -(-size // MAX_PARTS)
        part = -(-part // mib) * mib
    return part


async def upload_in_parts(upload: Multipart, size: int, part: int, concurrency: int,
                          do_part: Callable[[int, int, int], Awaitable[None]]) -> None:
    """Run do_part(number, start, end) for every part, at most `concurrency` at once (never more
    tasks than that exist), then complete the upload. On any failure the upload is aborted and the
    first error itself is raised, not an ExceptionGroup."""
    window = asyncio.Semaphore(concurrency)

    async def one(number: int, start: int) -> None:
        try:
            await do_part(number, start, min(size, start + part))
        finally:
            window.release()

    try:
        async with asyncio.TaskGroup() as tg:
            for number, start in enumerate(range(0, size, part), 1):
                await window.acquire()
                tg.create_task(one(number, start))
        await upload.complete()
    except BaseException as exc:
        await upload.abort()
        if isinstance(exc, BaseExceptionGroup):
            raise exc.exceptions[0] from None
        raise
