"""The store contract: one small protocol per capability (as rclone's Features / Precision() /
Hashes() and obspec do it).

Every store lists, heads and reads (`Store`: one `get` with GetOptions for every read of an
object's bytes, whole, ranged, into a caller's buffer, to a sink, of a version, with its
properties); what else it can do is a protocol of its own: write whole objects and in parts and
delete (`Writer`), keep multipart uploads open across processes so a later
run can list their parts, resume or abort them by upload id (`ResumableUploads`), copy inside itself
(`ServerSideCopier`), give a local file's range as a streamed body (`FileBodyReader`) or send one
(`StreamedPutter`), and the few HEAD-like readers (part sizes, checksums, versions, properties).
A store subclasses the protocols it implements, so mypy checks its methods against them.

`features` is derived from that (stores/features.py `features_of`: a capability is the protocol
implemented), with the few facts no method shows declared by hand in `traits`: listing order,
whether get fills a buffer in place or a sink as bytes arrive, mtime precision, content hashes,
conditional reads and writes, kept mtimes, object properties.
The engine asks `features`, never the concrete type, so a wrapper (resilient.py) answers with its
inner store's features, masked by what it forwards (rclone's Features.Mask). A method of a
capability a store lacks raises `Unsupported` (or is absent); the contract cases (s3bulk.testing)
check flags and protocols agree both ways.

Stores know nothing of concurrency or retries of their own; the engine bounds how many
calls are in flight and the wrapper retries. Every method raises only
s3bulk.errors.StoreError subclasses: each adapter translates its library's exceptions at
this boundary (a missing key, file or upload is always NotFound).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import weakref
from contextvars import ContextVar
from typing import (TYPE_CHECKING, Any, Awaitable, Callable, Iterator, NamedTuple, Protocol, Sequence, TypeVar, cast,
                    runtime_checkable)

from ..errors import NotFound, StoreError
from ..errors import PartsHalted, Unsupported
from ..model import ObjectInfo, ObjectProps, Page, WorkUnit
from ..config.urls import Location

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ..quick_dataclass import dataclass


@dataclass(frozen=True, slots=True)
class Features:
    """What a store can do beyond listing, heading and reading: the capability flags derived from
    the protocols it implements (stores/features.py), and its `Traits`; wrappers report their inner
    store's, masked.

    mtime_precision: resolution in seconds of the modification times the store reports (and,
    with keeps_mtime, keeps from put/multipart), None when it reports none. hashes: the kinds
    of content hash ObjectInfo.etag carries ("s3-etag": MD5 hex, or MD5 of the part MD5s with a
    "-N" suffix for N parts); empty when listings carry none.
    """

    ordered: bool = True             # list_page in UTF-8 byte order, honouring unit.after/until
    # get(into=) receives the bytes in the caller's buffer, no copy (multipart copies reuse a few
    # part buffers); get(sink=) hands them to the sink as they arrive (a ranged download holds no
    # part buffer): traits of the data path, every store honours both (copying once otherwise)
    read_into: bool = False
    read_to: bool = False
    # the capabilities: each the protocol of its name implemented (features.CAPABILITIES)
    write: bool = False              # Writer: prepare, put, start_multipart, delete_many
    resumable_uploads: bool = False  # ResumableUploads: uploads outlive the process, by upload id
    server_side_copy: bool = False   # ServerSideCopier (still ask can_copy_from for a given source)
    keeps_mtime: bool = False        # put(mtime=...) is what head/list report afterwards
    part_sizes: bool = False         # PartSizeReader: the size of part 1 of a multipart object
    # PropsReader, and what put/start_multipart/copy_from do with `props`: "s3" (headers, tags),
    # "xattrs" (a local file's extended attributes), None (the store keeps no properties)
    props: str | None = None
    checksums: bool = False          # ChecksumReader: the object's additional checksum (CRC64NVME, SHA256...)
    versions: bool = False           # VersionedStore: list, read and delete every version of a key
    file_bodies: bool = False        # FileBodyReader: read_body(key, start, end), a body streamed from a local file
    streamed_puts: bool = False      # StreamedPutter: put_body(key, body, mtime), a body sent chunk by chunk
    one_level: bool = False          # LevelLister: list_level(prefix, token, limit), `ls --no-recursive`
    # get(GetOptions(if_match=)) and copy_from(if_match=) hold to that ETag: another version of
    # the object raises SourceChanged instead of giving its bytes (stores/conditions.py)
    conditional_reads: bool = False
    # put, put_body, a multipart completion and copy_from honour stores/conditions.NO_CLOBBER: an
    # existing key raises DestinationExists and is left as it is (race-free --no-clobber); a store
    # without it is asked with a HEAD before each write (engine/transfer/one_object.py)
    conditional_writes: bool = False
    mtime_precision: float | None = None
    hashes: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Traits:
    """What a store says of itself that no method shows (so it cannot be derived): the fields of
    the same names in `Features`, declared by hand once per store class (`traits`)."""

    ordered: bool = True
    read_into: bool = False
    read_to: bool = False
    keeps_mtime: bool = False
    props: str | None = None
    conditional_reads: bool = False
    conditional_writes: bool = False
    mtime_precision: float | None = None
    hashes: frozenset[str] = frozenset()


@runtime_checkable
class PartSizeReader(Protocol):
    """features.part_sizes: how big the parts of a multipart object were (its ETag is the MD5 of
    the part MD5s, so comparing it with a local file needs the part size the uploader really used)."""

    async def first_part_size(self, key: str) -> int | None:
        """Size of part 1 (None when the object was not uploaded in parts)."""
        ...


class ObjectChecksum(NamedTuple):
    """An object's additional checksum as S3 keeps it: algorithm (checksums.ALGORITHMS), the base64
    value, and FULL_OBJECT (of all its bytes) or COMPOSITE (of its parts' checksums, value "...-N")."""

    algorithm: str
    value: str
    kind: str


class ObjectHead(NamedTuple):
    """What a GET's answer head said of an object it did not read (a one-object download refused
    for its length, stores/s3/store.py read_small): its properties and its checksum (the GET asked
    for it, x-amz-checksum-mode), the answers of the HEADs a download in parts would ask again."""

    key: str
    props: ObjectProps
    checksum: ObjectChecksum | None


@runtime_checkable
class ChecksumReader(Protocol):
    """features.checksums: the checksum the object carries, which (unlike its ETag) does not depend on
    its encryption and, when FULL_OBJECT, not on the part size it was uploaded with either."""

    async def object_checksum(self, key: str) -> ObjectChecksum | None:
        """The object's checksum, None when it carries none; NotFound if absent."""
        ...

    async def object_parts(self, key: str) -> list[tuple[int, int, str]] | None:
        """A multipart object's parts as (number, size, base64 checksum), to check a COMPOSITE
        checksum on download; None when the server does not tell them (then asked no more)."""
        ...


class ObjectVersion(NamedTuple):
    """One version of a key (ListObjectVersions), or a delete marker (no size, no etag)."""

    key: str
    version_id: str
    size: int | None
    mtime: float | None
    etag: str | None
    latest: bool
    delete_marker: bool = False


class VersionPage(NamedTuple):
    """One page of versions in key order, each key's newest first; the markers say where the next
    page starts (both None: done)."""

    entries: list[ObjectVersion]
    next_key: str | None = None
    next_version: str | None = None


@runtime_checkable
class VersionedStore(Protocol):
    """features.versions: a store that keeps every version of a key (a versioned S3 bucket); a
    version's bytes are a `get` with GetOptions(version_id=...)."""

    async def list_versions_page(self, prefix: str, key_marker: str | None, version_marker: str | None,
                                 limit: int) -> VersionPage: ...

    async def head_version(self, key: str, version_id: str) -> ObjectVersion:
        """NotFound when there is no such version (a delete marker's id is one: it has no body)."""
        ...

    async def delete_versions(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str, str]]:
        """Delete (key, version id) pairs, versions and delete markers alike, for good; returns
        (key, version id, why) for those that could not be."""
        ...


