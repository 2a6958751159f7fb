"""A wrapper store for what every backend needs alike: retries, adaptive concurrency, rate caps.

As object_store wraps its stores for limits and retries, every store the engine opens is
wrapped here, so the S3 paths (botocore and lean), the list/get store and local files all
retry the same way, and the summary can count what was retried.

- Retries: throttling, 5xx, dropped connections, timeouts and short or corrupt bodies are
  retried with exponential backoff and full jitter (sleep uniform(0, min(cap, base * 2^n)), or
  the server's Retry-After when longer, within the same cap); 403, 404 and other answers that
  cannot change are not. What is retried is decided by the error's class (StoreError.retryable).
- Throttling outlasts a storm: S3 answers 503 SlowDown (or 429, 503 Service Unavailable) for
  seconds to minutes when a prefix is hot, and AWS advises backing off that long. So throttling
  answers do not use up `--retries` (which counts the other failures): they are retried with their
  own exponential backoff (capped at `backoff_cap`, full jitter) for as long as `--retry-max-time`
  allows (default 600 s; with no cap, THROTTLE_RETRIES of them). A failure that is no throttle
  still fails after its retries, and `--retries 0` retries nothing.
- Time limits: `--request-deadline` bounds one attempt of a request from
  start to whole answer (off by default: a slow link that keeps moving is never cut off, and the
  silence timeout already catches a stalled one); `--retry-max-time` bounds the time spent on one
  request across all its attempts and backoff sleeps (default 600 s): no retry starts after it,
  and the request fails with the last attempt's error and a reason saying so, instead of
  retrying a request whose attempts each take minutes for the better part of an hour.
- Adaptive concurrency (AIMD, as TCP does it): a throttling answer halves the number of
  requests in flight, but only if its request was sent after the last decrease (answers to
  requests sent under the old limit say nothing about the new one); every success adds
  1/limit, about one more request per round trip. The limit is shared by all worker
  processes of a run through a small memory-mapped file, so one worker's SlowDown slows
  every worker talking to that bucket.
- Caps: --max-rps (requests per second) and --max-bandwidth (bytes per second), split
  for the whole run: one schedule per store in the shared file, taken in turn by every worker.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import fcntl
import mmap
import os
import random
import struct
import time
from contextvars import Token
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence, TypeVar, cast

from ..errors import NotFound, StoreError, Throttled, Transient
from ..http.requestlog import RETRY
from ..model import ObjectInfo, ObjectProps, Page, WorkUnit
from ..config.urls import Location
from .base import (WHOLE, ChecksumReader, FileBodyReader, Features, GetOptions, GetResult, LevelLister, ObjectHead, LevelPage, Multipart, ObjectChecksum,
                   ObjectVersion, OpenUpload, PartInfo, PartSizeReader, PartsHalted, PropsReader, ResumableUploads,
                   ServerSideCopier, Store, StreamedBody, StreamedPutter, Unsupported, VersionedStore, VersionPage, Writer,
                   abort_confirmed, part_request, unwrap)
from .features import mask

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ..quick_dataclass import dataclass

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ResilienceOptions:
    """Picklable settings; rates and concurrency are for this worker's share."""

    retries: int = 5                 # further attempts after the first
    backoff_base: float = 0.1        # seconds
    backoff_cap: float = 20.0
    concurrency: int = 64            # requests in flight at most (the AIMD ceiling)
    adaptive: bool = True
    max_rps: float = 0.0             # 0 = no cap
    max_bandwidth: float = 0.0       # bytes/s, 0 = no cap
    workers: int = 1                 # processes sharing one limit
    shared_name: str = ""            # identifies the run and the bucket; "" = not shared
    request_deadline: float = 0.0    # seconds one attempt may take in all, 0 = no deadline
    retry_max_time: float = 600.0    # seconds one request may take over all its attempts, 0 = no cap


class Stats:
    """What the wrapper did, read by the worker at each flush."""

    __slots__ = ("retries", "throttled")

    def __init__(self) -> None:
        self.retries = 0
        self.throttled = 0


