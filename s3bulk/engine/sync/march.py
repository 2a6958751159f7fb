"""Sync: decide per key, from both listings, what to copy, skip or delete, one work unit at a time.

Both sides list in the same order (UTF-8 bytes of the key), so a unit's keys are compared as a
streaming merge (`March`, pure: decisions from two sorted listings): the source page of the unit
against the destination keys of the same key range, read a page at a time. Nothing holds more than a page of either side, whatever the bucket size.
Sources that can only page by token (list/get servers) are compared key by key with a HEAD/stat
of the destination instead, and cannot `--delete`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable, Literal, NamedTuple, Sequence

from ...model import ObjectInfo, WorkUnit
from ...stores import Store
from ...stores.file_times import CopyMarks, Listed, atime_proves
from ..plan import Compare

class dst_range:
    """Destination keys in (after, until] under dst_prefix, a page at a time (an async iterator).

    It also answers `has_folder(key)` for March: a local destination lists files only, so the
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

    async def next_page(self) -> Sequence[ObjectInfo]:
        """The next page's entries in order, empty at the end: the worker's walk takes a page at a
        time (an awaited __anext__ an entry costs a coroutine each)."""
        if self._page:  # what __anext__ left of its page
            left, self._page = self._page[::-1], []
            return left
        while self._unit is not None:
            page = await self.dst.list_page(self.dst_prefix, self._unit, self.page_size)
            self._unit = self._unit.rest(page)
            if page.entries:
                return page.entries
        return ()

    def has_folder(self, key: str) -> bool:
        """Whether a local DST has the directory that the folder marker `key` ("a/b/") became."""
        root = _root_of(self.dst)
        if root is None:
            return False
        import os

        return os.path.isdir(os.path.join(root, key))


Step = Literal["copy", "compare", "delete"]


class Decision(NamedTuple):
    """What to do about one relative key: "copy" (only SRC has it), "compare" (both have it: copy
    when the comparator says they differ), "delete" (only DST has it and --delete allows it).
    A NamedTuple: one is made for every key of a sync, and a frozen dataclass's __init__ (a
    setattr a field) costs twice as much."""

    step: Step
    rel: str
    src: ObjectInfo | None
    dst: ObjectInfo | None


class March:
    """Walks a unit's sorted source page against the same key range of the destination, as rclone's
    march does, and says what to do with each key. Pure: no I/O, so the rules are tested on plain
    lists (tests/test_march.py); the worker feeds it destination entries a page at a time.

    Feed every destination entry in order with `dst(entry)`, then call `end()`; each returns the
    decisions that became certain. Keys compare as UTF-8 bytes (the order every store lists in).

    Rules beyond plain merging:
    - DST-only keys are deleted only with `delete` and when `allows(rel)` (the filters) says so,
      and `keeps(entry, rel)` too when given (the size and age rules: what they leave out stays);
    - a zero-byte folder marker ("a/") at DST stays while SRC has something in that folder: a local
      SRC lists files only, so the marker sorts just before keys it has no object for;
    - a zero-byte folder marker at SRC equals the directory it became at a local DST
      (`has_folder(dst key)`), with no time and the marker's etag, so it is not copied again."""

    def __init__(self, src_entries: Sequence[ObjectInfo], src_prefix: str, dst_prefix: str, *,
                 delete: bool = False, allows: Callable[[str], bool] | None = None,
                 keeps: Callable[[ObjectInfo, str], bool] | None = None,
                 has_folder: Callable[[str], bool] | None = None) -> None:
        self._src, self._i = src_entries, 0
        self._s_len, self._d_len, self._dst_prefix = len(src_prefix), len(dst_prefix), dst_prefix
        self._delete, self._allows, self._keeps, self._has_folder = delete, allows, keeps, has_folder

    def dst(self, d: ObjectInfo) -> list[Decision]:
        """The next destination entry (in key order): the decisions it settles."""
        out: list[Decision] = []
        d_rel = d.key[self._d_len:]
        src = self._src
        while self._i < len(src):
            s = src[self._i]
            rel = s.key[self._s_len:]
            # str order is code point order, which is the UTF-8 bytes' order (surrogates too, as
            # surrogatepass encodes them): compared as they are, no encode a key
            if d_rel < rel:
                if not (d.size == 0 and d_rel.endswith("/") and rel.startswith(d_rel)):
                    self._dst_only(d_rel, d, out)
                return out
            self._i += 1
            if d_rel == rel:
                out.append(Decision("compare", rel, s, d))
                return out
            self._src_only(rel, s, out)
        self._dst_only(d_rel, d, out)  # past the source page's last key
        return out

    def end(self) -> list[Decision]:
        """The destination has no more entries: the rest of the source page is SRC-only."""
        out: list[Decision] = []
        for s in self._src[self._i:]:
            self._src_only(s.key[self._s_len:], s, out)
        self._i = len(self._src)
        return out

    def _src_only(self, rel: str, s: ObjectInfo, out: list[Decision]) -> None:
        if s.size == 0 and (rel == "" or rel.endswith("/")) and self._has_folder is not None \
                and self._has_folder(self._dst_prefix + rel):
            out.append(Decision("compare", rel, s, ObjectInfo(self._dst_prefix + rel, 0, None, s.etag)))
        else:
            out.append(Decision("copy", rel, s, None))

    def _dst_only(self, rel: str, d: ObjectInfo, out: list[Decision]) -> None:
        if self._delete and (self._allows is None or self._allows(rel)) and (self._keeps is None or self._keeps(d, rel)):
            out.append(Decision("delete", rel, None, d))