class PartInfo(NamedTuple):
    """One part already uploaded to an open multipart upload. `extra` is what the store needs to
    complete the upload with this part (ETag, checksums), opaque to the engine."""

    number: int
    size: int
    extra: tuple[tuple[str, str], ...] = ()


class OpenUpload(NamedTuple):
    """A multipart upload open at a store (ListMultipartUploads): its key, id and when it began
    (epoch seconds, the store's clock; None when the store does not say)."""

    key: str
    upload_id: str
    initiated: float | None


@runtime_checkable
class PropsReader(Protocol):
    """features.props: an object's properties (ObjectProps), so a copy can carry them. A streamed
    copy asks them with the GET it makes anyway (get with_props); a multipart or server-side one
    asks with one HEAD (read_props); tags only when the answer says there are some. These two read
    no body, so they are not `get`: a HEAD and GetObjectTagging are requests of their own."""

    async def read_props(self, key: str) -> ObjectProps: ...

    async def read_tagging(self, key: str) -> str:
        """The object's tags, URL-encoded as x-amz-tagging takes them ("" when none)."""
        ...


class GetOptions(NamedTuple):
    """What one GET asks (object_store's GetOptions): which bytes, which version, what else.

    range: bytes [start, end) (None: the whole object); first: up to this many first bytes, and
    the object's size in the result (how the engine reads an object the listing gave no size:
    small ones whole, large ones then in parts); if_match: the ETag the object must still have
    (another version raises SourceChanged instead of giving its bytes, where
    features.conditional_reads); version_id: that version (features.versions); with_props: the
    object's properties from the same answer (features.props); with_mtime: only the file time its
    metadata carries (stores/file_times.py); into: the range received into this buffer, the result
    a view of it, where features.read_into (a store without may give bytes of its own); sink: the
    range handed to this sink (stores/files/filesink.RangeSink: begin(), write()) as it arrives
    where features.read_to, else in one go; nothing is kept in the result.

    A NamedTuple, so immutable and shared: WHOLE (the default) is the one instance a plain read
    passes, so the hot path allocates no options."""

    range: tuple[int, int] | None = None
    first: int | None = None
    if_match: str | None = None
    version_id: str | None = None
    with_props: bool = False
    with_mtime: bool = False
    into: memoryview | None = None
    sink: Any = None