class _SharedLimit:
    """[limit, time of last decrease, next request slot, next byte slot] as doubles, in a file every
    worker of the run maps. The two slots are the whole run's `--max-rps` and `--max-bandwidth`
    schedules (monotonic clock, which is one clock for all processes of a machine): a worker takes
    its turn under an flock of the file, so the caps hold for the run however the work is spread."""

    SIZE = 32

    def __init__(self, name: str, initial: float) -> None:
        self._mm: mmap.mmap | None = None
        self._fd = -1
        self._local = [initial, 0.0, 0.0, 0.0]
        if not name:
            return
        where = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"
        _sweep_stale(where)
        path = os.path.join(where, name)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.fstat(fd).st_size < self.SIZE:
                    os.ftruncate(fd, self.SIZE)
                    os.pwrite(fd, struct.pack("dddd", initial, 0.0, 0.0, 0.0), 0)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            self._mm = mmap.mmap(fd, self.SIZE)
            self._fd = fd
        except OSError:
            self._mm = None
            os.close(fd)
        self.path = path

    @property
    def shared(self) -> bool:
        return self._mm is not None

    def take_slot(self, which: int, cost: float) -> float:
        """Reserve `cost` seconds on schedule `which` (2: requests, 3: bytes); returns the monotonic
        time the caller may go at (now or later). Under an flock: read, advance, write."""
        now = time.monotonic()
        mm = self._mm
        if mm is None:
            start = max(now, self._local[which])
            self._local[which] = start + cost
            return start
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            start = max(now, struct.unpack_from("d", mm, 8 * which)[0])
            struct.pack_into("d", mm, 8 * which, start + cost)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        return start

    def get(self) -> tuple[float, float]:
        if self._mm is None:
            return self._local[0], self._local[1]
        return struct.unpack_from("dd", self._mm, 0)

    def set(self, limit: float, last: float | None = None) -> None:
        if self._mm is None:
            self._local[0] = limit
            if last is not None:
                self._local[1] = last
        elif last is None:
            struct.pack_into("d", self._mm, 0, limit)
        else:
            struct.pack_into("dd", self._mm, 0, limit, last)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._mm is not None:
            self._mm.close()
            self._mm = None
            try:
                os.unlink(self.path)  # the others keep their mapping; the name goes with the first to leave
            except OSError:
                pass


def shared_name(run_id: str, identity: str) -> str:
    """s3bulk-limit-<coordinator pid>-<hash>: a killed run's file can be told from a live one's."""
    pid = run_id.split("-", 1)[0]
    return f"s3bulk-limit-{pid}-" + hashlib.sha1(f"{run_id}\0{identity}".encode()).hexdigest()[:16]


def _sweep_stale(where: str) -> None:
    """Remove limit files of runs whose coordinator is gone (killed runs cannot clean up)."""
    try:
        names = [n for n in os.listdir(where) if n.startswith("s3bulk-limit-")]
    except OSError:
        return
    for name in names:
        pid = name.split("-")[2]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            try:
                os.unlink(os.path.join(where, name))
            except OSError:
                pass


