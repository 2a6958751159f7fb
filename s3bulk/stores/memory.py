"""An in-memory store (`memory://NAME/prefix`): the whole contract, no disk, no network.

It exists so the engine (planner, copy, sync decisions, journal, stop/resume) can be tested
in-process in milliseconds with `workers=1`, and so the contract suite has a reference
implementation. Buckets live in a process-global registry (`bucket(name)`), so a test fills
one, runs the engine against `memory://name/...`, and reads the result back; they are not
shared with worker processes (use workers=1).

It behaves like S3 where the two could differ: keys are listed in UTF-8 byte order (code
point order of Python strings, the same thing), ETags are MD5 hex (MD5 of the part MD5s plus
"-N" for N parts), open multipart uploads outlive the store object and are found again by
upload id, a missing bucket, key or upload is NotFound, a read or a copy held to an ETag
(`if_match`, stores/conditions.py) of an object whose ETag is another raises SourceChanged. Unlike S3 it keeps the modification
time it is given (as local files do), so sync tests can set times.

Failures can be injected per bucket (`MemoryBucket.inject`) to exercise the retry wrapper and
the engine's failure paths without a fault proxy.
"""

from __future__ import annotations

import hashlib
import itertools
import time
import uuid
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from ..errors import NotFound, StoreError, Transient, UnsafeKey
from ..model import ObjectInfo, ObjectProps, Page, WorkUnit
from ..errors import DestinationExists
from .conditions import NO_CLOBBER
from ..config.urls import Location
from .base import (WHOLE, Features, GetOptions, GetResult, LevelLister, LevelPage, OpenUpload, PartInfo, ResumableUploads, ServerSideCopier,
                   Store, Traits, Unsupported, Writer, range_result)
from .features import features_of


@dataclass(slots=True)
class MemoryObject:
    data: bytes
    mtime: float
    etag: str


@dataclass(slots=True)
class Fault:
    """Fail `op` (list, head, get, put, upload part, complete, delete, copy; "*" for any) on `key`
    (None: any key) with `error`, the next `times` calls (-1: every call)."""

    op: str
    key: str | None = None
    error: type[StoreError] = Transient
    times: int = 1


@dataclass(slots=True)
class _OpenUpload:
    key: str
    mtime: float | None
    initiated: float = field(default_factory=time.time)
    parts: dict[int, bytes] = field(default_factory=dict)