WHOLE = GetOptions()  # the whole object, nothing else: what a plain read passes


class GetResult:
    """What one GET gave (object_store's GetResult): the bytes (a view of `into` when one was given;
    empty when they went to a sink), the object's size where the answer told it (always with
    `first`), its properties (with_props) and the file time its metadata carries (with_mtime,
    with_props; None without one)."""

    __slots__ = ("data", "size", "props", "mtime")

    data: bytes  # bytes, bytearray or a memoryview (of `into`) alike: mypy's bytes (strict_bytes off)

    def __init__(self, data: bytes, size: int | None = None,
                 props: ObjectProps | None = None, mtime: float | None = None) -> None:
        self.data, self.size, self.props, self.mtime = data, size, props, mtime


def range_result(data: bytes, opts: GetOptions) -> GetResult:
    """A range read whole into memory, handed over as `opts` asks: to its sink, into its buffer
    (a view of it), or as it is. For stores whose reads give bytes anyway (memory, list/get)."""
    if opts.sink is not None:
        opts.sink.begin()
        opts.sink.write(memoryview(data))
        return GetResult(b"")
    if opts.into is not None:
        buf = opts.into
        buf[:len(data)] = data
        return GetResult(buf[:len(data)])
    return GetResult(data)


@runtime_checkable
class Store(Protocol):
    """What every store can do: list a page, head, and get (the one read of an object's bytes)."""

    location: Location
    features: Features

    @property
    def ordered(self) -> bool:
        """features.ordered: False for token-only paging (the list/get server)."""
        ...

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        """One page of keys under `prefix` inside `unit` (after < key <= until), in UTF-8 byte
        order of the key for ordered stores; `next_after`/`next_token` say where the next starts."""
        ...

    async def head(self, key: str) -> ObjectInfo:
        """Size (and what else the store knows) of one key; NotFound if absent."""
        ...

    async def get(self, key: str, opts: GetOptions = WHOLE) -> GetResult:
        """The object's bytes as `opts` asks (GetOptions): the whole object, bytes [start, end) of
        it (Corrupt if fewer arrive), or its first bytes and size; NotFound if absent. The one
        read of a body: whole, ranged, into a buffer, to a sink, of a version, with properties,
        in one method, so a store implements the ways a GET can go once and a wrapper retries
        one call. What reads no body (read_props, a HEAD; read_tagging) stays a method of its own.
        Conveniences over it (the whole body, a range into a buffer) are in stores/reading.py."""
        ...

    async def close(self) -> None: ...


