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
    check: bool = False          # `s3bulk check`: a dry run that reports each difference and its kind


class dst_range:
    """Destination keys in (after, until] under dst_prefix, a page at a time (an async iterator).

    It also answers `has_folder(key)` for merge: a local destination lists files only, so the
    directory a zero-byte "folder/" marker became is looked up by name instead."""

    def __init__(self, dst, dst_prefix: str, after: str | None, until: str | None, page_size: int) -> None:
        self.dst, self.dst_prefix, self.page_size = dst, dst_prefix, page_size
        self._unit: WorkUnit | None = WorkUnit(after=after, until=until)
        self._page: list[ObjectInfo] = []

    def __aiter__(self) -> "dst_range":
        return self

    async def __anext__(self) -> ObjectInfo:
        while not self._page:
            if self._unit is None:
                raise StopAsyncIteration
            page = await self.dst.list_page(self.dst_prefix, self._unit, self.page_size)
            self._page = list(reversed(page.entries))
            self._unit = self._unit.rest(page)
        return self._page.pop()

    def has_folder(self, key: str) -> bool:
        """Whether a local DST has the directory that the folder marker `key` ("a/b/") became."""
        root = getattr(self.dst, "root", None)
        if not isinstance(root, str):
            return False
        import os

        return os.path.isdir(os.path.join(root, key))


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
                # a folder marker at DST stays while SRC has something in that folder (a marker
                # sorts just before its folder's keys): only files are objects at a local SRC
                if not (d.size == 0 and d_rel.endswith("/") and rel.startswith(d_rel)):
                    yield d_rel, None, d
                d = await next_dst()
            else:
                break
        if d is not None and d.key[d_len:] == rel:
            yield rel, s, d
            d = await next_dst()
        elif s.size == 0 and (rel == "" or rel.endswith("/")) and hasattr(dst_iter, "has_folder") \
                and dst_iter.has_folder(dst_prefix + rel):
            # a zero-byte folder marker is equal to the directory it became at a local DST: no time
            # (a directory's mtime follows its content) and the marker's etag (equal under --checksum)
            yield rel, s, ObjectInfo(dst_prefix + rel, 0, None, s.etag)
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
        if self.compare == "exact-timestamps" and self.dst.features.keeps_mtime:
            # As aws-cli's option: only a DST that keeps the source's time (local disk) can match it
            # exactly; an S3 object's time is when it was written, so there the default rule applies
            # (else every upload would be copied again on every run).
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
