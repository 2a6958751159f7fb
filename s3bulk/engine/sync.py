"""Sync: decide per key, from both listings, what to copy, skip or delete, one work unit at a time.

Both sides list in the same order (UTF-8 bytes of the key), so a unit's keys are compared as a
streaming merge: the source page of the unit against the destination keys of the same key range,
read a page at a time. Nothing holds more than a page of either side, whatever the bucket size.
Sources that can only page by token (list/get servers) are compared key by key with a HEAD/stat
of the destination instead, and cannot `--delete`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import AsyncIterator, Literal

from ..filters import Filters
from ..model import ObjectInfo, WorkUnit

Compare = Literal["default", "size-only", "exact-timestamps", "checksum"]


@dataclass(frozen=True, slots=True)
class SyncOptions:
    delete: bool = False
    dry_run: bool = False
    compare: Compare = "default"
    filters: Filters = Filters()
    json_lines: bool = False     # dry-run lines as JSON
    hash_cache: str | None = None


async def dst_range(dst, dst_prefix: str, after: str | None, until: str | None, page_size: int
                    ) -> AsyncIterator[ObjectInfo]:
    """Destination keys in (after, until] under dst_prefix, a page at a time."""
    unit: WorkUnit | None = WorkUnit(after=after, until=until)
    while unit is not None:
        page = await dst.list_page(dst_prefix, unit, page_size)
        for e in page.entries:
            yield e
        unit = unit.rest(page)


async def merge(src_entries: list[ObjectInfo], src_prefix: str, dst_iter: AsyncIterator[ObjectInfo],
                dst_prefix: str) -> AsyncIterator[tuple[str, ObjectInfo | None, ObjectInfo | None]]:
    """(relative key, source entry or None, destination entry or None) in key order."""
    s_len, d_len = len(src_prefix), len(dst_prefix)
    it = dst_iter.__aiter__()

    async def next_dst() -> ObjectInfo | None:
        try:
            return await it.__anext__()
        except StopAsyncIteration:
            return None

    d = await next_dst()
    for s in src_entries:
        rel = s.key[s_len:]
        rel_b = rel.encode("utf-8", "surrogatepass")
        while d is not None:
            d_rel = d.key[d_len:]
            d_b = d_rel.encode("utf-8", "surrogatepass")
            if d_b < rel_b:
                yield d_rel, None, d
                d = await next_dst()
            else:
                break
        if d is not None and d.key[d_len:] == rel:
            yield rel, s, d
            d = await next_dst()
        else:
            yield rel, s, None
    while d is not None:
        yield d.key[d_len:], None, d
        d = await next_dst()


class Comparator:
    """Decides whether a source object must be copied over its destination counterpart."""

    def __init__(self, compare: Compare, src, dst, hash_cache: str | None) -> None:
        self.compare = compare
        self.src, self.dst = src, dst
        self._cache = None
        if compare == "checksum":
            from ..hashcache import HashCache

            self._cache = HashCache(hash_cache)

    async def differs(self, s: ObjectInfo, d: ObjectInfo) -> bool:
        if s.size is not None and d.size is not None and s.size != d.size:
            return True
        if self.compare == "size-only":
            return False
        if self.compare == "checksum":
            same = await self._same_content(s, d)
            if same is not None:
                return not same
            return False  # nothing to compare content with: equal sizes are all we know
        if s.mtime is None or d.mtime is None:
            return False
        if self.compare == "exact-timestamps":
            return abs(s.mtime - d.mtime) >= 1.0 if _coarse(s, d) else s.mtime != d.mtime
        # default, as aws s3 sync: the source is newer (S3 times have whole seconds)
        return s.mtime - d.mtime >= (1.0 if _coarse(s, d) else 1e-6)

    async def _same_content(self, s: ObjectInfo, d: ObjectInfo) -> bool | None:
        a = await self._etag(self.src, s, self.dst, d)
        b = await self._etag(self.dst, d, self.src, s)
        if a is None or b is None:
            return None
        return a == b

    async def _etag(self, store, info: ObjectInfo, other_store, other: ObjectInfo) -> str | None:
        """The ETag of `info`, computed for a local file the way `other` (an S3 object) was made:
        whole-file MD5, or MD5 of part MD5s with the part size that object really has (asked of
        its store: HEAD partNumber=1), never a guess from its size."""
        if info.etag is not None:
            return info.etag
        root = getattr(store, "root", None)
        if root is None or self._cache is None:
            return None
        part = 0
        if other.etag is not None and "-" in other.etag:
            if not other_store.features.part_sizes:
                return None
            part = await other_store.first_part_size(other.key) or 0
            if not part:
                return None
        import os

        return await asyncio.to_thread(self._cache.etag, os.path.join(root, info.key), part)


def _coarse(a: ObjectInfo, b: ObjectInfo) -> bool:
    """True when one side's times are whole seconds (S3), so sub-second differences mean nothing."""
    return (a.etag is not None) or (b.etag is not None)