class LevelPage(NamedTuple):
    """One page of a listing one level deep (`ls --no-recursive`): the objects directly under the
    prefix and the common prefixes below it (each `prefix + name + "/"`, S3's CommonPrefixes), each
    list in UTF-8 key order; `next_token` continues the listing (None: the last page)."""

    entries: list[ObjectInfo]
    prefixes: list[str]
    next_token: str | None = None


@runtime_checkable
class LevelLister(Protocol):
    """features.one_level: one level under a prefix, as S3's ListObjectsV2 with delimiter "/"
    gives it, so browsing a bucket costs one request per 1,000 entries of that level, not a walk
    of everything below it."""

    async def list_level(self, prefix: str, token: str | None, limit: int) -> LevelPage:
        """The keys starting with `prefix` and holding no "/" after it, and the prefixes `prefix +
        name + "/"` of the others, each once over the whole listing, at most about `limit` of both
        a page (a store whose listing has no delimiter may give one page of all); `token` is the
        last page's next_token. NotFound when the bucket or directory does not exist."""
        ...


class StreamedBody(Protocol):
    """A request body that is not in memory (stores/files/bodies.FileBody): its length, and its
    bytes read whole where a data path cannot stream it."""

    def __len__(self) -> int: ...

    async def read_all(self) -> bytes: ...


@runtime_checkable
class FileBodyReader(Protocol):
    """features.file_bodies: a range of an object as a body an upload streams from it (a local
    file read chunk by chunk as the socket takes it), so a PUT holds a few chunks, not the object."""

    def read_body(self, key: str, start: int, end: int) -> StreamedBody:
        """Bytes [start, end) of `key`, read when the body is sent (every pass of one version)."""
        ...


@runtime_checkable
class StreamedPutter(Protocol):
    """features.streamed_puts: put() of a StreamedBody, sent as it is read; a retry reads it again."""

    async def put_body(self, key: str, body: StreamedBody, mtime: float | None = None, *,
                       props: ObjectProps | None = None) -> None: ...


class Multipart(Protocol):
    """An object being written in parts, possibly in parallel and out of order.

    `upload_id` names the upload for ResumableUploads (None where the upload dies with the
    process, e.g. a local temporary file): the journal records it so a later run can resume."""

    @property
    def upload_id(self) -> str | None: ...

    async def put_part(self, number: int, offset: int, data: bytes) -> None: ...

    async def complete(self) -> None: ...

    async def abort(self) -> None:
        """Never raises. Where the upload outlives the process it is aborted until the store no
        longer lists it (abort_confirmed); one still listed after every try is `left_open` (where
        the upload has that attribute), for the caller to keep recorded."""
        ...