class Limiter:
    """Requests in flight (AIMD), requests per second and bytes per second, for one worker."""

    def __init__(self, opts: ResilienceOptions, stats: Stats) -> None:
        self.opts = opts
        self.stats = stats
        self.workers = max(1, opts.workers)
        self.ceiling = float(max(1, opts.concurrency) * self.workers)
        self.shared = _SharedLimit(opts.shared_name, self.ceiling)
        self.active = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._limit_cache = (0.0, float(opts.concurrency))

    def limit(self) -> int:
        """This worker's share of the shared limit (read at most every 10 ms)."""
        now = time.monotonic()
        at, value = self._limit_cache
        if now - at > 0.01:
            value = max(1.0, self.shared.get()[0] / self.workers)
            self._limit_cache = (now, value)
        return int(value)

    async def acquire(self) -> None:
        if self.opts.adaptive:
            while self.active >= self.limit():
                fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._waiters.append(fut)
                try:
                    await asyncio.wait_for(fut, 0.05)  # the limit may rise without a release
                except asyncio.TimeoutError:
                    pass
                finally:
                    if fut in self._waiters:
                        self._waiters.remove(fut)
        self.active += 1
        if self.opts.max_rps > 0:
            await self._pace_rps()

    def release(self) -> None:
        self.active -= 1
        while self._waiters:
            fut = self._waiters.pop(0)
            if not fut.done():
                fut.set_result(None)
                break

    def _share(self) -> int:
        """How many take turns on this worker's schedule: 1 when the run's schedule is shared
        (the caps hold for the whole run); the worker count when it could not be (a fair share)."""
        return 1 if self.shared.shared else self.workers

    async def _pace_rps(self) -> None:
        rate = self.opts.max_rps / self._share()
        start = self.shared.take_slot(2, 1.0 / rate)
        wait = start - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)

    async def pace_bytes(self, n: int) -> None:
        if self.opts.max_bandwidth <= 0 or n <= 0:
            return
        rate = self.opts.max_bandwidth / self._share()
        start = self.shared.take_slot(3, n / rate)
        wait = start - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)

    def succeeded(self) -> None:
        if not self.opts.adaptive:
            return
        limit, last = self.shared.get()
        if limit < self.ceiling:
            self.shared.set(min(self.ceiling, limit + 1.0 / max(1.0, limit)))

    def throttled(self, sent_at: float) -> None:
        """A request sent at `sent_at` (time.time()) was told to slow down."""
        self.stats.throttled += 1
        if not self.opts.adaptive:
            return
        limit, last = self.shared.get()
        if sent_at > last:
            # halve what is in flight (the run's, estimated from this worker's), not a ceiling far
            # above it: a worker may hold fewer transfers than its limit allows (engine/run/inflight.py)
            flying = float(max(1, self.active) * self.workers)
            self.shared.set(max(float(self.workers), min(limit, flying) / 2), time.time())
            self._limit_cache = (0.0, 0.0)

    def close(self) -> None:
        self.shared.close()


