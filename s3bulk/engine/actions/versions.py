"""Object versions of a versioned bucket: `ls --all-versions`, `copy --version-id`, `copy
--all-versions` (a bucket's history replayed in order) and `rm --all-versions`.

Everything here goes through the store contract's VersionedStore capability (stores/base.py,
declared by `features.versions`), never through S3Store itself, and copies each version with the
engine's own Transfer (whole or in parts, under the byte budget), reading the version through a
small adapter. A key's versions are written one after another, oldest first, so the destination's
versions come out in the source's order; different keys go in parallel.

This is a path of its own rather than a mode of the worker pool: a history must be replayed per
key in order, which the pool's range-split listing (latest versions only) does not give. It keeps
a journal of its own (engine/journal/versions.py): every version that lands is recorded, so `--resume`
after an interruption continues each key from its first version not yet copied (and first asks
DST whether the version a killed run was sending had landed: `_landed`). A version that
fails ends its key's history for this run (the newer ones are not written before it), which a
rerun with --resume then continues in order.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Iterator, cast

from ...errors import StoreError, UsageError
from ...config.filters import CompiledFilters, Filters
from ...model import ObjectInfo
from ...stores.base import WHOLE, GetOptions, GetResult, ObjectVersion, Store, VersionedStore, unwrap
from ...config.urls import Location, S3Options, parse_location
from ..events import Copied, Failure, Subscriber, deletion

PAGE = 1000


def versioned(store: Store, url: str) -> VersionedStore:
    """The store as a VersionedStore, or a one-line UsageError when it keeps no versions."""
    if not store.features.versions:
        raise UsageError(f"{url}: versions need a store that keeps them (an S3 bucket)")
    return cast(VersionedStore, store)


async def version_pages(store: VersionedStore, prefix: str) -> AsyncIterator[list[ObjectVersion]]:
    """Every version and delete marker under prefix, a page at a time (key order, newest first)."""
    key = version = None
    while True:
        page = await store.list_versions_page(prefix, key, version, PAGE)
        if page.entries:
            yield page.entries
        if page.next_key is None and page.next_version is None:
            return
        key, version = page.next_key, page.next_version


async def histories(store: VersionedStore, prefix: str) -> AsyncIterator[list[ObjectVersion]]:
    """Each key's versions, oldest first (a key's versions may span listing pages: one key's
    history is held at a time)."""
    current: list[ObjectVersion] = []
    async for page in version_pages(store, prefix):
        for v in page:
            if current and current[0].key != v.key:
                yield current[::-1]
                current = []
            current.append(v)
    if current:
        yield current[::-1]


async def resolve(store: VersionedStore, loc: Location) -> tuple[str, str | None]:
    """(listing prefix, single key) as `copy` reads SRC: s3://b/NAME is the key NAME when it has
    versions (even if its latest is a delete marker), else everything under NAME/."""
    prefix = loc.prefix
    if prefix and not prefix.endswith("/"):
        page = await store.list_versions_page(prefix, None, None, 1)
        if page.entries and page.entries[0].key == prefix:
            return prefix, prefix
        prefix += "/"
    return prefix, None


# ------------------------------------------------------------------ copy


class _VersionSource:
    """One version of a key as a plain readable store, for the engine's Transfer: it reads
    `version_id` whatever key it is asked for (it is made per version)."""

    def __init__(self, store: VersionedStore, location: Location, version_id: str) -> None:
        from ...stores.base import Features

        self.store, self.location, self.version_id = store, location, version_id
        self.features = Features(read_into=False)

    @property
    def ordered(self) -> bool:
        return True

    async def get(self, key: str, opts: GetOptions = WHOLE) -> GetResult:
        """`opts` of this version (a first read: its size from one HEAD of the version)."""
        if opts.first is not None:
            size = (await self.store.head_version(key, self.version_id)).size or 0
            got = await cast(Store, self.store).get(key, GetOptions((0, min(size, opts.first)), version_id=self.version_id))
            return GetResult(got.data, size)
        return await cast(Store, self.store).get(key, GetOptions(opts.range, version_id=self.version_id))


@dataclass(slots=True)
class VersionsResult:
    """What a versions copy or delete did: versions copied or deleted, their bytes, delete markers
    replayed or deleted, failures as (url, why)."""

    versions: int = 0
    bytes: int = 0
    markers: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    dry_run: bool = False
    resumed: int = 0           # versions and markers an interrupted run had copied (--resume skips them)
    held: int = 0              # not tried: newer versions of a key whose older version failed
    interrupted: bool = False  # stopped early (should_stop): what is left goes to --resume

    @property
    def ok(self) -> bool:
        return not self.failures


def _url(loc: Location, key: str, version_id: str) -> str:
    return f"{loc.url_for(key)}?versionId={version_id}"


@dataclass(frozen=True, slots=True)
class VersionsCopy:
    """What one versions copy is asked to do: one version (`version_id`, SRC naming one key) or
    every version under SRC, oldest first per key, to DST (which keeps them as versions when it is
    a versioned bucket). Delete markers are replayed as deletes only with include_delete_markers.
    as_of (epoch seconds): instead, each key as it was then, its newest version not after that time
    (none when that was a delete marker)."""

    src: str
    dst: str
    src_s3: S3Options | None = None
    dst_s3: S3Options | None = None
    options: Any = None  # TransferOptions; None: the defaults
    version_id: str | None = None
    include_delete_markers: bool = False
    filters: Filters = Filters()
    concurrency: int = 16
    as_of: float | None = None


async def copy_versions(request: VersionsCopy, subscriber: Subscriber | None = None, *, journal: Any = None,
                        should_stop: Callable[[], bool] | None = None) -> VersionsResult:
    """Run the copy the request describes. The subscriber gets Copied (a delete marker replayed:
    size 0) or Failure "copy" per version. journal (a VersionsJournal, engine/journal/versions.py):
    versions it holds are skipped and each that lands is recorded. should_stop(): checked before
    each version; once true no new one starts, those in flight finish (and are recorded), and the
    result says interrupted."""
    from ..plan import TransferOptions
    from ...stores import open_store

    options = request.options or TransferOptions()
    run = _VersionsRun(request, options, subscriber or Subscriber(), journal, should_stop or (lambda: False))
    src = await open_store(parse_location(request.src, request.src_s3), options.store_options())
    try:
        await run.open(src)
        await run.copy_all()
    finally:
        await src.close()
        if run.dst is not None:
            await cast(Any, run.dst).close()  # narrowed to Writer, which does not declare close
    return run.result


class _VersionsRun:
    """One versions copy's steps: open and check both sides, then each key's history in order
    (keys in parallel, `concurrency` at once), each version through the engine's Transfer."""

    def __init__(self, request: VersionsCopy, options: Any, to: Subscriber, journal: Any,
                 stop: Callable[[], bool]) -> None:
        self.request, self.options, self.to, self.journal, self.stop = request, options, to, journal, stop
        self.result = VersionsResult()
        self.src_loc = parse_location(request.src, request.src_s3)
        self.dst_loc = parse_location(request.dst, request.dst_s3)
        self.vsrc: VersionedStore | None = None
        self.dst: Any = None
        self.prefix: str = ""
        self.single: str | None = None
        self.dst_key_of: Callable[[str], str] = str
        # the version id each write makes at a versioned S3 DST (what a resume after a kill checks against)
        self.written: dict[str, str] = {}
        self.window = asyncio.Semaphore(max(1, request.concurrency))
        self.budget: Any = None
        self.kept: CompiledFilters | None = None  # the filters, once SRC is known

    async def open(self, src: Store) -> None:
        """SRC read as `copy` reads it (one key, or a prefix), DST opened, checked and prepared."""
        from ..plan import KeyMap
        from ..transfer.one_object import ByteBudget
        from ...stores import Writer, open_store

        r = self.request
        self.vsrc = versioned(src, r.src)
        self.prefix, self.single = await resolve(self.vsrc, self.src_loc)
        if r.version_id is not None and self.single is None:
            raise UsageError(f"--version-id needs SRC to name one key, and {r.src} names none with versions")
        if self.single is not None:
            self.dst_loc, exact = _one_destination(self.dst_loc, r.dst, os.path.basename(self.single))
            self.dst_key_of = KeyMap(self.prefix, self.dst_loc.prefix, exact)
        else:
            dst_prefix = self.dst_loc.prefix
            self.dst_key_of = KeyMap(self.prefix, dst_prefix if not dst_prefix or dst_prefix.endswith("/")
                                     else dst_prefix + "/")
        self.dst = await open_store(self.dst_loc, self.options.store_options())
        if not isinstance(self.dst, Writer) or not self.dst.features.write:
            raise UsageError(f"{r.dst} cannot be written to")
        await self.dst.prepare()
        self.budget = ByteBudget(self.options.max_bytes_in_flight)
        told = unwrap(self.dst)
        if self.journal is not None and hasattr(told, "written_versions"):
            told.written_versions = self.written

    async def copy_all(self) -> None:
        """One version, or every key's history (filtered), each key's in a task of its own."""
        r, vsrc = self.request, self.vsrc
        assert vsrc is not None
        if r.version_id is not None:
            assert self.single is not None
            v = await vsrc.head_version(self.single, r.version_id)
            await self.window.acquire()
            await self.history([v])
            return
        self.kept = r.filters.located(self.src_loc).compiled() if r.filters else None
        allowed = self.kept.allows if self.kept is not None else None
        tasks: set[asyncio.Task[None]] = set()
        try:
            async for versions in histories(vsrc, self.prefix):
                if self.single is not None and versions[0].key != self.single:
                    continue
                if allowed is not None and not allowed(versions[0].key[len(self.prefix):]):
                    continue
                await self.window.acquire()
                if self.stop():
                    self.result.interrupted = True
                    self.window.release()
                    break
                task = asyncio.ensure_future(self.history(versions))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if tasks:
                await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()

    async def history(self, versions: list[ObjectVersion]) -> None:
        """One key's versions in order: those the journal holds skipped, the one a killed run was
        sending asked of DST first, and none after a version that failed."""
        journal, result = self.journal, self.result
        try:
            if self.request.as_of is not None:
                versions = at(versions, self.request.as_of)
            todo = [v for v in versions if self.request.include_delete_markers or not v.delete_marker]
            if self.kept is not None and self.kept.by_entry:  # --min-size, --max-age...: version by version
                todo = self.kept.select(todo, len(self.prefix))
            landed = journal.landed(versions[0].key) if journal is not None and versions else set()
            sending, began, after = journal.in_flight(versions[0].key) if journal is not None and versions \
                else (None, None, None)
            for i, v in enumerate(todo):
                if v.version_id in landed:
                    result.resumed += 1
                    continue
                if v.version_id == sending:  # in flight when the stopped run was killed: did it land?
                    made = await _landed(self.dst, self.dst_key_of(v.key), v, began, after)
                    if made is not None:
                        assert journal is not None
                        journal.record(v.key, v.version_id, made)
                        result.resumed += 1
                        continue
                    await _abort_left(self.dst, self.dst_key_of(v.key), began)
                if self.stop():
                    result.interrupted = True
                    return
                if not await self.one(v):
                    result.held += len(todo) - i - 1  # they must not land before it: left for a rerun
                    return
        finally:
            self.window.release()

    async def one(self, v: ObjectVersion) -> bool:
        """One version written (a delete marker: DST's key deleted), journaled, and told."""
        from ..plan import KeyMap
        from ..transfer.one_object import Transfer

        target = self.dst_key_of(v.key)
        src_url, dst_url = _url(self.src_loc, v.key, v.version_id), self.dst_loc.url_for(target)
        if self.journal is not None:
            self.journal.sending(v.key, v.version_id)
        size = 0
        try:
            if v.delete_marker:
                failed = await self.dst.delete_many([target])
                if failed:
                    raise StoreError(failed[0][1], op="delete", url=dst_url, key=target)
                self.result.markers += 1
            else:
                assert self.vsrc is not None
                source = _VersionSource(self.vsrc, self.src_loc, v.version_id)
                # a Store of one version: the contract's get/head, all a Transfer asks of a source
                transfer = Transfer(cast(Store, source), self.dst, KeyMap("", "", target), self.options,
                                    self.budget)
                size, _ = await transfer.copy(ObjectInfo(v.key, v.size, v.mtime, v.etag))
                self.result.versions += 1
                self.result.bytes += size
        except StoreError as exc:
            self.result.failures.append((src_url, str(exc)))
            self.to.notify(Failure("copy", src_url, dst_url, str(exc)))
            return False
        if self.journal is not None:
            self.journal.record(v.key, v.version_id, self.written.pop(target, None))
        self.to.notify(Copied(src_url, dst_url, size))
        return True