@runtime_checkable
class Writer(Store, Protocol):
    """features.write: whole objects, multipart objects, deletes; a Writer is a Store too (it lists,
    HEADs and reads what it wrote), so the engine needs no second type for its destination."""

    async def prepare(self) -> None:
        """Check (and where it makes sense create) the destination before any object is written."""
        ...

    async def put(self, key: str, data: bytes, mtime: float | None = None, *,
                  props: ObjectProps | None = None) -> None:
        """Write a whole object; it appears under `key` only once complete. Stores that keep a
        modification time (features.keeps_mtime) set it to `mtime`, so a later sync sees the two
        sides as equal; S3 keeps a time given it as user metadata (x-amz-meta-mtime, rclone's:
        stores/file_times.py), and is given one only for a local file's upload. Stores with
        features.props write it with `props` (None: their defaults)."""
        ...

    async def start_multipart(self, key: str, size: int, part_size: int,
                              mtime: float | None = None, *, props: ObjectProps | None = None) -> Multipart: ...

    async def delete_many(self, keys: Sequence[str]) -> list[tuple[str, str]]:
        """Delete keys (a missing key is no failure); returns (key, why) for those that could not be."""
        ...


@runtime_checkable
class ResumableUploads(Protocol):
    """features.resumable_uploads: an upload left open by a stopped run, found by its id."""

    async def list_parts(self, key: str, upload_id: str) -> list[PartInfo]:
        """The parts the upload holds, by number; NotFound when the upload is gone."""
        ...

    async def resume_multipart(self, key: str, upload_id: str, parts: Sequence[PartInfo], *,
                               props: ObjectProps | None = None) -> Multipart:
        """The upload, continuing with `parts` (from list_parts) already in place; `props` gives
        what every further part must carry again (an SSE-C key, requester pays)."""
        ...

    async def abort_multipart(self, key: str, upload_id: str) -> None:
        """Abort the upload; NotFound when it is already gone (completed or aborted)."""
        ...

    async def list_uploads(self, prefix: str, key_marker: str | None = None,
                           upload_marker: str | None = None) -> tuple[list[OpenUpload], tuple[str, str] | None]:
        """One page of the uploads open under `prefix`, in key order: (uploads, the (key, upload id)
        markers of the next page, or None after the last). What finds an upload nothing recorded
        (engine/leftover_uploads.py)."""
        ...


@runtime_checkable
class ServerSideCopier(Protocol):
    """features.server_side_copy: copy without the bytes passing through us."""

    def can_copy_from(self, src: Store) -> bool:
        """True when this store can copy from `src` itself (same endpoint and credentials, ...)."""
        ...

    async def copy_from(self, src: Store, src_key: str, dst_key: str, size: int,
                        mtime: float | None = None, *, props: ObjectProps | None = None,
                        replace: bool = False, if_match: str | None = None) -> None:
        """Copy src_key to dst_key. The copy keeps the source's properties, as CopyObject does,
        with `props`' write-only settings (ACL, encryption, storage class) applied; with
        `replace` the copy gets exactly `props` (metadata and tags) instead. Given `if_match`
        (an ETag, where features.conditional_reads; stores/conditions.py) only that version of
        the source is copied: another raises SourceChanged, and a copy in parts is aborted."""
        ...


def unwrap(store: object) -> object:
    """The innermost store under any wrappers (each wrapper offers `unwrap()`)."""
    while True:
        inner = getattr(store, "unwrap", None)
        if inner is None:
            return store
        nxt = inner()
        if nxt is store:
            return store
        store = nxt


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


# Who hears the id of the multipart upload a server-side copy in parts opens for itself (a
# ServerSideCopier's copy_from, S3's UploadPartCopy): the transfer sets it around one such copy
# (engine/transfer/ways.py ServerSide), so that the worker knows the upload the moment its
# CreateMultipartUpload answers. A forced stop with no journal then aborts it by that id, its one
# request sent at once; without it the stop had to list the key's uploads first, a round trip that
# under load came too late and left the upload open. Unset (None): nobody asks.
COPY_UPLOAD_OPENED: ContextVar[Callable[[str], None] | None] = ContextVar("s3bulk_copy_upload_opened",
                                                                           default=None)