class ResilientStore(Store, PartSizeReader, ChecksumReader, VersionedStore, PropsReader,
                     FileBodyReader, LevelLister):
    """Read side of a wrapped store: every call goes through the limiter and the retry loop.

    Everything is forwarded explicitly (no __getattr__): what the engine may use of a store is
    the contract in base.py, and `unwrap()` gives the store underneath where another store
    must recognise it (server-side copy). Its features are the inner store's, masked by the
    protocols this class forwards (stores/features.py): the same value wherever it forwards all."""

    def __init__(self, inner: Any, opts: ResilienceOptions) -> None:
        self.inner = inner
        self.opts = opts
        self.stats = Stats()
        self.limiter = Limiter(opts, self.stats)
        self.location: Location = inner.location
        self.features: Features = mask(inner.features, self)

    @property
    def ordered(self) -> bool:
        return self.features.ordered

    @property
    def requests(self) -> dict[tuple[str, str], int] | None:
        """The requests the store inside counts (stores/requests.py), None where it counts none."""
        return getattr(self.inner, "requests", None)

    def unwrap(self) -> Any:
        """The store this one wraps."""
        return self.inner

    async def _call(self, make: Callable[[], Awaitable[T]], *, on_retry_missing: bool = False,
                    op: str = "", key: str = "", deadline: bool = True,
                    halted: Callable[[], bool] | None = None) -> T:
        """make() until it succeeds, is not retryable, or the retries or --retry-max-time run out.
        `op`/`key` name the request in the errors this loop makes itself (deadline, give-up);
        deadline=False for calls that are many requests (a multipart server-side copy). A part of
        an upload passes `halted`: each attempt is a part's request (base.part_request), and once
        halted() (another part failed, the upload is being aborted) no further attempt starts."""
        opts, limiter = self.opts, self.limiter
        attempt = 0    # failures retried that were no throttling answer (bounded by opts.retries)
        throttled = 0  # throttling answers retried (bounded by opts.retry_max_time)
        retried_transient = False
        limit = opts.request_deadline if deadline else 0.0
        first = 0.0
        retry: Token[int] | None = None  # a retry's number, told to the request log (http/requestlog.py)
        while True:
            await limiter.acquire()
            sent_at = time.time()
            if not first:
                first = time.monotonic()
            try:
                if halted is not None:
                    with part_request():
                        result = await (self._within(make, limit, op, key) if limit > 0 else make())
                elif limit > 0:
                    result = await self._within(make, limit, op, key)
                else:
                    result = await make()
            except StoreError as exc:  # retried or not by its class (exc.retryable), never by its text
                throttle = isinstance(exc, Throttled)
                if throttle:
                    limiter.throttled(sent_at)
                if isinstance(exc, NotFound) and on_retry_missing and retried_transient:
                    return cast(T, None)  # an earlier attempt did it; its answer was lost
                if (not exc.retryable or opts.retries <= 0 or (halted is not None and halted())
                        or (throttled >= _throttle_retries(opts) if throttle else attempt >= opts.retries)):
                    raise
                retried_transient = True
                asked = exc.retry_after
                last = exc
            else:
                limiter.succeeded()
                return result
            finally:
                limiter.release()
                if retry is not None:
                    RETRY.reset(retry)
                    retry = None
            # throttles back off on their own count, the other failures on theirs (module docstring)
            if throttle:
                throttled += 1
                n = throttled
            else:
                attempt += 1
                n = attempt
            delay = random.uniform(0, min(opts.backoff_cap, opts.backoff_base * 2 ** min(n, 60)))
            if asked:  # the server's Retry-After, within the same cap
                delay = max(delay, min(asked, opts.backoff_cap))
            spent = time.monotonic() - first
            if opts.retry_max_time > 0 and spent + delay >= opts.retry_max_time:
                raise _gave_up(last, attempt + throttled, spent, opts.retry_max_time) from last
            self.stats.retries += 1
            await asyncio.sleep(delay)
            if halted is not None and halted():
                raise last
            retry = RETRY.set(attempt + throttled)

    async def _within(self, make: Callable[[], Awaitable[T]], limit: float, op: str, key: str) -> T:
        """make() cut off after `limit` seconds (--request-deadline) as a retryable failure."""
        cm = asyncio.timeout(limit)
        try:
            async with cm:
                return await make()
        except TimeoutError:
            if not cm.expired():
                raise  # a TimeoutError of make()'s own, not the deadline
            raise Transient(f"no complete answer within {limit:g} s (--request-deadline)", op=op,
                            url=self.location.url_for(key), key=key) from None

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        return await self._call(lambda: self.inner.list_page(prefix, unit, limit), op="list")

    async def head(self, key: str) -> ObjectInfo:
        return await self._call(lambda: self.inner.head(key), op="head", key=key)

    async def list_level(self, prefix: str, token: str | None, limit: int) -> LevelPage:
        if not self.features.one_level:
            raise self._unsupported("list one level", prefix)
        return await self._call(lambda: self.inner.list_level(prefix, token, limit), op="list")

    async def first_part_size(self, key: str) -> int | None:
        if not self.features.part_sizes:
            raise self._unsupported("part sizes", key)
        return await self._call(lambda: self.inner.first_part_size(key))

    async def object_checksum(self, key: str) -> ObjectChecksum | None:
        """features.checksums (forwarded, retried like head)."""
        return await self._call(lambda: self.inner.object_checksum(key))

    async def object_parts(self, key: str) -> list[tuple[int, int, str]] | None:
        """features.checksums (forwarded, retried like head)."""
        return await self._call(lambda: self.inner.object_parts(key))

    async def list_versions_page(self, prefix: str, key_marker: str | None, version_marker: str | None,
                                 limit: int) -> VersionPage:
        """features.versions (forwarded, retried)."""
        return await self._call(lambda: self.inner.list_versions_page(prefix, key_marker, version_marker, limit))

    async def head_version(self, key: str, version_id: str) -> ObjectVersion:
        return await self._call(lambda: self.inner.head_version(key, version_id))

    async def delete_versions(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str, str]]:
        return await self._call(lambda: self.inner.delete_versions(pairs))

    async def get(self, key: str, opts: GetOptions = WHOLE) -> GetResult:
        """The inner store's get, retried; --max-bandwidth paced before a range (its size is
        known), after a whole object or a first read (by what came)."""
        if opts is WHOLE:  # the plain whole read: the hot path, asked nothing else
            got = await self._call(lambda: self.inner.get(key), op="get", key=key)
            await self.limiter.pace_bytes(len(got.data))
            return got
        rng = opts.range
        if rng is not None:
            await self.limiter.pace_bytes(rng[1] - rng[0])
        if opts.with_props or opts.version_id is not None:
            if opts.with_props and not self.features.props:
                raise self._no_props(key)
            got = await self._call(lambda: self.inner.get(key, opts))  # named by the store's own errors
        else:
            got = await self._call(lambda: self.inner.get(key, opts), op="get", key=key)
        if rng is None and opts.version_id is None:
            await self.limiter.pace_bytes(len(got.data))
        return got

    def _no_props(self, key: str) -> Unsupported:
        return Unsupported("this store keeps no object properties", op="head",
                           url=self.location.url_for(key), key=key)

    async def read_props(self, key: str) -> ObjectProps:
        if not self.features.props:
            raise self._no_props(key)
        return await self._call(lambda: self.inner.read_props(key))

    async def read_small(self, key: str, most: int) -> tuple[ObjectInfo, GetResult | None, ObjectHead | None]:
        """An S3 object found, and read when small, by one GET (stores/s3/store.py read_small)."""
        return await self._call(lambda: self.inner.read_small(key, most), op="get", key=key)

    async def restore_status(self, key: str) -> str | None:
        """An archived object's x-amz-restore (S3 stores: stores/s3/store.py)."""
        return await self._call(lambda: self.inner.restore_status(key))

    async def read_tagging(self, key: str) -> str:
        if not self.features.props:
            raise self._no_props(key)
        return await self._call(lambda: self.inner.read_tagging(key))

    def read_body(self, key: str, start: int, end: int) -> StreamedBody:
        """features.file_bodies: the inner store's body, as it is (no request is made here; the
        PUT that sends it is retried by the destination's wrapper, reading it again)."""
        if not self.features.file_bodies:
            raise self._unsupported("read a body", key)
        body: StreamedBody = self.inner.read_body(key, start, end)
        return body

    async def close(self) -> None:
        self.limiter.close()
        await self.inner.close()

    def _unsupported(self, what: str, key: str = "") -> Unsupported:
        return Unsupported(f"this store cannot {what}", op=what, url=self.location.url_for(key), key=key)