async def _landed(dst: Store, target: str, v: ObjectVersion, began: float | None, after: str | None) -> str | None:
    """Whether version `v`, being sent to `target` when a run was killed, landed there: the DST
    version id it made, or None when it must be sent (again).

    Asked of the key's versions at DST (one ListObjectVersions). With `after`, the DST version
    id of the key's last version landed before it, the answer is exact: a newer version at DST
    is this one (nothing else writes there meanwhile). Without it (the key's first version, or
    one after a delete marker), the newest version at DST is this one when it is of its kind
    and size (its ETag too, where both are MD5s), written since `began` (within the clock skew
    S3 allows). A DST that keeps no versions is written again: the same bytes over the same."""
    from ..leftover_uploads import SKEW

    if not dst.features.versions:
        return None
    try:
        page = await cast(VersionedStore, dst).list_versions_page(target, None, None, 100)
    except StoreError:
        return None  # cannot tell: written again, as before
    mine = [e for e in page.entries if e.key == target]
    if not mine or mine[0].version_id == "null":  # nothing there, or an unversioned bucket
        return None
    newest = mine[0]
    if newest.delete_marker != v.delete_marker or (not v.delete_marker and newest.size != v.size):
        return None
    if after is not None and after in {e.version_id for e in mine}:
        return newest.version_id if newest.version_id != after else None
    if newest.mtime is None or began is None or newest.mtime < began - SKEW:
        return None
    plain = [t for t in (newest.etag, v.etag) if t and "-" not in t]
    if len(plain) == 2 and plain[0] != plain[1]:
        return None
    return newest.version_id