async def upload_in_parts(upload: Multipart, size: int, part: int, concurrency: int,
                          do_part: Callable[[int, int, int], Awaitable[None]]) -> None:
    """Run do_part(number, start, end) for every part, at most `concurrency` at once (never more
    tasks than that exist), then complete the upload. On any failure the parts in flight end
    (PartTasks), the upload is aborted and the first error itself is raised."""
    async def parts() -> None:
        async with PartTasks(upload) as tasks:
            for number, start in enumerate(range(0, size, part), 1):
                await tasks.room(lambda: concurrency)
                if tasks.failed:
                    break
                tasks.start(do_part(number, start, min(size, start + part)))

    await complete_or_abort(upload, parts)


# the tasks now inside a part's request (part_request): a failure of another part lets them end
# rather than cancel them (PartTasks)
_SENDING: "weakref.WeakSet[asyncio.Task[Any]]" = weakref.WeakSet()


@contextlib.contextmanager
def part_request() -> Iterator[None]:
    """Marks the current task as sending a part (an UploadPart or UploadPartCopy request) while
    inside: PartTasks waits for such a request to end instead of cancelling it."""
    task = asyncio.current_task()
    if task is None:
        yield
        return
    _SENDING.add(task)
    try:
        yield
    finally:
        _SENDING.discard(task)


_T = TypeVar("_T")


class PartTasks:
    """The tasks of one upload's parts, as a TaskGroup but for what a failure does.

    A TaskGroup cancels the other tasks at the first failure, and the abort that follows then races
    the parts cut off mid-request: their bytes are already in buffers between us and the server (the
    kernel's, a proxy's, a load balancer's) and may still arrive whole after the abort, and a server
    may bring the aborted upload back with them (versitygw does; AWS says "it might be necessary to
    abort a given multipart upload multiple times"). So here the first failure stops new parts,
    halts the upload (`halt()`, where it has one: no part starts another attempt), cancels the tasks
    that are not inside a part's request (reading their source, waiting for memory), and waits for
    the requests in flight to end: once their answers came, nothing more of the upload can arrive.
    Cancelled from outside (a forced stop), it cancels every task and waits for them."""

    def __init__(self, upload: object) -> None:
        self.upload = upload
        self.tasks: set[asyncio.Task[None]] = set()
        self.error: BaseException | None = None
        self._ended = asyncio.Event()
        self._failed = asyncio.Event()

    @property
    def failed(self) -> bool:
        return self.error is not None

    async def room(self, most: Callable[[], int]) -> None:
        """Until fewer than most() tasks run, or one failed. Counted from the tasks' ends (done
        callbacks), which come also for a task cancelled before it ever ran, whose own `finally`
        never does: a count kept inside the tasks could wait forever for it."""
        while len(self.tasks) >= most() and self.error is None:
            self._ended.clear()
            await self._ended.wait()

    async def until_failed(self, work: Awaitable[_T]) -> _T | None:
        """work's result, or None when a part failed first (work is then cancelled). For a loop
        that feeds parts from a source that may be slow or silent (a stream's next read): a
        TaskGroup would cancel it at a part's failure, and this ends its wait the same way, while
        the parts inside their requests are let end. A result that came with the failure is
        returned: the caller checks `failed` and gives back what it holds."""
        task = asyncio.ensure_future(work)
        failed = asyncio.ensure_future(self._failed.wait())
        try:
            await asyncio.wait((task, failed), return_when=asyncio.FIRST_COMPLETED)
        finally:
            failed.cancel()
            if not task.done():
                task.cancel()
        return task.result() if task.done() and not task.cancelled() else None

    def start(self, part: Awaitable[None]) -> "asyncio.Task[None]":
        """The part's task (a done callback on it runs once the part has ended, however it ended:
        the time to give back what the part read from)."""
        task = asyncio.ensure_future(part)
        self.tasks.add(task)
        task.add_done_callback(self._one_ended)
        return task

    def _one_ended(self, task: "asyncio.Task[None]") -> None:
        self.tasks.discard(task)
        self._ended.set()
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.fail(exc)

    def fail(self, exc: BaseException) -> None:
        """Stop the upload for `exc` as a part's failure does (the first error is the one kept and
        raised at the end): also for the loop feeding the parts, when its own source fails (a
        stream's read, a stream too long), so the parts already sent end before the abort."""
        if self.error is not None:
            return
        self.error = exc
        self._failed.set()
        halt = getattr(self.upload, "halt", None)
        if halt is not None:
            halt()
        for other in self.tasks:
            if other not in _SENDING:
                other.cancel()

    async def __aenter__(self) -> "PartTasks":
        return self

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None:  # the loop starting the parts failed or was cancelled
            await self._cancel_all()
            return
        try:
            while self.tasks:
                self._ended.clear()
                await self._ended.wait()
        except BaseException:
            await self._cancel_all()
            raise
        if self.error is not None:
            raise self.error

    async def _cancel_all(self) -> None:
        for task in self.tasks:
            task.cancel()
        cancelled = False
        while self.tasks:
            try:
                await asyncio.wait(set(self.tasks))
            except asyncio.CancelledError:
                cancelled = True  # cancelled again: the tasks still end before this does
        if cancelled:
            raise asyncio.CancelledError()