class ResilientWriter(ResilientStore, Writer, ResumableUploads, ServerSideCopier, StreamedPutter):
    """A wrapped store that can also be written to (and maybe resume uploads, copy server-side)."""

    async def prepare(self) -> None:
        await self._call(self.inner.prepare)

    async def put(self, key: str, data: bytes, mtime: float | None = None, *,
                  props: ObjectProps | None = None) -> None:
        await self.limiter.pace_bytes(len(data))
        await self._call(lambda: self.inner.put(key, data, mtime, props=props), op="put", key=key)

    async def put_body(self, key: str, body: StreamedBody, mtime: float | None = None, *,
                       props: ObjectProps | None = None) -> None:
        """put() of a FileBody (features.streamed_puts): the file is read as it is sent, retries
        read it again."""
        if not self.features.streamed_puts:
            raise self._unsupported("put a streamed body", key)
        await self.limiter.pace_bytes(len(body))
        await self._call(lambda: self.inner.put_body(key, body, mtime, props=props), op="put", key=key)

    async def start_multipart(self, key: str, size: int, part_size: int,
                              mtime: float | None = None, *, props: ObjectProps | None = None) -> "RetriedUpload":
        upload = await self._call(lambda: self.inner.start_multipart(key, size, part_size, mtime, props=props))
        return RetriedUpload(self, upload)

    async def delete_many(self, keys: Sequence[str]) -> list[tuple[str, str]]:
        return await self._call(lambda: self.inner.delete_many(keys))

    async def list_parts(self, key: str, upload_id: str) -> list[PartInfo]:
        if not self.features.resumable_uploads:
            raise self._unsupported("list parts", key)
        return await self._call(lambda: self.inner.list_parts(key, upload_id))

    async def resume_multipart(self, key: str, upload_id: str, parts: Sequence[PartInfo], *,
                               props: ObjectProps | None = None) -> "RetriedUpload":
        if not self.features.resumable_uploads:
            raise self._unsupported("resume multipart upload", key)
        upload = await self._call(lambda: self.inner.resume_multipart(key, upload_id, parts, props=props))
        return RetriedUpload(self, upload)

    async def abort_multipart(self, key: str, upload_id: str) -> None:
        if not self.features.resumable_uploads:
            raise self._unsupported("abort multipart upload", key)
        # an abort whose answer was lost leaves no upload behind: NoSuchUpload on the retry is success
        await self._call(lambda: self.inner.abort_multipart(key, upload_id), on_retry_missing=True)

    async def list_uploads(self, prefix: str, key_marker: str | None = None,
                           upload_marker: str | None = None) -> tuple[list[OpenUpload], tuple[str, str] | None]:
        if not self.features.resumable_uploads:
            raise self._unsupported("list multipart uploads", prefix)
        return await self._call(lambda: self.inner.list_uploads(prefix, key_marker, upload_marker))

    def can_copy_from(self, src: Store) -> bool:
        return self.features.server_side_copy and bool(self.inner.can_copy_from(unwrap(src)))

    async def copy_from(self, src: Store, src_key: str, dst_key: str, size: int, mtime: float | None = None, *,
                        props: ObjectProps | None = None, replace: bool = False,
                        if_match: str | None = None) -> None:
        if not self.features.server_side_copy:
            raise self._unsupported("copy", dst_key)
        inner_src = unwrap(src)
        await self._call(lambda: self.inner.copy_from(inner_src, src_key, dst_key, size, mtime,
                                                      props=props, replace=replace, if_match=if_match),
                         op="copy", key=dst_key, deadline=False)  # may be many UploadPartCopy requests


