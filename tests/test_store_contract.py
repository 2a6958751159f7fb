"""One contract, the same cases, every store (as rclone's fstests.Run and object_store's integration.rs).

Every case below runs against: the in-memory store, local files (tmp_path), S3 on both data
paths (lean and botocore, against LocalStack), the list/get store over a real `s3bulk serve`,
and the retry wrapper around each of them. A case that needs a capability runs whenever the
store declares it (so a store that loses a capability it declares fails here), and is skipped
only when the store declares it does not have it, after checking that it indeed does not.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest

from conftest import write_tree
from s3bulk.errors import NotFound
from s3bulk.model import ObjectInfo, WorkUnit
from s3bulk.stores import (Features, IntoReader, ResumableUploads, ServerSideCopier, Store, Unsupported, Writer,
                           unwrap)
from s3bulk.stores import memory
from s3bulk.stores.resilient import ResilienceOptions, wrap
from s3bulk.urls import Location, S3Options, parse_location

MiB = 1024 * 1024

# Valid as S3 keys, as local paths and as list/get names. Their UTF-8 byte order is not the
# order of a directory walk ("a-b" < "a/b" < "a0"), nor UTF-16 order ("\uff5e" < "😀" in UTF-8,
# the other way round in UTF-16), and several are prefixes of others ("ab" of "abc", "a" of most).
KEYS = ["a-b", "a.b", "a/b", "a/c d", "a0", "ab", "abc", "b+c", "b%20c", "b?c#d", "e\u0301", "ü",
        "日本/語", "\uff5e", "😀", "😀\U00010000", "\U00010000/ü"]


def utf8_sorted(keys: list[str]) -> list[str]:
    return sorted(keys, key=lambda k: k.encode("utf-8"))


def body(key: str, size: int = 37) -> bytes:
    """Distinct bytes per key."""
    seed = key.encode("utf-8")
    return (seed * (size // max(1, len(seed)) + 1))[:size]


class Harness:
    """One store under test: seeds objects behind its back, opens it (as often as a case needs,
    wrapped or not), and closes what it opened."""

    kind = ""

    def __init__(self, wrapped: bool) -> None:
        self.wrapped = wrapped
        self.opened: list[Any] = []

    def seed(self, objects: dict[str, bytes]) -> None:
        raise NotImplementedError

    async def _open(self) -> Any:
        raise NotImplementedError

    async def _open_missing(self) -> Any | None:
        """The same kind of store on a bucket/directory that does not exist (None: no such thing)."""
        return None

    def _finish(self, store: Any) -> Any:
        if self.wrapped:
            store = wrap(store, ResilienceOptions(retries=2, backoff_base=0.01))
        self.opened.append(store)
        return store

    async def open(self) -> Any:
        store = self._finish(await self._open())
        if store.features.write:
            await store.prepare()
        return store

    async def open_missing(self) -> Any | None:
        store = await self._open_missing()
        return None if store is None else self._finish(store)

    async def close(self) -> None:
        for store in self.opened:
            await store.close()
        self.opened.clear()

    def cleanup(self) -> None:
        pass


class MemoryHarness(Harness):
    kind = "memory"

    def __init__(self, wrapped: bool) -> None:
        super().__init__(wrapped)
        self.name = f"contract-{uuid.uuid4().hex[:12]}"
        memory.bucket(self.name)

    def seed(self, objects: dict[str, bytes]) -> None:
        for k, v in objects.items():
            memory.bucket(self.name).put(k, v)

    async def _open(self) -> Any:
        return memory.MemoryStore(parse_location(f"memory://{self.name}/"))

    async def _open_missing(self) -> Any:
        return memory.MemoryStore(parse_location(f"memory://missing-{uuid.uuid4().hex[:12]}/"))

    def cleanup(self) -> None:
        memory.drop(self.name)


class LocalHarness(Harness):
    kind = "local"

    def __init__(self, wrapped: bool, root: Path) -> None:
        super().__init__(wrapped)
        self.root = root

    def seed(self, objects: dict[str, bytes]) -> None:
        write_tree(self.root, objects)

    async def _open(self) -> Any:
        from s3bulk.stores.local import LocalStore

        return LocalStore(parse_location(str(self.root)))

    async def _open_missing(self) -> Any:
        from s3bulk.stores.local import LocalStore

        return LocalStore(parse_location(str(self.root.parent / "missing")))


class S3Harness(Harness):
    def __init__(self, wrapped: bool, lean: bool, s3: Any, endpoint: str) -> None:
        super().__init__(wrapped)
        self.kind = "s3-lean" if lean else "s3-botocore"
        self.lean, self.s3, self.endpoint = lean, s3, endpoint
        self.bucket = f"t-{uuid.uuid4().hex[:20]}"
        s3.create_bucket(Bucket=self.bucket)

    def seed(self, objects: dict[str, bytes]) -> None:
        for k, v in objects.items():
            self.s3.put_object(Bucket=self.bucket, Key=k, Body=v)

    async def _s3(self, bucket: str) -> Any:
        from s3bulk.stores.s3 import S3Store

        loc = parse_location(f"s3://{bucket}/", S3Options(endpoint_url=self.endpoint))
        store = await S3Store(loc, lean=self.lean).open()
        # the lean case must really be on the lean path (it falls back to botocore on its own)
        assert (store._wire is not None) == self.lean
        return store

    async def _open(self) -> Any:
        return await self._s3(self.bucket)

    async def _open_missing(self) -> Any:
        return await self._s3(f"t-missing-{uuid.uuid4().hex[:12]}")


class ListGetHarness(Harness):
    """A directory served by `s3bulk serve` (three names a page), started on first open."""

    kind = "listget"

    def __init__(self, wrapped: bool, root: Path, start: Callable[..., str]) -> None:
        super().__init__(wrapped)
        self.root, self.start, self.url = root, start, ""
        root.mkdir(parents=True, exist_ok=True)

    def seed(self, objects: dict[str, bytes]) -> None:
        assert not self.url, "seed before the server starts: it caches directory listings"
        write_tree(self.root, objects)

    async def _open(self) -> Any:
        from s3bulk.stores.listget import ListGetStore

        if not self.url:
            self.url = self.start(str(self.root), "--page-size", "3", "--processes", "1")
        return ListGetStore(parse_location(self.url + "/"))


STORES = ["memory", "local", "s3-lean", "s3-botocore", "listget"]


@pytest.fixture(params=[(k, w) for w in (False, True) for k in STORES],
                ids=lambda p: p[0] + ("+retry" if p[1] else ""))
def harness(request, tmp_path) -> Harness:
    kind, wrapped = request.param
    h: Harness
    if kind == "memory":
        h = MemoryHarness(wrapped)
    elif kind == "local":
        h = LocalHarness(wrapped, tmp_path / "root")
    elif kind.startswith("s3"):
        h = S3Harness(wrapped, kind == "s3-lean", request.getfixturevalue("s3"),
                      request.getfixturevalue("endpoint"))
    else:
        h = ListGetHarness(wrapped, tmp_path / "served", request.getfixturevalue("listget_server"))
    yield h
    h.cleanup()


def run(h: Harness, case: Callable[[Any], Awaitable[None]]) -> None:
    """Open the store in a fresh event loop, run the case, close everything."""

    async def go() -> None:
        store = await h.open()
        try:
            await case(store)
        finally:
            await h.close()

    asyncio.run(go())


async def list_all(store: Any, prefix: str = "", limit: int = 3, unit: WorkUnit | None = None) -> list[ObjectInfo]:
    out: list[ObjectInfo] = []
    u: WorkUnit | None = unit or WorkUnit()
    pages = 0
    while u is not None:
        page = await store.list_page(prefix, u, limit)
        assert len(page.entries) <= limit or not store.features.ordered
        out += page.entries
        u = u.rest(page)
        pages += 1
        assert pages < 1000, "listing does not end"
    return out


async def _lacks(store: Any, method: str, *args: Any) -> None:
    """The store declares it cannot do `method`: it has no such method, or the method says Unsupported."""
    fn = getattr(store, method, None)
    if fn is not None:
        with pytest.raises(Unsupported):
            await fn(*args)


async def require(store: Any, capability: str) -> None:
    """Go on when the store declares `capability`; otherwise check it really lacks it and skip."""
    if getattr(store.features, capability):
        return
    if capability == "write":
        assert not isinstance(store, Writer)
    elif capability == "read_into":
        await _lacks(store, "read_into", "k", 0, 1, memoryview(bytearray(1)))
    elif capability == "resumable_uploads":
        await _lacks(store, "list_parts", "k", "id")
        await _lacks(store, "resume_multipart", "k", "id", [])
        await _lacks(store, "abort_multipart", "k", "id")
        if store.features.write:  # its uploads have no id the journal could keep
            upload = await store.start_multipart("no-id", 3, MiB)
            assert upload.upload_id is None
            await upload.abort()
    elif capability == "server_side_copy":
        assert not (isinstance(store, ServerSideCopier) and store.can_copy_from(store))
        await _lacks(store, "copy_from", store, "k", "k2", 1)
    pytest.skip(f"declares no {capability}")


# ------------------------------------------------------------------------------------ declaration


def test_declares_its_features(harness):
    async def case(store: Any) -> None:
        f = store.features
        assert isinstance(f, Features) and isinstance(store, Store)
        assert store.ordered == f.ordered
        assert isinstance(store, Writer) == f.write
        if f.read_into:
            assert isinstance(store, IntoReader)
        if f.resumable_uploads:
            assert f.write and isinstance(store, ResumableUploads)
        if f.server_side_copy:
            assert f.write and isinstance(store, ServerSideCopier)
        assert f.mtime_precision is None or f.mtime_precision > 0
        assert f.hashes <= {"s3-etag"}
        assert store.location.kind in ("memory", "local", "s3", "http")
        if harness.wrapped:
            inner = store.unwrap()
            assert unwrap(store) is inner and inner.features == f and inner.location == store.location

    run(harness, case)


# ------------------------------------------------------------------------------------ listing


def test_lists_every_key_once_in_utf8_order_page_by_page(harness):
    harness.seed({k: body(k) for k in KEYS})

    async def case(store: Any) -> None:
        listed = await list_all(store, "", 3)
        keys = [e.key for e in listed]
        assert sorted(keys) == sorted(KEYS) and len(keys) == len(KEYS)
        if store.features.ordered:
            assert keys == utf8_sorted(KEYS)
        for e in listed:
            assert e.size in (None, len(body(e.key)))
            if e.size is not None and store.features.mtime_precision is not None:
                assert e.mtime is not None
            if "s3-etag" in store.features.hashes:
                assert e.etag == hashlib.md5(body(e.key)).hexdigest()
            elif e.size is not None:
                assert e.etag is None

    run(harness, case)


def test_lists_under_a_prefix(harness):
    harness.seed({k: body(k) for k in KEYS})

    async def case(store: Any) -> None:
        for prefix in ("a", "a/", "ab", "日本/", "😀", "zzz", "a/c"):
            want = utf8_sorted([k for k in KEYS if k.startswith(prefix)])
            keys = [e.key for e in await list_all(store, prefix, 2)]
            assert (keys if store.features.ordered else sorted(keys, key=str.encode)) == want, prefix

    run(harness, case)


def test_key_range_bounds(harness):
    harness.seed({k: body(k) for k in KEYS})
    ordered = utf8_sorted(KEYS)

    async def case(store: Any) -> None:
        if not store.features.ordered:
            # declared token-only paging: `after` is not honoured, so the key space cannot be cut
            page = await store.list_page("", WorkUnit(after=ordered[-2]), 100)
            assert any(e.key <= ordered[-2] for e in page.entries)
            pytest.skip("declares no ordered listing")
        bounds = [(None, None), ("a", "a0"), ("a-b", "a/b"), ("a/", "ab"), ("ab", None), (None, "a.b"),
                  ("\uff5e", "😀"), ("😀", None), ("😀", "😀\U00010000"), ("b", "b?"), (ordered[-1], None), ("a/b", "a/b")]
        for after, until in bounds:
            want = [k for k in ordered if (after is None or k.encode() > after.encode())
                    and (until is None or k.encode() <= until.encode())]
            for limit in (1, 2, 1000):
                got = [e.key for e in await list_all(store, "", limit, WorkUnit(after=after, until=until))]
                assert got == want, (after, until, limit)
        got = [e.key for e in await list_all(store, "a", 1, WorkUnit(after="a-b", until="ab"))]
        assert got == ["a.b", "a/b", "a/c d", "a0", "ab"]

    run(harness, case)


# ------------------------------------------------------------------------------------ reading


def test_head_and_ranged_reads(harness):
    data = os.urandom(1000)
    harness.seed({"d/obj": data, "d/odd key ü+😀": b"odd"})

    async def case(store: Any) -> None:
        info = await store.head("d/obj")
        assert info.key == "d/obj" and info.size == 1000
        assert (info.mtime is None) == (store.features.mtime_precision is None)
        assert await store.read("d/obj") == data
        for start, end in ((0, 1), (10, 20), (999, 1000), (0, 1000), (5, 5)):
            assert await store.read("d/obj", start, end) == data[start:end], (start, end)
        assert await store.read_first("d/obj", 10) == (data[:10], 1000)
        assert await store.read_first("d/obj", 5000) == (data, 1000)
        assert await store.read("d/odd key ü+😀") == b"odd"
        assert (await store.head("d/odd key ü+😀")).size == 3

    run(harness, case)


def test_zero_byte_object(harness):
    harness.seed({"empty": b"", "full": b"x"})

    async def case(store: Any) -> None:
        assert (await store.head("empty")).size == 0
        assert await store.read("empty") == b""
        assert await store.read_first("empty", 1024) == (b"", 0)
        listed = {e.key: e.size for e in await list_all(store)}
        assert listed.keys() == {"empty", "full"} and listed["empty"] in (0, None)

    run(harness, case)


def test_read_into_a_buffer(harness):
    data = os.urandom(3000)
    harness.seed({"obj": data})

    async def case(store: Any) -> None:
        await require(store, "read_into")
        buf = memoryview(bytearray(4096))
        got = await store.read_into("obj", 100, 2100, buf)
        assert bytes(got) == data[100:2100]
        assert got.obj is buf.obj  # the caller's memory, not a fresh copy
        got = await store.read_into("obj", 2999, 3000, buf)
        assert bytes(got) == data[2999:]
        with pytest.raises(NotFound):
            await store.read_into("missing", 0, 10, buf)

    run(harness, case)


def test_missing_key_is_not_found(harness):
    harness.seed({"there": b"x", "dir/inside": b"y"})

    async def case(store: Any) -> None:
        for key in ("missing", "dir/missing", "ther", "dir/inside/more"):
            with pytest.raises(NotFound):
                await store.head(key)
            with pytest.raises(NotFound):
                await store.read(key)
            with pytest.raises(NotFound):
                await store.read(key, 0, 1)
            with pytest.raises(NotFound):
                await store.read_first(key, 10)

    run(harness, case)


def test_missing_bucket_is_not_found(harness):
    async def case(store: Any) -> None:
        missing = await harness.open_missing()
        if missing is None:
            pytest.skip("a list/get server has no buckets or directories to miss")
        with pytest.raises(NotFound):
            await missing.list_page("", WorkUnit(), 10)
        with pytest.raises(NotFound):
            await missing.head("k")

    run(harness, case)


# ------------------------------------------------------------------------------------ writing


def test_put_read_back_and_replace(harness):
    async def case(store: Any) -> None:
        await require(store, "write")
        old = 1_000_000_000.0  # 2001: far from now, whole seconds
        for key in KEYS:
            await store.put(key, body(key, 100), old)
        await store.put("zero", b"", old)
        listed = {e.key: e for e in await list_all(store, "", 1000)}
        assert sorted(listed) == sorted(KEYS + ["zero"])
        for key in KEYS + ["zero"]:
            want = body(key, 100) if key != "zero" else b""
            assert await store.read(key) == want
            info = await store.head(key)
            assert info.size == len(want) == listed[key].size
            f = store.features
            if f.keeps_mtime:
                assert abs(info.mtime - old) <= f.mtime_precision
            else:
                assert info.mtime is None or abs(info.mtime - old) > 86400
            if "s3-etag" in f.hashes:
                assert info.etag == listed[key].etag == hashlib.md5(want).hexdigest()
        await store.put("a-b", b"replaced")
        assert await store.read("a-b") == b"replaced"
        assert (await store.head("a-b")).size == 8

    run(harness, case)


PART = 5 * MiB  # the smallest part S3 takes (the last may be smaller)


def _big() -> bytes:
    return os.urandom(PART) + b"tail-of-the-object" * 100


def _parts(data: bytes) -> list[tuple[int, int, bytes]]:
    return [(n, off, data[off:off + PART]) for n, off in enumerate(range(0, len(data), PART), 1)]


def _multipart_etag(data: bytes) -> str:
    digests = b"".join(hashlib.md5(p).digest() for _, _, p in _parts(data))
    return hashlib.md5(digests).hexdigest() + f"-{len(_parts(data))}"


def test_multipart_upload_in_any_order(harness):
    data = _big()

    async def case(store: Any) -> None:
        await require(store, "write")
        upload = await store.start_multipart("big/obj", len(data), PART, 1_000_000_000.0)
        assert (upload.upload_id is not None) == store.features.resumable_uploads
        buf = bytearray(PART)
        for number, offset, part in reversed(_parts(data)):
            view = memoryview(buf)[:len(part)]
            view[:] = part
            await upload.put_part(number, offset, view)  # the engine reuses its part buffers
        with pytest.raises(NotFound):
            await store.head("big/obj")  # nothing is visible before completion
        await upload.complete()
        assert await store.read("big/obj") == data
        info = await store.head("big/obj")
        assert info.size == len(data)
        if "s3-etag" in store.features.hashes:
            assert info.etag == _multipart_etag(data)
        if store.features.keeps_mtime:
            assert abs(info.mtime - 1_000_000_000.0) <= store.features.mtime_precision

    run(harness, case)


def test_multipart_abort_leaves_nothing(harness):
    async def case(store: Any) -> None:
        await require(store, "write")
        upload = await store.start_multipart("gone", 2 * PART, PART)
        await upload.put_part(1, 0, b"x" * PART)
        await upload.abort()
        with pytest.raises(NotFound):
            await store.head("gone")
        assert [e.key for e in await list_all(store)] == []
        if upload.upload_id is not None:
            with pytest.raises(NotFound):
                await store.list_parts("gone", upload.upload_id)
        if harness.kind == "local":
            assert not list(harness.root.rglob("*s3bulk*")), "temporary file left behind"

    run(harness, case)


def test_multipart_resume_by_upload_id_from_another_store(harness):
    data = _big()
    (n1, o1, p1), (n2, o2, p2) = _parts(data)

    async def case(store: Any) -> None:
        await require(store, "resumable_uploads")
        upload = await store.start_multipart("resumed", len(data), PART)
        upload_id = upload.upload_id
        await upload.put_part(n1, o1, p1)
        # a later run, with its own store, finds the upload by its id
        later = await harness.open()
        parts = await later.list_parts("resumed", upload_id)
        assert [(p.number, p.size) for p in parts] == [(1, PART)]
        resumed = await later.resume_multipart("resumed", upload_id, parts)
        assert resumed.upload_id == upload_id
        await resumed.put_part(n2, o2, p2)
        await resumed.complete()
        assert await later.read("resumed") == data
        if "s3-etag" in store.features.hashes:
            assert (await later.head("resumed")).etag == _multipart_etag(data)
        with pytest.raises(NotFound):
            await later.list_parts("resumed", upload_id)  # completed: no longer open

    run(harness, case)


def test_multipart_abort_by_upload_id(harness):
    async def case(store: Any) -> None:
        await require(store, "resumable_uploads")
        upload = await store.start_multipart("aborted", 2 * PART, PART)
        await upload.put_part(1, 0, b"y" * PART)
        later = await harness.open()
        await later.abort_multipart("aborted", upload.upload_id)
        with pytest.raises(NotFound):
            await later.list_parts("aborted", upload.upload_id)
        with pytest.raises(NotFound):
            await later.head("aborted")
        with pytest.raises(NotFound):
            await later.list_parts("aborted", "no-such-upload-" + uuid.uuid4().hex)

    run(harness, case)


def test_list_open_uploads_under_a_prefix(harness):
    """ListMultipartUploads: what finds an upload nothing recorded (engine/leftovers.py)."""
    async def case(store: Any) -> None:
        await require(store, "resumable_uploads")
        before = time.time()
        made = [(key, (await store.start_multipart(key, 2 * PART, PART)).upload_id)
                for key in ("up/a", "up/a", "up/b", "upx")]
        found, more = await store.list_uploads("up/")
        assert more is None
        assert sorted((u.key, u.upload_id) for u in found) == sorted(made[:3])
        assert [u.key for u in found] == ["up/a", "up/a", "up/b"]  # in key order
        assert all(u.initiated is None or u.initiated >= before - 60 for u in found)
        for key, upload_id in made:
            await store.abort_multipart(key, upload_id)
        assert (await store.list_uploads("up"))[0] == []

    run(harness, case)


def test_delete_many(harness):
    harness.seed({k: body(k) for k in ("keep", "del/1", "del/2", "del/3/x")})

    async def case(store: Any) -> None:
        await require(store, "write")
        failed = await store.delete_many(["del/1", "del/3/x", "never-there"])
        assert failed == []
        assert [e.key for e in await list_all(store)] == ["del/2", "keep"]
        for key in ("del/1", "del/3/x"):
            with pytest.raises(NotFound):
                await store.head(key)
        assert await store.delete_many([]) == []

    run(harness, case)


def test_server_side_copy_within_the_store(harness):
    data = os.urandom(2000)
    harness.seed({"src/obj": data})

    async def case(store: Any) -> None:
        await require(store, "server_side_copy")
        other = await harness.open()  # another store object on the same place
        assert store.can_copy_from(other) and other.can_copy_from(store)
        await store.copy_from(other, "src/obj", "dst/ü obj", len(data), 1_000_000_000.0)
        assert await store.read("dst/ü obj") == data
        info = await store.head("dst/ü obj")
        assert info.size == len(data)
        if store.features.keeps_mtime:
            assert abs(info.mtime - 1_000_000_000.0) <= store.features.mtime_precision
        if "s3-etag" in store.features.hashes:
            assert info.etag == hashlib.md5(data).hexdigest()
        with pytest.raises(NotFound):
            await store.copy_from(other, "src/missing", "dst/x", 1)

    run(harness, case)


# ------------------------------------------------------------------------------------ the wrapper


def test_wrapper_retries_injected_faults_and_forwards_declarations():
    """The retry wrapper around the memory store: transient faults are retried and counted, a
    missing key is not retried, everything the contract names is forwarded."""
    name = f"contract-{uuid.uuid4().hex[:12]}"
    b = memory.bucket(name)
    b.put("k", b"data")

    async def go() -> None:
        inner = memory.MemoryStore(Location("memory", name, "", f"memory://{name}/"))
        store = wrap(inner, ResilienceOptions(retries=3, backoff_base=0.001))
        try:
            b.inject("get", "k", times=2)
            assert await store.read("k") == b"data"
            assert store.stats.retries == 2 and b.calls["get"] == 3
            with pytest.raises(NotFound):
                await store.read("missing")
            assert b.calls["get"] == 4  # a missing key is final: one call
            b.inject("get", "k", times=-1)
            with pytest.raises(Exception) as err:
                await store.read("k")
            assert "injected" in str(err.value) and b.calls["get"] == 4 + 4
            assert store.unwrap() is inner and store.features is inner.features and store.ordered
        finally:
            await store.close()
            memory.drop(name)

    asyncio.run(go())
