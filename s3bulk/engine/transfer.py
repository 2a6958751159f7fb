"""Moving one object from a source store to a destination store.

The three ways, checked in this order:
1. server-side copy, when the destination can copy from the source (same S3
   endpoint and credentials, or two local paths): no bytes pass through us;
2. one read and one put, for objects up to the multipart threshold: the body is
   held once in memory;
3. multipart: parts read as byte ranges and written at their offsets, several in
   flight, each holding its bytes against the worker's byte budget.
"""

from __future__ import annotations

import asyncio
from collections import deque

from ..errors import Corrupt
from ..model import ObjectInfo
from ..stores import ServerSideCopier, Store, Writer, part_size_for
from ..stores.base import upload_in_parts
from .plan import KeyMap, TransferOptions


UNSIZED_PROBE = 1024 * 1024  # first GET of an object of unknown size asks for this much


class ByteBudget:
    """Bounds the bytes of object bodies held in memory by one worker.

    The fast path (room available) does not touch the event loop, so small objects
    pay almost nothing. A request larger than the whole budget is let through when
    nothing else is held, so one huge part can still move.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.used = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    async def acquire(self, n: int) -> None:
        if not self._waiters and (self.used + n <= self.limit or self.used == 0):
            self.used += n
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((n, fut))
        try:
            await fut
        except BaseException:
            if fut.done() and not fut.cancelled():
                self.release(n)
            else:
                try:
                    self._waiters.remove((n, fut))
                except ValueError:
                    pass
            raise

    def release(self, n: int) -> None:
        self.used -= n
        while self._waiters:
            want, fut = self._waiters[0]
            if fut.done():
                self._waiters.popleft()
                continue
            if self.used + want <= self.limit or self.used == 0:
                self._waiters.popleft()
                self.used += want
                fut.set_result(None)
            else:
                break


class Transfer:
    """Copies objects from src to dst for one worker; raises StoreError subclasses on failure."""

    def __init__(self, src: Store, dst: Writer, keymap: KeyMap, options: TransferOptions,
                 budget: ByteBudget) -> None:
        self.src, self.dst, self.keymap, self.options, self.budget = src, dst, keymap, options, budget
        self.server_side = isinstance(dst, ServerSideCopier) and dst.can_copy_from(src)

    async def copy(self, info: ObjectInfo) -> tuple[int, bool]:
        """Copy one object; returns (bytes, whether it was copied server-side)."""
        dst_key = self.keymap(info.key)
        if info.size is None:
            return await self._copy_unsized(info.key, dst_key)
        size = info.size
        if self.server_side:
            await self.dst.copy_from(self.src, info.key, dst_key, size, info.mtime)  # type: ignore[attr-defined]
            return size, True
        if size <= self.options.multipart_threshold:
            await self.budget.acquire(size)
            try:
                await self._put_checked(info.key, dst_key, await self.src.read(info.key), size, info.mtime)
            finally:
                self.budget.release(size)
            return size, False
        await self._multipart(info.key, dst_key, size, info.mtime)
        return size, False

    async def _copy_unsized(self, src_key: str, dst_key: str) -> tuple[int, bool]:
        """The listing gave no size: one GET of the first bytes tells it, and is the whole object
        when small (no extra HEAD per object)."""
        probe = min(self.options.multipart_threshold, UNSIZED_PROBE)
        await self.budget.acquire(probe)
        try:
            data, size = await self.src.read_first(src_key, probe)
            if size <= self.options.multipart_threshold:
                extra = size - len(data)
                if extra > 0:  # bigger than the probe, small enough for one put
                    await self.budget.acquire(extra)
                    try:
                        data += await self.src.read(src_key, len(data), size)
                        await self._put_checked(src_key, dst_key, data, size)
                    finally:
                        self.budget.release(extra)
                else:
                    await self._put_checked(src_key, dst_key, data, size)
                return size, False
        finally:
            self.budget.release(probe)
        await self._multipart(src_key, dst_key, size)
        return size, False

    async def _put_checked(self, src_key: str, dst_key: str, data: bytes, size: int,
                           mtime: float | None = None) -> None:
        if len(data) != size:
            raise Corrupt(f"read {len(data)} bytes, expected {size}", op="get",
                          url=self.src.location.url_for(src_key), key=src_key)
        await self.dst.put(dst_key, data, mtime)

    async def _multipart(self, src_key: str, dst_key: str, size: int, mtime: float | None = None) -> None:
        part = part_size_for(size, self.options.part_size)
        upload = await self.dst.start_multipart(dst_key, size, part, mtime)

        async def one(number: int, start: int, end: int) -> None:
            await self.budget.acquire(end - start)
            try:
                await upload.put_part(number, start, await self.src.read(src_key, start, end))
            finally:
                self.budget.release(end - start)

        await upload_in_parts(upload, size, part, self.options.part_concurrency, one)