class RetriedUpload:
    """A multipart upload whose parts and completion are retried like any request, and whose
    abort is confirmed (base.abort_confirmed) where the upload outlives the process."""

    def __init__(self, store: ResilientWriter, inner: Multipart) -> None:
        self.store, self.inner = store, inner
        self.upload_id: str | None = inner.upload_id
        self.halted = False     # another part failed: no part request starts any more
        self.left_open = False  # aborted, but the store still listed it after every try

    def halt(self) -> None:
        """The upload is about to be aborted (base.PartTasks): parts not yet sent are refused, parts
        in flight end with their current attempt."""
        self.halted = True

    async def put_part(self, number: int, offset: int, data: bytes) -> None:
        key = getattr(self.inner, "key", "")
        if self.halted:
            raise PartsHalted("another part of this upload failed", op="upload part",
                              url=self.store.location.url_for(key), key=key)
        await self.store.limiter.pace_bytes(len(data))
        await self.store._call(lambda: self.inner.put_part(number, offset, data), op="upload part",
                               key=key, halted=lambda: self.halted)

    async def complete(self) -> None:
        # a completion whose answer was lost leaves no upload behind: NoSuchUpload on the retry is success
        await self.store._call(self.inner.complete, on_retry_missing=True)

    async def abort(self) -> None:
        key = getattr(self.inner, "key", None)
        if self.upload_id is None or key is None or not self.store.features.resumable_uploads:
            await self.inner.abort()  # dies with the process (a local temporary file)
            return
        self.left_open = not await abort_confirmed(self.store, key, self.upload_id)


THROTTLE_RETRIES = 100  # throttling answers retried for one request when --retry-max-time is 0 (no cap)


def _throttle_retries(opts: ResilienceOptions) -> int:
    """How many throttling answers one request rides out: as many as --retry-max-time leaves time
    for (it ends them), or THROTTLE_RETRIES without that cap."""
    return 1 << 30 if opts.retry_max_time > 0 else THROTTLE_RETRIES


def _gave_up(exc: StoreError, attempts: int, spent: float, cap: float) -> StoreError:
    """The last attempt's error (same class, same op/url/key), saying why it is not retried."""
    out = copy.copy(exc)
    out.message = (f"{exc.message} (gave up after {attempts} attempt{'s' if attempts != 1 else ''} in "
                   f"{spent:.1f} s: the next retry would pass --retry-max-time {cap:g} s)")
    out.args = (out.message,)
    return out


def wrap(store: Any, opts: ResilienceOptions) -> ResilientStore:
    """The store wrapped for retries, adaptive concurrency and rate caps; writable (ResilientWriter)
    when the store declares writes."""
    return ResilientWriter(store, opts) if store.features.write else ResilientStore(store, opts)
