"""The contract cases, one public async function each, registered in CASES in a stable order.

Each case's docstring says what it guarantees and why the engine relies on it. A case that
tests a capability runs whenever the store declares it (so a store that loses a declared
capability fails) and raises CapabilityAbsent only when the store declares it lacks it and
the case checked that it indeed does (see harness.require).
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from typing import Any, Awaitable, Callable, cast

from ..errors import NotFound
from ..model import WorkUnit
from ..stores.base import Features, GetOptions, PropsReader, Store, Writer, unwrap
from ..stores.reading import read_all, read_first, read_range, read_version, read_with_props
from ..stores.features import CAPABILITIES
from ..config.urls import Location
from .harness import (KEYS, CapabilityAbsent, Case, Harness, MiB, body, expect_raises, list_all, noise, require,
                      utf8_sorted)

CaseFn = Callable[[Harness, Any], Awaitable[None]]

CASES: dict[str, Case] = {}
"""Every case by name, in the order they are defined here (declaration, listing, reading, writing)."""


def _case(objects: Callable[[], dict[str, bytes]] = dict) -> Callable[[CaseFn], CaseFn]:
    """Register the decorated function as a case whose `objects()` are seeded before it runs."""

    def register(fn: CaseFn) -> CaseFn:
        CASES[fn.__name__] = Case(fn.__name__, fn, objects)
        return fn

    return register


def _all_keys() -> dict[str, bytes]:
    return {k: body(k) for k in KEYS}


OLD = 1_000_000_000.0  # a modification time in 2001: far from now, whole seconds
PART = 5 * MiB  # the smallest part S3 takes (the last may be smaller)


def _big() -> bytes:
    return os.urandom(PART) + b"tail-of-the-object" * 100


def _parts(data: bytes) -> list[tuple[int, int, bytes]]:
    return [(n, off, data[off:off + PART]) for n, off in enumerate(range(0, len(data), PART), 1)]


def _multipart_etag(data: bytes) -> str:
    digests = b"".join(hashlib.md5(p).digest() for _, _, p in _parts(data))
    return hashlib.md5(digests).hexdigest() + f"-{len(_parts(data))}"


# ------------------------------------------------------------------------------------ declaration


@_case()
async def declares_its_features(h: Harness, store: Any) -> None:
    """The store says what it can do in `features`, and its type agrees.

    The engine asks `features`, never the concrete type, to decide how to list (by key range or
    by token), write (whole, in parts, resumable), copy (server-side or through us) and compare
    (mtime precision, hash kinds); each declared capability must come with its protocol's
    methods, and each protocol implemented with its flag (stores/features.py derives them so). A
    wrapped store answers with its inner store's features, location and `unwrap()`.
    """
    f = store.features
    assert isinstance(f, Features) and isinstance(store, Store)
    assert store.ordered == f.ordered
    if f.read_into:  # a trait of get's data path: a range asked into a buffer is received there
        h.seed({"in-place": b"0123456789"})
        buf = memoryview(bytearray(8))
        got = (await store.get("in-place", GetOptions((2, 6), into=buf))).data
        assert isinstance(got, memoryview) and got.obj is buf.obj and bytes(got) == b"2345", \
            "declares read_into but a get into a buffer returned a copy"
    assert isinstance(store, Writer) == f.write
    core = unwrap(store)  # a wrapper forwards every protocol: what it may claim is its inner store's
    for capability, protocol in CAPABILITIES:  # a flag is its protocol implemented, both ways
        if getattr(f, capability):
            assert isinstance(store, protocol), f"declares {capability} but is no {protocol.__name__}"
        assert getattr(f, capability) == isinstance(core, protocol), \
            f"{capability} declared {getattr(f, capability)} but {protocol.__name__} implemented {not getattr(f, capability)}"
    assert bool(f.props) == isinstance(core, PropsReader), "props declared exactly by the PropsReaders"
    if f.resumable_uploads or f.server_side_copy or f.streamed_puts:
        assert f.write, "uploads, copies and streamed puts are writes"
    assert f.mtime_precision is None or f.mtime_precision > 0
    assert f.hashes <= {"s3-etag"}, "the engine compares only the hash kinds it knows"
    assert isinstance(store.location, Location) and store.location.kind
    if h.location_kind is not None:
        assert store.location.kind == h.location_kind
    if h.wrapped:
        inner: Any = cast(Any, store).unwrap()  # a wrapper's way to its inner store (isinstance above narrowed `store`)
        assert inner.features == f and inner.location == store.location
        assert unwrap(store) is inner


# ------------------------------------------------------------------------------------ listing


@_case(_all_keys)
async def lists_every_key_once_in_utf8_order_page_by_page(h: Harness, store: Any) -> None:
    """Paging through a listing (three keys a page) gives every key exactly once, in UTF-8 byte
    order for an ordered store, with sizes, mtimes and ETags as declared.

    Sync merges two listings in step, so both sides must use the same order (S3's: UTF-8 bytes,
    not a directory walk's, not UTF-16's); a key listed twice or never is copied twice or lost.
    An ETag is given only by a store declaring "s3-etag" and is then the MD5 of the body; a
    store without hashes gives None rather than something sync would compare wrongly.
    """
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


@_case(_all_keys)
async def lists_under_a_prefix(h: Harness, store: Any) -> None:
    """A prefix is a string prefix, not a directory: "a" matches "a-b", "a/b" and "ab"; "a/c"
    matches "a/c d"; a prefix nothing starts with lists nothing (and is no error).

    Every command takes SRC as a prefix, the way S3 does; a store that treats it as a directory
    would copy a different set of keys from S3 than from local files.
    """
    for prefix in ("a", "a/", "ab", "日本/", "😀", "zzz", "a/c"):
        want = utf8_sorted([k for k in KEYS if k.startswith(prefix)])
        keys = [e.key for e in await list_all(store, prefix, 2)]
        assert (keys if store.features.ordered else sorted(keys, key=str.encode)) == want, prefix


@_case(_all_keys)
async def key_range_bounds(h: Harness, store: Any) -> None:
    """An ordered store lists exactly the keys with after < key <= until (UTF-8 byte order),
    whatever the page size, with or without a prefix.

    The engine cuts the key space into such ranges and lists them in parallel, in several
    processes, and a resumed run lists on from the last key a journal recorded: a range that
    leaks one key past a bound copies it twice, one that stops short loses it. A store that
    declares token-only paging (ordered=False) must really ignore `after` (the engine then never
    splits it), and the case is skipped.
    """
    ordered = utf8_sorted(KEYS)
    if not store.features.ordered:
        page = await store.list_page("", WorkUnit(after=ordered[-2]), 100)
        assert any(e.key <= ordered[-2] for e in page.entries)
        raise CapabilityAbsent("declares no ordered listing")
    bounds = [(None, None), ("a", "a0"), ("a-b", "a/b"), ("a/", "ab"), ("ab", None), (None, "a.b"),
              ("\uff5e", "😀"), ("😀", None), ("😀", "😀\U00010000"), ("b", "b?"), (ordered[-1], None), ("a/b", "a/b"),
              # bounds sharing a beginning longer than the prefix (a store may list under it)
              ("a/", "a/c d"), ("a/b", "a/c"), ("a", "abc"), ("日本", "日本/語")]
    for after, until in bounds:
        want = [k for k in ordered if (after is None or k.encode() > after.encode())
                and (until is None or k.encode() <= until.encode())]
        for limit in (1, 2, 1000):
            got = [e.key for e in await list_all(store, "", limit, WorkUnit(after=after, until=until))]
            assert got == want, (after, until, limit)
    got = [e.key for e in await list_all(store, "a", 1, WorkUnit(after="a-b", until="ab"))]
    assert got == ["a.b", "a/b", "a/c d", "a0", "ab"]
    got = [e.key for e in await list_all(store, "a", 1, WorkUnit(after="a/", until="a/c d"))]
    assert got == ["a/b", "a/c d"]


@_case(_all_keys)
async def lists_one_level(h: Harness, store: Any) -> None:
    """With one_level (LevelLister), a level under a prefix is the keys with no "/" after the
    prefix and one "name/" prefix for all the others, each once, whatever the page size.

    `ls --no-recursive` browses a bucket, a directory or a server a level at a time; a prefix
    given twice, or a key of a deeper level shown as an object, is a listing that lies about
    what is there.
    """
    await require(store, "one_level")
    for prefix, limits in (("", (1, 1000)), ("a", (2, 1000)), ("a/", (1000,)), ("日本/", (1000,)), ("zzz", (1000,))):
        under = [k for k in KEYS if k.startswith(prefix)]
        want_keys = utf8_sorted([k for k in under if "/" not in k[len(prefix):]])
        want_prefixes = utf8_sorted(list({k[:k.index("/", len(prefix)) + 1] for k in under
                                            if "/" in k[len(prefix):]}))
        for limit in limits:
            keys: list[str] = []
            prefixes: list[str] = []
            token = None
            for _ in range(100):
                page = await store.list_level(prefix, token, limit)
                keys += [e.key for e in page.entries]
                prefixes += page.prefixes
                assert [e.key for e in page.entries] == utf8_sorted([e.key for e in page.entries])
                token = page.next_token
                if token is None:
                    break
            assert (keys, prefixes) == (want_keys, want_prefixes), (prefix, limit)
    page = await store.list_level("a", None, 1000)
    sizes = {e.key: e.size for e in page.entries}
    assert sizes["a-b"] in (len(body("a-b")), None)


# ------------------------------------------------------------------------------------ reading


def _ranged_objects() -> dict[str, bytes]:
    return {"d/obj": noise("d/obj", 1000), "d/odd key ü+😀": b"odd"}


@_case(_ranged_objects)
async def head_and_ranged_reads(h: Harness, store: Any) -> None:
    """`head` gives the size (and an mtime exactly when the store declares an mtime precision);
    `get` gives the whole body or bytes [start, end), an empty range included; with `first` at most
    that many first bytes and the total size in one request.

    Large objects are copied as ranges read in parallel, and objects whose size the listing did
    not give are read with `first` (small ones whole, large ones then in parts): an off-by-one
    at either end of a range corrupts every large copy. Keys with spaces, "+" and non-ASCII must
    reach the same object (URL encoding).
    """
    data = _ranged_objects()["d/obj"]
    info = await store.head("d/obj")
    assert info.key == "d/obj" and info.size == 1000
    assert (info.mtime is None) == (store.features.mtime_precision is None)
    assert await read_all(store, "d/obj") == data
    for start, end in ((0, 1), (10, 20), (999, 1000), (0, 1000), (5, 5)):
        assert await read_range(store, "d/obj", start, end) == data[start:end], (start, end)
    assert await read_first(store, "d/obj", 10) == (data[:10], 1000)
    assert await read_first(store, "d/obj", 5000) == (data, 1000)
    assert await read_all(store, "d/odd key ü+😀") == b"odd"
    assert (await store.head("d/odd key ü+😀")).size == 3


@_case(lambda: {"empty": b"", "full": b"x"})
async def zero_byte_object(h: Harness, store: Any) -> None:
    """An empty object exists: it heads as size 0, reads as b"", and is listed (size 0 or None).

    Empty objects are common (markers, placeholders) and easy to lose: a store that reports
    them missing, or a range request that fails on them, drops them from every copy.
    """
    assert (await store.head("empty")).size == 0
    assert await read_all(store, "empty") == b""
    assert await read_first(store, "empty", 1024) == (b"", 0)
    listed = {e.key: e.size for e in await list_all(store)}
    assert listed.keys() == {"empty", "full"} and listed["empty"] in (0, None)


@_case(lambda: {"obj": noise("obj", 3000)})
async def read_into_a_buffer(h: Harness, store: Any) -> None:
    """get with `into`: bytes [start, end) land in the caller's buffer and come back as a view of
    it, received there (not a copy) where the store declares read_into; a missing key is NotFound.

    The engine reuses a few part buffers for every multipart copy so memory stays bounded; a
    store that declares read_into but returns fresh bytes silently doubles the memory a copy takes.
    """
    data = noise("obj", 3000)
    buf = memoryview(bytearray(4096))
    got = (await store.get("obj", GetOptions((100, 2100), into=buf))).data
    assert bytes(got) == data[100:2100]
    if store.features.read_into:
        assert isinstance(got, memoryview) and got.obj is buf.obj, "read_into returned a copy, not the caller's memory"
    got = (await store.get("obj", GetOptions((2999, 3000), into=buf))).data
    assert bytes(got) == data[2999:]
    with expect_raises(NotFound, "a get into a buffer of a missing key"):
        await store.get("missing", GetOptions((0, 10), into=buf))


@_case(lambda: {"obj": noise("obj", 3000)})
async def read_to_a_sink(h: Harness, store: Any) -> None:
    """get with `sink`: bytes [start, end) are handed to the sink (as they arrive where the store
    declares read_to), each attempt starting it over: the file behind it holds exactly those
    bytes at those offsets, and the result holds none; a missing key is NotFound.

    A ranged download into a local file writes each part where it belongs without a part buffer
    (stores/files/filesink.py); a byte off by one there corrupts the file the download leaves.
    """
    import tempfile

    from ..stores.files.filesink import RangeSink

    data = noise("obj", 3000)
    with tempfile.TemporaryFile() as f:
        got = await store.get("obj", GetOptions((100, 2100), sink=RangeSink(f.fileno(), 100, 2100)))
        assert os.pread(f.fileno(), 2000, 100) == data[100:2100] and not got.data
        with expect_raises(NotFound, "a get to a sink of a missing key"):
            await store.get("missing", GetOptions((0, 10), sink=RangeSink(f.fileno(), 0, 10)))


@_case(lambda: {"obj": noise("obj", 3000)})
async def file_bodies_stream_a_range(h: Harness, store: Any) -> None:
    """With file_bodies (FileBodyReader), read_body gives a range as a body of that length whose
    bytes are the range's, read again whole on every pass (a retried PUT reads it again).

    An upload streams such a body instead of holding the object in memory; a body whose length
    is not its bytes' sends a PUT the server refuses, or stores short.
    """
    await require(store, "file_bodies")
    data = noise("obj", 3000)
    part = store.read_body("obj", 10, 2010)
    assert len(part) == 2000
    assert await part.read_all() == data[10:2010]
    assert await part.read_all() == data[10:2010], "a second pass reads the same bytes"


@_case()
async def streamed_puts_write_a_body(h: Harness, store: Any) -> None:
    """With streamed_puts (StreamedPutter), put_body writes a body read from a local file as it
    is sent: the object reads back byte for byte, with the given mtime where the store keeps one.

    An upload of a local file up to the multipart threshold goes so, a few chunks in memory.
    """
    import tempfile

    from ..stores.files.bodies import FileBody

    await require(store, "streamed_puts")
    data = noise("streamed", 3 * MiB + 5)
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        await store.put_body("streamed", FileBody(f.name, 0, len(data), url=f.name, key="streamed"), OLD)
    assert await read_all(store, "streamed") == data
    info = await store.head("streamed")
    assert info.size == len(data)
    if store.features.keeps_mtime:
        assert abs(info.mtime - OLD) <= store.features.mtime_precision


@_case(lambda: {"obj": noise("obj", 300)})
async def props_read_with_the_object(h: Harness, store: Any) -> None:
    """A store that keeps object properties (props, PropsReader) gives them from one HEAD
    (read_props), with the body from one GET (read_with_props: the bytes are the object's), and
    the tags as x-amz-tagging takes them ("" for none); a missing key is NotFound.

    A copy carries the source's properties through these; a store that gives other bytes with
    them writes another object.
    """
    from ..model import ObjectProps

    if not store.features.props:
        assert not isinstance(unwrap(store), PropsReader), "declares no props but is a PropsReader"
        raise CapabilityAbsent("declares no props")
    assert isinstance(await store.read_props("obj"), ObjectProps)
    data, props = await read_with_props(store, "obj")
    assert data == noise("obj", 300) and isinstance(props, ObjectProps)
    assert isinstance(await store.read_tagging("obj"), str)
    with expect_raises(NotFound, "read_props of a missing key"):
        await store.read_props("missing")


@_case(lambda: {"obj": noise("obj", 300)})
async def checksums_of_an_object(h: Harness, store: Any) -> None:
    """With checksums (ChecksumReader), object_checksum gives None or the object's (algorithm,
    base64 value, FULL_OBJECT or COMPOSITE), object_parts None or the parts; a missing key is
    NotFound.

    sync --checksum and a download's check compare these; an algorithm the engine does not know
    would be compared as if it were one it knows.
    """
    from ..stores.base import ObjectChecksum
    from ..stores.checksums import ALGORITHMS

    await require(store, "checksums")
    found = await store.object_checksum("obj")
    assert found is None or (isinstance(found, ObjectChecksum) and found.algorithm in ALGORITHMS
                             and found.kind in ("FULL_OBJECT", "COMPOSITE"))
    parts = await store.object_parts("obj")
    assert parts is None or isinstance(parts, list)
    with expect_raises(NotFound, "object_checksum of a missing key"):
        await store.object_checksum("missing")


@_case()
async def part_sizes_of_a_multipart_object(h: Harness, store: Any) -> None:
    """With part_sizes (PartSizeReader), first_part_size gives the size of part 1 of an object
    uploaded in parts, and None for one put whole.

    sync --checksum compares a multipart ETag with a local file's only at the part size the
    uploader really used.
    """
    await require(store, "part_sizes")
    data = _big()
    upload = await store.start_multipart("parts", len(data), PART)
    for number, offset, part in _parts(data):
        await upload.put_part(number, offset, part)
    await upload.complete()
    await store.put("whole", b"whole")
    assert await store.first_part_size("parts") == PART
    assert await store.first_part_size("whole") is None


@_case(lambda: {"obj": noise("obj", 300)})
async def versions_list_head_and_read(h: Harness, store: Any) -> None:
    """With versions (VersionedStore), a key's version is listed (its id, size, latest), heads
    and reads by that id to the object's bytes, and is deleted by it for good.

    `copy --all-versions` replays a history through these, and `rm --all-versions` deletes it.
    """
    await require(store, "versions")
    page = await store.list_versions_page("obj", None, None, 1000)
    (version,) = [v for v in page.entries if v.key == "obj"]
    assert version.latest and version.size == 300 and not version.delete_marker
    assert (await store.head_version("obj", version.version_id)).size == 300
    assert await read_version(store, "obj", version.version_id) == noise("obj", 300)
    assert await read_version(store, "obj", version.version_id, 10, 20) == noise("obj", 300)[10:20]
    assert await store.delete_versions([("obj", version.version_id)]) == []
    with expect_raises(NotFound, "head of a deleted version's key"):
        await store.head("obj")


@_case(lambda: {"there": b"x", "dir/inside": b"y"})
async def missing_key_is_not_found(h: Harness, store: Any) -> None:
    """A key that does not exist is NotFound from head, get (whole, a range, the first bytes),
    including a prefix of an existing key, a key under an existing key, and a missing key in an
    existing "directory".

    NotFound is final (the retry wrapper does not retry it) and means "the source went away" to
    the engine, which reports it per object; any other error would be retried, or would fail
    the run with a misleading message.
    """
    for key in ("missing", "dir/missing", "ther", "dir/inside/more"):
        with expect_raises(NotFound, f"head({key!r})"):
            await store.head(key)
        with expect_raises(NotFound, f"read({key!r})"):
            await read_all(store, key)
        with expect_raises(NotFound, f"read({key!r}, 0, 1)"):
            await read_range(store, key, 0, 1)
        with expect_raises(NotFound, f"read_first({key!r})"):
            await read_first(store, key, 10)


@_case()
async def missing_bucket_is_not_found(h: Harness, store: Any) -> None:
    """On a bucket or directory that does not exist, listing and head are NotFound.

    So a mistyped source fails at once with one line naming it, rather than copying nothing and
    reporting success, or retrying for minutes. Skipped when the harness has no missing place
    to open (`make_missing_store` returns None).
    """
    missing = await h.open_missing()
    if missing is None:
        raise CapabilityAbsent("has no bucket or directory to miss")
    with expect_raises(NotFound, "listing a missing bucket"):
        await missing.list_page("", WorkUnit(), 10)
    with expect_raises(NotFound, "head in a missing bucket"):
        await missing.head("k")


# ------------------------------------------------------------------------------------ writing


@_case()
async def put_read_back_and_replace(h: Harness, store: Any) -> None:
    """`put` writes an object (any of the awkward keys, an empty one too) that then lists, heads
    and reads back byte for byte; a second put replaces it. A store that keeps mtimes keeps the
    one given (within its declared precision); one that does not must not pretend to.

    Sync decides "unchanged" from size and mtime (or ETag): a store that keeps a different
    mtime than it was given, or claims precision it lacks, makes every sync copy everything
    again, or worse, skip what changed.
    """
    await require(store, "write")
    for key in KEYS:
        await store.put(key, body(key, 100), OLD)
    await store.put("zero", b"", OLD)
    listed = {e.key: e for e in await list_all(store, "", 1000)}
    assert sorted(listed) == sorted(KEYS + ["zero"])
    for key in KEYS + ["zero"]:
        want = body(key, 100) if key != "zero" else b""
        assert await read_all(store, key) == want
        info = await store.head(key)
        assert info.size == len(want) == listed[key].size
        f = store.features
        if f.keeps_mtime:
            assert abs(info.mtime - OLD) <= f.mtime_precision
        else:
            assert info.mtime is None or abs(info.mtime - OLD) > 86400
        if "s3-etag" in f.hashes:
            assert info.etag == listed[key].etag == hashlib.md5(want).hexdigest()
    await store.put("a-b", b"replaced")
    assert await read_all(store, "a-b") == b"replaced"
    assert (await store.head("a-b")).size == 8


@_case()
async def multipart_upload_in_any_order(h: Harness, store: Any) -> None:
    """A multipart upload whose parts arrive in reverse order, each from a buffer the caller
    reuses, completes into the right bytes; nothing is visible under the key before completion;
    the upload has an id exactly when the store declares resumable uploads; an "s3-etag" store
    gives the multipart ETag (MD5 of the part MD5s, "-N").

    The engine sends parts in parallel (they finish in any order) from a few reused buffers, so
    a store that keeps a reference instead of the bytes writes the wrong data; and a half-written
    object visible under its final name is what a reader must never see.
    """
    await require(store, "write")
    data = _big()
    upload = await store.start_multipart("big/obj", len(data), PART, OLD)
    assert (upload.upload_id is not None) == store.features.resumable_uploads
    buf = bytearray(PART)
    for number, offset, part in reversed(_parts(data)):
        view = memoryview(buf)[:len(part)]
        view[:] = part
        await upload.put_part(number, offset, view)
    with expect_raises(NotFound, "head before the upload completed"):
        await store.head("big/obj")
    await upload.complete()
    assert await read_all(store, "big/obj") == data
    info = await store.head("big/obj")
    assert info.size == len(data)
    if "s3-etag" in store.features.hashes:
        assert info.etag == _multipart_etag(data)
    if store.features.keeps_mtime:
        assert abs(info.mtime - OLD) <= store.features.mtime_precision


@_case()
async def multipart_abort_leaves_nothing(h: Harness, store: Any) -> None:
    """An aborted upload leaves no object, nothing listed, no open upload under its id and
    nothing else behind (the harness's `leftovers`, e.g. temporary files).

    A stopped or failed copy aborts its uploads; anything left would cost storage (S3 bills
    open uploads' parts) or show up as a stray file in the destination.
    """
    await require(store, "write")
    upload = await store.start_multipart("gone", 2 * PART, PART)
    await upload.put_part(1, 0, b"x" * PART)
    await upload.abort()
    with expect_raises(NotFound, "head of an aborted upload's key"):
        await store.head("gone")
    assert [e.key for e in await list_all(store)] == []
    if upload.upload_id is not None:
        with expect_raises(NotFound, "list_parts of an aborted upload"):
            await store.list_parts("gone", upload.upload_id)
    assert not h.leftovers(), f"left behind: {h.leftovers()}"


@_case()
async def multipart_resume_by_upload_id_from_another_store(h: Harness, store: Any) -> None:
    """An upload started by one store object is found by its id from another (a later run):
    list_parts gives the parts done, resume_multipart continues it, complete gives the whole
    object; once completed the upload is NotFound.

    This is how an interrupted copy of a large object resumes without sending its parts again:
    the journal keeps only the key and the upload id, and the next run has its own process,
    connections and store.
    """
    await require(store, "resumable_uploads")
    data = _big()
    (n1, o1, p1), (n2, o2, p2) = _parts(data)
    upload = await store.start_multipart("resumed", len(data), PART)
    upload_id = upload.upload_id
    await upload.put_part(n1, o1, p1)
    later = await h.open()
    parts = await later.list_parts("resumed", upload_id)
    assert [(p.number, p.size) for p in parts] == [(1, PART)]
    resumed = await later.resume_multipart("resumed", upload_id, parts)
    assert resumed.upload_id == upload_id
    await resumed.put_part(n2, o2, p2)
    await resumed.complete()
    assert await read_all(later, "resumed") == data
    if "s3-etag" in store.features.hashes:
        assert (await later.head("resumed")).etag == _multipart_etag(data)
    with expect_raises(NotFound, "list_parts of a completed upload"):
        await later.list_parts("resumed", upload_id)


@_case()
async def multipart_abort_by_upload_id(h: Harness, store: Any) -> None:
    """Another store object aborts an open upload by its id; afterwards the upload and the key
    are NotFound, and an id that never existed is NotFound too.

    A new run aborts, by id and from its own process, the uploads its journal recorded for a
    replaced run and those it cannot resume; an id already gone is NotFound (as S3's
    NoSuchUpload), which that cleanup takes as done.
    """
    await require(store, "resumable_uploads")
    upload = await store.start_multipart("aborted", 2 * PART, PART)
    await upload.put_part(1, 0, b"y" * PART)
    later = await h.open()
    await later.abort_multipart("aborted", upload.upload_id)
    with expect_raises(NotFound, "list_parts of an aborted upload"):
        await later.list_parts("aborted", upload.upload_id)
    with expect_raises(NotFound, "head of an aborted upload's key"):
        await later.head("aborted")
    with expect_raises(NotFound, "list_parts of an unknown upload id"):
        await later.list_parts("aborted", "no-such-upload-" + uuid.uuid4().hex)


@_case()
async def lists_open_uploads_under_a_prefix(h: Harness, store: Any) -> None:
    """ListMultipartUploads: the uploads open under a prefix (a string prefix), in key order, each
    with its id and, where the store knows it, when it began; an aborted upload is gone from it.

    This is how an upload that nothing recorded is found again: a run stopped between
    CreateMultipartUpload and its record, `rm --incomplete-uploads`, a resume that aborts what a
    note of intent names (engine/leftover_uploads.py)."""
    await require(store, "resumable_uploads")
    before = time.time()
    made = [(key, (await store.start_multipart(key, 2 * PART, PART)).upload_id)
            for key in ("up/a", "up/a", "up/b", "upx")]
    found, more = await store.list_uploads("up/")
    assert more is None
    assert sorted((u.key, u.upload_id) for u in found) == sorted(made[:3])
    assert [u.key for u in found] == ["up/a", "up/a", "up/b"], "in key order"
    assert all(u.initiated is None or u.initiated >= before - 60 for u in found)
    for key, upload_id in made:
        await store.abort_multipart(key, upload_id)
    assert (await store.list_uploads("up"))[0] == []


@_case(lambda: {k: body(k) for k in ("keep", "del/1", "del/2", "del/3/x")})
async def delete_many(h: Harness, store: Any) -> None:
    """delete_many removes exactly the keys given (a key missing already is no failure, an
    empty list is fine) and returns no failures; neighbours and keys sharing a prefix stay.

    `sync --delete`, `mv` and `rm` delete in batches; deleting a key not asked for loses data,
    and reporting a missing key as a failure would fail a rerun of an interrupted delete.
    """
    await require(store, "write")
    failed = await store.delete_many(["del/1", "del/3/x", "never-there"])
    assert failed == []
    assert [e.key for e in await list_all(store)] == ["del/2", "keep"]
    for key in ("del/1", "del/3/x"):
        with expect_raises(NotFound, f"head of deleted {key!r}"):
            await store.head(key)
    assert await store.delete_many([]) == []


@_case(lambda: {"src/obj": noise("src/obj", 2000)})
async def server_side_copy_within_the_store(h: Harness, store: Any) -> None:
    """A store that declares server-side copy can copy from another store object on the same
    place (can_copy_from says so both ways): the copy reads back byte for byte, keeps the given
    mtime when the store keeps mtimes, has the source's ETag; a missing source is NotFound.

    The engine copies inside one store without the bytes passing through it whenever
    can_copy_from allows; the source and destination are always two store objects.
    """
    await require(store, "server_side_copy")
    data = noise("src/obj", 2000)
    other = await h.open()
    assert store.can_copy_from(other) and other.can_copy_from(store)
    await store.copy_from(other, "src/obj", "dst/ü obj", len(data), OLD)
    assert await read_all(store, "dst/ü obj") == data
    info = await store.head("dst/ü obj")
    assert info.size == len(data)
    if store.features.keeps_mtime:
        assert abs(info.mtime - OLD) <= store.features.mtime_precision
    if "s3-etag" in store.features.hashes:
        assert info.etag == hashlib.md5(data).hexdigest()
    with expect_raises(NotFound, "copy of a missing source"):
        await store.copy_from(other, "src/missing", "dst/x", 1)


@_case(lambda: {"obj": noise("obj-old", 3000)})
async def reads_held_to_one_version_refuse_another(h: Harness, store: Any) -> None:
    """A store that declares conditional_reads holds a get naming an ETag (if_match: whole, a range,
    into a buffer, to a sink), and a server-side copy naming one (copy_from(if_match=)), to that
    version: its bytes while the object is unchanged, SourceChanged once it was overwritten (same
    size, other bytes), and a copy that raised left nothing under the destination key. A store
    that does not declare it ignores the condition, on a read and on a copy.

    The engine names the ETag on every request of an object read in more than one (the ranges of
    a multipart download or copy, the parts of a server-side copy), so that an object overwritten
    meanwhile is started over instead of landing spliced from two versions.
    """
    import tempfile

    from ..errors import SourceChanged
    from ..stores.files.filesink import RangeSink

    old, new = noise("obj-old", 3000), noise("obj-new", 3000)

    etag = (await store.head("obj")).etag
    if not store.features.conditional_reads:
        assert await read_range(store, "obj", 10, 20, if_match="not-its-etag") == old[10:20], \
            "declares no conditional reads but refuses a read under a condition"
        if store.features.server_side_copy and store.can_copy_from(store):
            await store.copy_from(store, "obj", "copied", len(old), if_match="not-its-etag")
            assert await read_all(store, "copied") == old, \
                "declares no conditional reads but refuses a copy under a condition"
        raise CapabilityAbsent("declares no conditional_reads")
    assert etag, "declares conditional reads but heads no ETag to hold reads to"
    assert await read_range(store, "obj", 10, 20, if_match=etag) == old[10:20]
    assert await read_all(store, "obj", if_match=etag) == old
    h.seed({"obj": new})
    with expect_raises(SourceChanged, "a ranged read of another version"):
        await read_range(store, "obj", 10, 20, if_match=etag)
    with expect_raises(SourceChanged, "a whole read of another version"):
        await read_all(store, "obj", if_match=etag)
    with expect_raises(SourceChanged, "a get into a buffer of another version"):
        await store.get("obj", GetOptions((0, 100), if_match=etag, into=memoryview(bytearray(100))))
    with tempfile.TemporaryFile() as f:
        with expect_raises(SourceChanged, "a get to a sink of another version"):
            await store.get("obj", GetOptions((0, 100), if_match=etag, sink=RangeSink(f.fileno(), 0, 100)))
    if store.features.server_side_copy:
        with expect_raises(SourceChanged, "a server-side copy of another version"):
            await store.copy_from(store, "obj", "copied", len(new), if_match=etag)
        with expect_raises(NotFound, "the object a refused copy was to write"):
            await store.head("copied")
    now = (await store.head("obj")).etag
    assert await read_range(store, "obj", 10, 20, if_match=now) == new[10:20]
    if store.features.server_side_copy:
        await store.copy_from(store, "obj", "copied", len(new), if_match=now)
        assert await read_all(store, "copied") == new


@_case(lambda: {"obj": noise("theirs", 1000)})
async def writes_that_must_not_replace_refuse_an_existing_key(h: Harness, store: Any) -> None:
    """A store that declares conditional_writes refuses, inside stores/conditions.NO_CLOBBER, to
    replace an existing key: put, a multipart completion and a server-side copy onto it raise
    DestinationExists and leave it as it was (no temporary file either), while a key that does not
    exist is written as ever.

    `--no-clobber` relies on it to be race-free: the write itself carries the condition (S3's
    If-None-Match: *, a local no-replace rename), so an object written by someone else after the
    run looked is kept. A store that does not declare it is asked with a HEAD before each write.
    """
    from ..errors import DestinationExists
    from ..stores.conditions import NO_CLOBBER

    await require(store, "write")
    theirs = noise("theirs", 1000)
    if not store.features.conditional_writes:
        raise CapabilityAbsent("declares no conditional_writes")
    token = NO_CLOBBER.set(True)
    try:
        with expect_raises(DestinationExists, "a put onto an existing key"):
            await store.put("obj", noise("ours", 10))
        upload = await store.start_multipart("obj", 10, PART)
        await upload.put_part(1, 0, noise("ours", 10))
        with expect_raises(DestinationExists, "a multipart completion onto an existing key"):
            await upload.complete()
        await upload.abort()
        if store.features.server_side_copy:
            await store.put("other", noise("ours", 10))
            other = await h.open()
            with expect_raises(DestinationExists, "a server-side copy onto an existing key"):
                await store.copy_from(other, "other", "obj", 10)
        assert await read_all(store, "obj") == theirs
        await store.put("new", noise("ours", 10))  # a new key is written as ever
        assert await read_all(store, "new") == noise("ours", 10)
    finally:
        NO_CLOBBER.reset(token)
    assert sorted(e.key for e in await list_all(store, "", 1000)) == sorted(
        ["new", "obj"] + (["other"] if store.features.server_side_copy else []))