async def _abort_left(dst: Store, target: str, began: float | None) -> None:
    """Abort the multipart upload a version cut short by a kill may have left open at `target`
    (one begun since `began`: engine/leftover_uploads.py), before the version is sent again."""
    from ..leftover_uploads import resolve_intent

    try:
        await resolve_intent(dst, target, began)
    except StoreError:
        pass  # left to the bucket's lifecycle rule or rm --incomplete-uploads


def at(history: list[ObjectVersion], when: float) -> list[ObjectVersion]:
    """The version a key showed at `when` (its history oldest first), as a one-element list; empty
    when it did not exist yet or had been deleted (S3 times have whole seconds: a version written in
    the second of `when` counts as there)."""
    before = [v for v in history if v.mtime is not None and v.mtime <= when]
    return [] if not before or before[-1].delete_marker else [before[-1]]


def _one_destination(dst: Location, dst_text: str, name: str) -> tuple[Location, str]:
    """(destination location, exact key) for one key's versions, as copy reads DST for one object."""
    if dst.is_s3:
        if not dst.prefix or dst.prefix.endswith("/"):
            return dst.with_prefix(""), dst.prefix + name
        return dst.with_prefix(""), dst.prefix
    path = dst.root
    if dst_text.endswith(("/", os.sep)) or os.path.isdir(path):
        return dst.with_prefix(""), name
    return Location("local", os.path.dirname(path), "", dst.raw), os.path.basename(path)