class MemoryBucket:
    """Objects by key (with the keys kept sorted for listing), open uploads, injected faults and a
    count of calls per operation (what a test asserts retries against)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.objects: dict[str, MemoryObject] = {}
        self._keys: list[str] = []
        self.uploads: dict[str, _OpenUpload] = {}
        self.faults: list[Fault] = []
        self.calls: dict[str, int] = {}

    # what tests use to set up and check

    def put(self, key: str, data: bytes, mtime: float | None = None) -> None:
        """Store an object directly (no faults, no counting)."""
        if key not in self.objects:
            insort(self._keys, key)
        self.objects[key] = MemoryObject(bytes(data), time.time() if mtime is None else mtime,
                                         hashlib.md5(data).hexdigest())

    def remove(self, key: str) -> bool:
        if self.objects.pop(key, None) is None:
            return False
        del self._keys[bisect_left(self._keys, key)]
        return True

    def contents(self, prefix: str = "") -> dict[str, bytes]:
        """{key without prefix: bytes} of every object under prefix."""
        return {k[len(prefix):]: o.data for k, o in self.objects.items() if k.startswith(prefix)}

    def inject(self, op: str, key: str | None = None, error: type[StoreError] = Transient,
               times: int = 1) -> Fault:
        fault = Fault(op, key, error, times)
        self.faults.append(fault)
        return fault

    # what the store uses

    def _check(self, op: str, key: str, url: str) -> None:
        self.calls[op] = self.calls.get(op, 0) + 1
        for fault in self.faults:
            if fault.times != 0 and fault.op in (op, "*") and fault.key in (None, key):
                if fault.times > 0:
                    fault.times -= 1
                raise fault.error("injected fault", op=op, url=url, key=key)

    def keys_after(self, prefix: str, after: str | None) -> Iterator[str]:
        """The sorted keys from the first one above `after` that is not below `prefix`."""
        lo = bisect_left(self._keys, prefix)
        if after is not None:
            lo = max(lo, bisect_right(self._keys, after))
        return (self._keys[i] for i in range(lo, len(self._keys)))


_BUCKETS: dict[str, MemoryBucket] = {}


def bucket(name: str) -> MemoryBucket:
    """The bucket called `name`, created empty if there is none."""
    found = _BUCKETS.get(name)
    if found is None:
        found = _BUCKETS[name] = MemoryBucket(name)
    return found


def drop(name: str) -> None:
    """Forget a bucket (tests clean up with it)."""
    _BUCKETS.pop(name, None)


def _s3_etag(digests: Sequence[bytes]) -> str:
    return hashlib.md5(b"".join(digests)).hexdigest() + f"-{len(digests)}"


class MemoryStore(Writer, ResumableUploads, ServerSideCopier, LevelLister):
    """One bucket of the registry, through the store contract."""

    ordered = True
    traits = Traits(ordered=True, read_into=True, keeps_mtime=True, mtime_precision=1e-9, hashes=frozenset({"s3-etag"}),
                    conditional_reads=True, conditional_writes=True)

    def __init__(self, location: Location) -> None:
        self.location = location
        self.features: Features = features_of(self, self.traits)
        self.name = location.root

    def _bucket(self, op: str, key: str = "") -> MemoryBucket:
        """The bucket, its faults checked for this call; NotFound when it does not exist."""
        b = _BUCKETS.get(self.name)
        url = self.location.url_for(key)
        if b is None:
            raise NotFound("bucket does not exist", op=op, url=url, key=key)
        b._check(op, key, url)
        return b

    def _object(self, op: str, key: str) -> MemoryObject:
        obj = self._bucket(op, key).objects.get(key)
        if obj is None:
            raise NotFound("no such key", op=op, url=self.location.url_for(key), key=key)
        return obj

    async def close(self) -> None:
        pass

    # ---------------------------------------------------------------- reading

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        b = self._bucket("list", prefix)
        entries: list[ObjectInfo] = []
        for key in itertools.islice(b.keys_after(prefix, unit.after), limit + 1):
            if not key.startswith(prefix) or (unit.until is not None and key > unit.until):
                return Page(entries)
            if len(entries) == limit:
                return Page(entries, next_after=entries[-1].key)
            o = b.objects[key]
            entries.append(ObjectInfo(key, len(o.data), o.mtime, o.etag))
        return Page(entries)

    async def list_level(self, prefix: str, token: str | None, limit: int) -> LevelPage:
        """As S3 lists with delimiter "/": a run of keys under one common prefix is stepped over
        by one bisection to the first key past it (prefix "a/" ends before "a0")."""
        b = self._bucket("list", prefix)
        keys, n = b._keys, len(prefix)
        lo = bisect_left(keys, prefix)
        if token is not None:  # a common prefix (a "/" past `prefix`) is stepped over whole
            lo = max(lo, bisect_left(keys, token[:-1] + "0") if token.find("/", n) >= 0 else bisect_right(keys, token))
        entries: list[ObjectInfo] = []
        prefixes: list[str] = []
        last = None
        while lo < len(keys) and keys[lo].startswith(prefix):
            if len(entries) + len(prefixes) == limit:
                return LevelPage(entries, prefixes, last)
            key = keys[lo]
            cut = key.find("/", n)
            if cut < 0:
                o = b.objects[key]
                entries.append(ObjectInfo(key, len(o.data), o.mtime, o.etag))
                last = key
                lo += 1
            else:
                last = key[:cut + 1]
                prefixes.append(last)
                lo = bisect_left(keys, key[:cut] + "0", lo)
        return LevelPage(entries, prefixes)

    async def head(self, key: str) -> ObjectInfo:
        o = self._object("head", key)
        return ObjectInfo(key, len(o.data), o.mtime, o.etag)

    def _version(self, op: str, key: str, o: MemoryObject, want: str | None) -> None:
        """SourceChanged when a conditional read asks for another version (`want`, an ETag) than
        the one stored: S3's 412 to If-Match."""
        if want is not None and want != o.etag:
            from ..errors import SourceChanged

            raise SourceChanged("the source object changed while it was read (412 to If-Match)",
                                op=op, url=self.location.url_for(key), key=key)

    async def get(self, key: str, opts: GetOptions = WHOLE) -> GetResult:
        """Held to opts.if_match (a whole read or a range), as S3 holds a GET that names the
        version."""
        o = self._object("get", key)
        if opts is WHOLE:
            return GetResult(o.data, len(o.data))
        if opts.first is not None:
            return GetResult(o.data[:opts.first], len(o.data))
        if opts.version_id is not None:
            raise Unsupported("this store keeps no versions", op="get", url=self.location.url_for(key), key=key)
        self._version("get", key, o, opts.if_match)
        rng = opts.range
        if rng is None:
            return GetResult(o.data, len(o.data), ObjectProps() if opts.with_props else None)
        start, end = rng
        if end > len(o.data) or start > end:
            raise StoreError(f"range {start}-{end} is outside the object ({len(o.data)} bytes)",
                             op="get", url=self.location.url_for(key), key=key)
        return range_result(o.data[start:end], opts)

    # ---------------------------------------------------------------- writing

    async def prepare(self) -> None:
        bucket(self.name)  # as a local directory is: created when missing

    def _absent(self, b: MemoryBucket, op: str, key: str) -> None:
        """--no-clobber (stores/conditions.NO_CLOBBER): a write onto an existing key is refused, as
        S3 answers 412 to If-None-Match: *."""
        if NO_CLOBBER.get() and key in b.objects:
            raise DestinationExists("already at the destination (--no-clobber): not replaced", op=op,
                                    url=self.location.url_for(key), key=key)

    def _valid(self, op: str, key: str) -> None:
        if not key:
            raise UnsafeKey("empty key", op=op, url=self.location.url_for(key), key=key)

    async def put(self, key: str, data: bytes, mtime: float | None = None, *,
                  props: object = None) -> None:
        """`props` is ignored: this store keeps none (features.props is None)."""
        self._valid("put", key)
        b = self._bucket("put", key)
        self._absent(b, "put", key)
        b.put(key, data, mtime)

    async def start_multipart(self, key: str, size: int, part_size: int,
                              mtime: float | None = None, *, props: object = None) -> "MemoryMultipart":
        self._valid("put", key)
        b = self._bucket("create multipart upload", key)
        upload_id = uuid.uuid4().hex
        b.uploads[upload_id] = _OpenUpload(key, mtime)
        return MemoryMultipart(self, key, upload_id)

    def _upload(self, op: str, key: str, upload_id: str) -> _OpenUpload:
        up = self._bucket(op, key).uploads.get(upload_id)
        if up is None or up.key != key:
            raise NotFound("no such upload", op=op, url=self.location.url_for(key), key=key)
        return up

    async def list_parts(self, key: str, upload_id: str) -> list[PartInfo]:
        up = self._upload("list parts", key, upload_id)
        return [PartInfo(n, len(d), (("ETag", hashlib.md5(d).hexdigest()),)) for n, d in sorted(up.parts.items())]

    async def resume_multipart(self, key: str, upload_id: str, parts: Sequence[PartInfo], *,
                               props: object = None) -> "MemoryMultipart":
        up = self._upload("resume multipart upload", key, upload_id)
        keep = {p.number for p in parts}
        for n in [n for n in up.parts if n not in keep]:  # the caller redoes these
            del up.parts[n]
        return MemoryMultipart(self, key, upload_id)

    async def abort_multipart(self, key: str, upload_id: str) -> None:
        self._upload("abort multipart upload", key, upload_id)
        _BUCKETS[self.name].uploads.pop(upload_id, None)

    async def list_uploads(self, prefix: str, key_marker: str | None = None,
                           upload_marker: str | None = None) -> tuple[list[OpenUpload], tuple[str, str] | None]:
        """Every upload open under prefix, in (key, upload id) order, in one page."""
        b = self._bucket("list multipart uploads", prefix)
        after = (key_marker, upload_marker or "") if key_marker is not None else None
        found = sorted((up.key, uid, up.initiated) for uid, up in b.uploads.items() if up.key.startswith(prefix))
        return [OpenUpload(*u) for u in found if after is None or (u[0], u[1]) > after], None

    async def delete_many(self, keys: Sequence[str]) -> list[tuple[str, str]]:
        failed: list[tuple[str, str]] = []
        for key in keys:
            try:
                self._bucket("delete", key).remove(key)
            except StoreError as exc:
                failed.append((key, str(exc)))
        return failed

    # ---------------------------------------------------------------- server-side copy

    def can_copy_from(self, src: Store) -> bool:
        """The same bucket (`src` as unwrapped by any wrapper); between two buckets the bytes go
        through the engine, so engine tests reach the read/put and multipart paths."""
        return isinstance(src, MemoryStore) and src.name == self.name

    async def copy_from(self, src: Store, src_key: str, dst_key: str, size: int,
                        mtime: float | None = None, *, props: object = None, replace: bool = False,
                        if_match: str | None = None) -> None:
        assert isinstance(src, MemoryStore)
        self._valid("copy", dst_key)
        o = src._object("get", src_key)
        src._version("copy", src_key, o, if_match)
        b = self._bucket("copy", dst_key)
        self._absent(b, "copy", dst_key)
        b.put(dst_key, o.data, mtime)
        b.objects[dst_key].etag = o.etag


class MemoryMultipart:
    """An open upload of the registry; parts may arrive in any order, and again."""

    def __init__(self, store: MemoryStore, key: str, upload_id: str) -> None:
        self.store, self.key, self.upload_id = store, key, upload_id

    async def put_part(self, number: int, offset: int, data: bytes) -> None:
        up = self.store._upload("upload part", self.key, self.upload_id)
        up.parts[number] = bytes(data)  # the caller reuses its buffer

    async def complete(self) -> None:
        s = self.store
        up = s._upload("complete multipart upload", self.key, self.upload_id)
        numbers = sorted(up.parts)
        data = b"".join(up.parts[n] for n in numbers)
        b = _BUCKETS[s.name]
        s._absent(b, "complete multipart upload", self.key)
        b.put(self.key, data, up.mtime)
        b.objects[self.key].etag = _s3_etag([hashlib.md5(up.parts[n]).digest() for n in numbers])
        b.uploads.pop(self.upload_id, None)

    async def abort(self) -> None:
        b = _BUCKETS.get(self.store.name)
        if b is not None:
            b.uploads.pop(self.upload_id, None)