async def complete_or_abort(upload: Multipart, send_parts: Callable[[], Awaitable[None]]) -> None:
    """await send_parts(), then complete the upload; on any failure (a cancellation too) abort it and
    raise the first error itself, not the ExceptionGroup of the parts' task group. Every upload in
    parts ends here, so none is left open by an error that escaped its bookkeeping."""
    try:
        await send_parts()
        await upload.complete()
    except BaseException as exc:
        await upload.abort()  # inside the except clause: an abort may ask why (sys.exception())
        if isinstance(exc, BaseExceptionGroup):
            raise exc.exceptions[0] from None
        raise


ABORT_TRIES = 5     # AbortMultipartUpload sent at most this often for one upload
ABORT_WAIT = 0.5    # seconds before the second, doubled (with jitter) before each further one
ABORT_WAIT_CAP = 8.0


async def abort_confirmed(store: Any, key: str, upload_id: str, *, tries: int = ABORT_TRIES,
                          wait: float = ABORT_WAIT, cap: float = ABORT_WAIT_CAP) -> bool:
    """True when the upload is confirmed gone (why_still_open); never raises a StoreError."""
    return await why_still_open(store, key, upload_id, tries=tries, wait=wait, cap=cap) is None


async def why_still_open(store: Any, key: str, upload_id: str, *, tries: int = ABORT_TRIES,
                         wait: float = ABORT_WAIT, cap: float = ABORT_WAIT_CAP) -> str | None:
    """Abort the upload (features.resumable_uploads) until it is gone: after each
    AbortMultipartUpload, ListParts must answer NoSuchUpload; while it still lists the upload (a part
    that arrived after the abort brought it back) or cannot say, abort again after a growing wait
    with jitter, `tries` times in all (about 15 s at most by default). None when confirmed gone,
    else why it may still be open (an abort refused outright, e.g. access denied, ends the tries at
    once): the caller keeps it recorded, or says so. Never raises a StoreError."""
    uploads = cast(ResumableUploads, store)
    why = f"still listed after {tries} abort{'s' if tries != 1 else ''}"
    for attempt in range(tries):
        if attempt:
            await asyncio.sleep(random.uniform(wait, min(cap, wait * 2 ** attempt)))
        try:
            await uploads.abort_multipart(key, upload_id)
        except NotFound:
            pass  # gone already (aborted before, or completed): ListParts says which is true now
        except StoreError as exc:
            if not exc.retryable:
                return str(exc)
            why = str(exc)
            continue
        try:
            await uploads.list_parts(key, upload_id)
        except NotFound:
            return None
        except StoreError as exc:
            why = f"cannot confirm the abort: {exc}"
            continue
        why = f"still listed after {attempt + 1} abort{'s' if attempt else ''}"
    return why