# ------------------------------------------------------------------ delete


async def rm_versions(url: str, *, s3: S3Options | None = None, filters: Filters = Filters(),
                      dry_run: bool = False, all_objects: bool = False,
                      subscriber: Subscriber | None = None) -> VersionsResult:
    """Delete every version and delete marker under URL (or of the one key it names) for good,
    1,000 (key, version id) pairs a DeleteObjects request; each one's event (as `rm`'s, its URL
    with ?versionId=) to the subscriber."""
    from ...stores import open_store

    loc = parse_location(url, s3)
    if not loc.is_bucket:
        raise UsageError(f"{url}: versions need a store that keeps them (an S3 bucket)")
    if not loc.prefix and not all_objects:
        raise UsageError(f"{url} is a whole bucket: add --all to delete every version in it")
    store = await open_store(loc)
    result = VersionsResult(dry_run=dry_run)
    to = subscriber or Subscriber()
    try:
        vstore = versioned(store, url)
        prefix, single = await resolve(vstore, loc)
        kept = filters.located(loc).compiled() if filters else None
        batch: list[ObjectVersion] = []

        async def flush() -> None:
            failed = {(k, v): why for k, v, why in
                      (await vstore.delete_versions([(x.key, x.version_id) for x in batch]) if not dry_run else [])}
            for x in batch:
                why = failed.get((x.key, x.version_id))
                if why is None:
                    if x.delete_marker:
                        result.markers += 1
                    else:
                        result.versions += 1
                else:
                    result.failures.append((_url(loc, x.key, x.version_id), why))
                to.notify(deletion(_url(loc, x.key, x.version_id), why, dry_run))
            batch.clear()

        async for page in version_pages(vstore, prefix):
            for v in page:
                if single is not None and v.key != single:
                    continue
                if kept is not None and not kept.keeps(v, v.key[len(prefix):]):
                    continue
                batch.append(v)
                if len(batch) == PAGE:
                    await flush()
        if batch:
            await flush()
    finally:
        await store.close()
    return result


def ls_version_pages(url: str, *, s3: S3Options | None = None) -> Iterator[list[ObjectVersion]]:
    """Pages of every version and delete marker under URL (or of the key it names), for `ls
    --all-versions`: a thread runs the listing so the caller iterates plainly."""
    import queue
    import threading

    out: "queue.Queue[Any]" = queue.Queue(maxsize=4)
    done = object()

    async def produce() -> None:
        from ...stores import open_store

        loc = parse_location(url, s3)
        store = await open_store(loc)
        try:
            vstore = versioned(store, url)
            prefix, single = await resolve(vstore, loc)
            async for page in version_pages(vstore, prefix):
                out.put([v for v in page if single is None or v.key == single])
        finally:
            await store.close()

    def run() -> None:
        try:
            asyncio.run(produce())
            out.put(done)
        except BaseException as exc:  # handed to the iterating thread
            out.put(exc)

    threading.Thread(target=run, daemon=True).start()
    while True:
        item = out.get()
        if item is done:
            return
        if isinstance(item, BaseException):
            raise item
        yield item