def march(src_entries: Sequence[ObjectInfo], dst_entries: Iterable[ObjectInfo], src_prefix: str = "",
          dst_prefix: str = "", **rules: Any) -> list[Decision]:
    """All decisions for two whole sorted listings (March fed in one go; for tests and small ranges)."""
    m = March(src_entries, src_prefix, dst_prefix, **rules)
    out: list[Decision] = []
    for d in dst_entries:
        out.extend(m.dst(d))
    out.extend(m.end())
    return out


class Comparator:
    """Decides whether a source object must be copied over its destination counterpart."""

    def __init__(self, compare: Compare, src, dst, hash_cache: str | None) -> None:
        self.compare = compare
        self.src, self.dst = src, dst
        self._cache = None
        # with a report: key -> "ALGORITHM:value" of the checksum that proved it the same ("etag:"
        # for an ETag computed from a local file), taken by the worker as it reports the key
        self.record = False
        self.checksums: dict[str, str] = {}
        # an S3 source against local files: a file may carry its object's stored time, not its
        # LastModified (_file_of)
        self._times_kept = src.features.props == "s3" and isinstance(dst, CopyMarks)
        if self._times_kept:
            dst.list_atimes()  # a download's mark is in the atime too: read with the listing's stat
        if compare == "checksum":
            from .hashcache import HashCache

            self._cache = HashCache(hash_cache)

    def differs_now(self, s: ObjectInfo, d: ObjectInfo) -> bool | None:
        """Whether `s` must be copied over `d`, where no request is needed (sizes, times, the mark a
        download left: a re-sync's every object, usually), in no coroutine of its own; None where
        one is (differs_later)."""
        if s.size is not None and d.size is not None and s.size != d.size:
            return True
        compare = self.compare
        if compare == "size-only":
            return False
        if compare == "checksum":
            return None
        if s.mtime is None or d.mtime is None:
            return False
        if compare == "exact-timestamps" and self.dst.features.keeps_mtime:
            # As aws-cli's option: only a DST that keeps the source's time (local disk) can match it
            # exactly; an S3 object's time is when it was written, so there the default rule applies
            # (else every upload would be copied again on every run).
            differ = abs(s.mtime - d.mtime) >= 1.0 if _coarse(s, d) else s.mtime != d.mtime
        else:
            # default, as aws s3 sync: the source is newer (S3 times have whole seconds)
            differ = s.mtime - d.mtime >= (1.0 if _coarse(s, d) else 1e-6)
        if differ and self._times_kept:
            # the mark a download left: in the atime the listing read (no syscall), else (a read
            # moved the atime, another tool's file) in the xattr; none: _file_of asks S3
            if isinstance(d, Listed) and atime_proves(d.atime_ns, s.mtime, d.mtime):
                return False
            mark = self.dst.copy_of(d.key)
            if mark is None:
                return None
            return abs(mark[0] - s.mtime) >= 1e-3 or abs(mark[1] - d.mtime) >= _SAME_TIME
        return differ

    async def differs_later(self, s: ObjectInfo, d: ObjectInfo) -> bool:
        """What differs_now left open (None): the contents compared (--checksum), or a file
        without its download's mark asked of S3 (_file_of)."""
        if self.compare == "checksum":
            same = await self._same_content(s, d)
            if same is not None:
                return not same
            return False  # nothing to compare content with: equal sizes are all we know
        return not await self._file_of(s, d)

    async def _file_of(self, s: ObjectInfo, d: ObjectInfo) -> bool:
        """Whether the local file `d` is the S3 object `s` though their times differ: a download
        gave the file the time the object carries in x-amz-meta-mtime (stores/file_times.py), older
        than the object's LastModified. The mark the download left on the file says so without a
        request; a file without one (another tool's download, a filesystem without user xattrs)
        costs one HEAD, asked only of keys the times alone would copy, and is marked when it
        matches, so the next run asks nothing. Called once differs_now found the file without a
        mark (it reads the marks: most files have one)."""
        assert s.mtime is not None and d.mtime is not None
        from ...errors import S3BulkError
        from ...stores import file_times

        try:
            props = await self.src.read_props(s.key)
        except S3BulkError:
            return False  # (gone since it was listed, say): copied, and its copy says what is wrong
        stored = file_times.stored_mtime(props.metadata)
        if stored is None or abs(stored - d.mtime) >= _SAME_TIME:
            return False
        await asyncio.to_thread(self.dst.mark_copy_of, d.key, s.mtime, d.mtime)
        return True

    async def _same_content(self, s: ObjectInfo, d: ObjectInfo) -> bool | None:
        """Equal ETags mean equal bytes. Different ones need not (SSE-KMS ETags are no MD5, another
        tool's part size gives another multipart ETag): then the objects' own additional checksums
        decide when both sides can give one, else the ETags do. Two empty objects hold the same
        bytes whatever their ETags say (a folder marker and the directory it became among them)."""
        if s.size == 0 and d.size == 0:
            return True
        a = await self._etag(self.src, s, self.dst, d)
        b = await self._etag(self.dst, d, self.src, s)
        if a is not None and a == b:
            if self.record and s.etag is None:  # computed from the local file: the report keeps it
                self.checksums[s.key] = f"etag:{a}"
            return True
        by_sum = await self._same_checksum(s, d)
        if by_sum is not None:
            return by_sum
        if a is None or b is None:
            return None
        return False

    async def _same_checksum(self, s: ObjectInfo, d: ObjectInfo) -> bool | None:
        """Compare by additional checksum (stores/checksums.py): two stores that carry them when both objects
        have a FULL_OBJECT one of the same algorithm; a local file against an object's checksum,
        computed the same way (composite ones with the object's real part size). None: no verdict."""
        from ...stores.checksums import available

        src_sum = await _object_checksum(self.src, s.key)
        dst_sum = await _object_checksum(self.dst, d.key)
        if src_sum is not None and dst_sum is not None:
            if src_sum.algorithm == dst_sum.algorithm and src_sum.kind == dst_sum.kind == "FULL_OBJECT":
                if self.record and src_sum.value == dst_sum.value:
                    self.checksums[s.key] = f"{src_sum.algorithm}:{src_sum.value}"
                return src_sum.value == dst_sum.value
            return None
        for local, info, remote, other, remote_sum in ((self.src, s, self.dst, d, dst_sum),
                                                       (self.dst, d, self.src, s, src_sum)):
            root = _root_of(local)
            if root is None or remote_sum is None or self._cache is None or not available(remote_sum.algorithm):
                continue
            part = 0
            if remote_sum.kind == "COMPOSITE":
                if not remote.features.part_sizes:
                    return None
                part = await remote.first_part_size(other.key) or 0
                if not part:
                    return None
            import os

            mine = await asyncio.to_thread(self._cache.checksum, os.path.join(root, info.key),
                                           remote_sum.algorithm, part)
            if self.record and mine == remote_sum.value:
                self.checksums[s.key] = f"{remote_sum.algorithm}:{mine}"
            return mine == remote_sum.value
        return None

    async def _etag(self, store, info: ObjectInfo, other_store, other: ObjectInfo) -> str | None:
        """The ETag of `info`, computed for a local file the way `other` (an S3 object) was made:
        whole-file MD5, or MD5 of part MD5s with the part size that object really has (asked of
        its store: HEAD partNumber=1), never a guess from its size."""
        if info.etag is not None:
            # an ETag stands for the bytes only where the store says so (not an SSE-C object's)
            return info.etag if "s3-etag" in store.features.hashes else None
        root = _root_of(store)
        if root is None or self._cache is None or \
                (other.etag is not None and "s3-etag" not in other_store.features.hashes):
            return None  # (an MD5 of the file would be compared with an ETag that is none)
        part = 0
        if other.etag is not None and "-" in other.etag:
            if not other_store.features.part_sizes:
                return None
            part = await other_store.first_part_size(other.key) or 0
            if not part:
                return None
        import os

        return await asyncio.to_thread(self._cache.etag, os.path.join(root, info.key), part)


def _root_of(store: Store) -> str | None:
    """The directory whose files are `store`'s objects (a local store's root), else None."""
    location = store.location
    return location.root if location.is_local else None


async def _object_checksum(store, key: str):
    """The object's additional checksum where its store has them (features.checksums), else None."""
    if not store.features.checksums:
        return None
    return await store.object_checksum(key)


_SAME_TIME = 2e-6  # a file time set from a stored one reads back within a float's microsecond


def _coarse(a: ObjectInfo, b: ObjectInfo) -> bool:
    """True when one side's times are whole seconds (S3), so sub-second differences mean nothing."""
    return (a.etag is not None) or (b.etag is not None)
