"""Pipes: one object from a byte stream of unknown length (stdin), or one object to a stream (stdout).

Why a module of its own: the engine moves many objects whose sizes a listing gave; a pipe is one
object whose size is unknown until the stream ends (upload) or whose bytes must leave strictly in
order (download). Both use only the store contract (stores/base.py) through the retry wrapper
(stores/resilient.py), so retries, rate caps and adaptive concurrency are the engine's own.

Memory is bounded by the part size times the buffers in use: an upload holds at most
`concurrency + 1` part buffers (one filling from the stream while `concurrency` parts go up), a
download at most `concurrency` (ranged GETs in flight, written out in order as each one's turn
comes). An upload's parts run in stores/base.py PartTasks: when one fails (or the stream does),
no new part starts, the parts inside their requests end, and only then is the upload aborted, so
no part lands after the abort and brings it back; a buffer goes back to the pool only once the
part reading it has ended. Blocking reads and writes of the stream run in short-lived daemon
threads, never in the default executor: a read blocked on a silent stdin must not keep the
process alive after Ctrl-C.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections import deque
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable, Coroutine, Protocol, TypeVar, cast

from ...errors import BucketMissing, NotFound, S3BulkError, UsageError
from ...errors import Interrupted, StreamFailed, StreamTooLong
from ...model import WorkUnit
from ...stores.reading import read_range
from ...stores.base import (MAX_PARTS, Multipart, PartTasks, Store, Writer, complete_or_abort,
                            part_size_for)
from ...config.urls import Location, S3Options, pipe_target
from ..plan import TransferOptions

T = TypeVar("T")

ReadInto = Callable[[memoryview], int]     # blocking: fill some of the view, 0 at end of stream
WriteAll = Callable[[memoryview], None]    # blocking: write all of the view (BrokenPipeError if the reader left)


@dataclass(frozen=True, slots=True)
class PipeResult:
    """What one pipe moved: bytes, and the parts it took (0 for a single PUT or GET)."""

    url: str
    bytes: int
    parts: int


async def _stream_io(fn: Callable[[memoryview], T], view: memoryview, what: str) -> T:
    """fn(view) off the loop; an OSError of the stream becomes one line (a reader that went away
    stays BrokenPipeError: the caller ends quietly on it)."""
    try:
        return await in_thread(fn, view)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StreamFailed(f"{what}: {exc.strerror or exc}") from None


# ------------------------------------------------------------------ blocking stream I/O off the loop


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """fn(*args) in a daemon thread of its own. Cancelling the await leaves the thread to finish
    (or die with the process): unlike asyncio.to_thread, exit never waits for a blocked read."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not fut.done():
            fut.set_result(value) if ok else fut.set_exception(value)

    def run() -> None:
        try:
            result: Any = fn(*args)
            ok = True
        except BaseException as exc:  # handed to the awaiting task
            result, ok = exc, False
        try:
            loop.call_soon_threadsafe(settle, ok, result)
        except RuntimeError:  # the loop is gone: nobody is waiting any more
            pass

    threading.Thread(target=run, name="s3bulk-pipe-io", daemon=True).start()
    return await fut


def fd_reader(fd: int) -> ReadInto:
    """A ReadInto over a file descriptor (stdin is 0)."""
    return lambda view: os.readv(fd, [view])


def fd_writer(fd: int) -> WriteAll:
    """A WriteAll over a file descriptor (stdout is 1); partial writes are carried on."""
    def write(view: memoryview) -> None:
        while view:
            n = os.write(fd, view)
            view = view[n:]
    return write


def stream_reader(stream: Any) -> ReadInto:
    """A ReadInto over a file descriptor (int) or a binary file object (readinto, else read)."""
    if isinstance(stream, int):
        return fd_reader(stream)
    if hasattr(stream, "readinto"):
        return lambda view: stream.readinto(view) or 0

    def read(view: memoryview) -> int:
        data = stream.read(len(view))
        view[:len(data)] = data
        return len(data)
    return read


def stream_writer(stream: Any) -> WriteAll:
    """A WriteAll over a file descriptor (int) or a binary file object (partial writes carried on)."""
    if isinstance(stream, int):
        return fd_writer(stream)

    def write(view: memoryview) -> None:
        while view:
            n = stream.write(view)
            view = view[len(view) if n is None else n:]
    return write


def _fill(read: ReadInto, view: memoryview) -> int:
    """Read until the view is full or the stream ends; how many bytes came."""
    got = 0
    while got < len(view):
        n = read(view[got:])
        if not n:
            break
        got += n
    return got


# ------------------------------------------------------------------ upload: stream -> one object


class SentMeter(Protocol):
    """Hears the bytes of each part (or the single PUT) the server has taken: a meter's truth
    (cli/meter.py's ByteMeter)."""

    def add(self, n: int) -> None: ...


class _Unmetered:
    def add(self, n: int) -> None:
        pass


async def upload_stream(store: Writer, key: str, read: ReadInto, *, part_size: int, concurrency: int,
                        url: str = "", meter: SentMeter | None = None) -> PipeResult:
    """Write the stream to `key`: one PUT when it ends within the first part, else a multipart
    upload of `part_size` parts, `concurrency` in flight. Any failure, cancellation or Ctrl-C
    aborts the upload, so nothing appears under `key` unless the whole stream did. `meter` is
    told the bytes of each part (or the single PUT) the server has taken."""
    url = url or key
    await store.prepare()
    up = _StreamUpload(read, part_size, concurrency, meter or _Unmetered())
    first = await up.take()
    n_first = await up.fill(first)
    second = await up.take() if n_first == part_size else None
    n_second = await up.fill(second) if second is not None else 0
    if n_second == 0:  # the whole stream fits one part: a single PUT
        await store.put(key, bytes(first[:n_first]))
        up.meter.add(n_first)
        return PipeResult(url, n_first, 0)
    up.upload = await store.start_multipart(key, 0, part_size)
    await complete_or_abort(up.upload, lambda: up.parts([(cast(memoryview, second), n_second)], first, n_first))
    return PipeResult(url, up.total, up.number)


class _StreamUpload:
    """The state of one stream's multipart upload: its part buffers (`concurrency` going up, one
    filling), the parts started and the bytes they hold."""

    def __init__(self, read: ReadInto, part_size: int, concurrency: int, meter: SentMeter) -> None:
        self.read, self.part_size, self.meter = read, part_size, meter
        self.slots = asyncio.Semaphore(concurrency + 1)  # part buffers: `concurrency` going up, one filling
        self.spare: list[memoryview] = []
        self.upload: Multipart | None = None
        self.total = self.number = 0

    async def take(self) -> memoryview:
        await self.slots.acquire()
        return self.spare.pop() if self.spare else memoryview(bytearray(self.part_size))

    def give(self, buf: memoryview) -> None:
        self.spare.append(buf)
        self.slots.release()

    async def fill(self, buf: memoryview) -> int:
        read = self.read
        return await _stream_io(lambda view: _fill(read, view), buf, "cannot read the input")

    async def _send(self, number: int, offset: int, buf: memoryview, n: int) -> None:
        assert self.upload is not None
        await self.upload.put_part(number, offset, buf[:n])
        self.meter.add(n)

    def _start(self, tasks: PartTasks, buf: memoryview, n: int) -> None:
        # the buffer goes back once the part's task has ended, however it ended (even cancelled
        # before it ran, when its own `finally` never would): never while its request may read it
        tasks.start(self._send(self.number, self.total, buf, n)).add_done_callback(lambda _: self.give(buf))

    async def parts(self, queued: list[tuple[memoryview, int]], cur: memoryview, n: int) -> None:
        # PartTasks, not a TaskGroup: at a failure the parts inside their requests end before the
        # abort (complete_or_abort), so none lands after it and brings the upload back
        assert self.upload is not None
        async with PartTasks(self.upload) as tasks:
            try:
                await self._feed(tasks, queued, cur, n)
            except Exception as exc:  # the stream's own failure: the parts already sent end first too
                tasks.fail(exc)

    async def _feed(self, tasks: PartTasks, queued: list[tuple[memoryview, int]], cur: memoryview, n: int) -> None:
        """Start a part per buffer the stream fills, until it ends or a part failed; a wait for a
        buffer or for the stream ends at a part's failure (a silent stdin must not hold the abort)."""
        part_size = self.part_size
        while True:
            self.number += 1
            if self.number > MAX_PARTS:
                raise StreamTooLong(f"the stream is longer than {MAX_PARTS:,} parts of {part_size:,} bytes; "
                                    "give --expected-size (or a larger --part-size)")
            self._start(tasks, cur, n)
            self.total += n
            if queued:
                cur, n = queued.pop()
                continue
            if n < part_size:
                return  # the stream ended inside this part
            buf = await tasks.until_failed(self.take())
            if buf is None:
                return
            if tasks.failed:
                self.give(buf)
                return
            got = await tasks.until_failed(self.fill(buf))
            if got is None:
                return  # a part failed during the read: its thread may still fill `buf`, never taken again
            if got == 0 or tasks.failed:
                self.give(buf)
                return
            cur, n = buf, got


# ------------------------------------------------------------------ download: one object -> stream


async def download_stream(store: Store, key: str, write: WriteAll, *, part_size: int, concurrency: int,
                          url: str = "") -> PipeResult:
    """Write the object to the stream: HEAD, then ranged GETs, `concurrency` in flight, each
    written out as soon as every part before it has been. A reader that goes away
    (BrokenPipeError) stops the GETs and is raised to the caller."""
    url = url or key
    size = (await store.head(key)).size or 0
    if size <= part_size:
        data = await read_range(store, key, 0, size) if size else b""
        await _stream_io(write, memoryview(data), "cannot write the output")
        return PipeResult(url, size, 0)
    into = store.features.read_into
    spare: list[memoryview] = []
    pending: deque[tuple[asyncio.Task[Any], memoryview | None]] = deque()
    starts = iter(range(0, size, part_size))

    def launch() -> bool:
        start = next(starts, None)
        if start is None:
            return False
        end = min(size, start + part_size)
        if into:
            buf = spare.pop() if spare else memoryview(bytearray(part_size))
            coro: Awaitable[Any] = read_range(store, key, start, end, buf)
        else:
            buf = None
            coro = read_range(store, key, start, end)
        pending.append((asyncio.ensure_future(coro), buf))
        return True

    parts = 0
    try:
        for _ in range(concurrency):
            if not launch():
                break
        while pending:
            task, buf = pending.popleft()
            data = await task
            await _stream_io(write, data if isinstance(data, memoryview) else memoryview(data),
                             "cannot write the output")
            parts += 1
            if buf is not None:
                spare.append(buf)
            launch()
    finally:
        for task, _ in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*(t for t, _ in pending), return_exceptions=True)
    return PipeResult(url, size, parts)


async def not_an_object(store: Store, loc: Location, key: str) -> S3BulkError:
    """The error for a key that HEAD did not find: a prefix (one line saying cat reads one
    object), or nothing at all."""
    if store.features.ordered:
        try:
            page = await store.list_page(key.rstrip("/") + "/", WorkUnit(), 1)
            if page.entries:
                return UsageError(f"{loc.url_for(key)} is a prefix, not one object: give the full key of one object")
        except BucketMissing as exc:  # a HEAD answer has no body to say the bucket is missing
            return exc
        except S3BulkError:
            pass
    return NotFound("no such key", op="get", url=loc.url_for(key), key=key)


# ------------------------------------------------------------------ running with Ctrl-C


def run_interruptible(make: Callable[[], Coroutine[Any, Any, T]], what: str) -> T:
    """Run make() in a new event loop. The first SIGINT or SIGTERM cancels it (an upload then
    aborts itself) and becomes Interrupted(`what`); handlers are installed only in the main thread."""
    async def main() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        hit: list[int] = []

        def stop(signum: int) -> None:
            if not hit:
                hit.append(signum)
                task.cancel()

        installed = []
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(signum, stop, signum)
                    installed.append(signum)
                except (RuntimeError, ValueError, NotImplementedError):
                    pass
        try:
            return await make()
        except asyncio.CancelledError:
            if hit:
                raise Interrupted(what, hit[0]) from None
            raise
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)

    return asyncio.run(main())


def pipe_sizes(part_size: int, concurrency: int, bytes_in_flight: int, expected_size: int | None,
               upload: bool, budget: bool) -> tuple[int, int]:
    """(part size, parts in flight) for a pipe: the part fits 10,000 parts of `expected_size`, and
    the buffers (concurrency + 1 for an upload, concurrency for a download) fit `bytes_in_flight`.
    Under a memory budget a part size too large for two buffers is refused up front."""
    part = part_size_for(expected_size or 0, part_size)
    buffers = bytes_in_flight // part
    extra = 1 if upload else 0
    if buffers < 1 + extra:
        if budget:
            raise UsageError(f"--max-memory cannot hold {1 + extra} parts of {part // (1024 * 1024)} MiB "
                             f"(the part size {'--expected-size needs' if expected_size else 'given'}); "
                             "give more memory")
        return part, 1
    return part, max(1, min(concurrency, buffers - extra))


# ------------------------------------------------------------------ one pipe, from a URL


def pipe_options(options: TransferOptions, *, max_memory: int | None, expected_size: int | None,
                 upload: bool, src: str, dst: str) -> TransferOptions:
    """Options for one pipe in this process: part size and parts in flight chosen so the buffers
    fit `options.max_bytes_in_flight`, or `max_memory` when given (engine/memory_budget.py decides the share)."""
    from ..memory_budget import fit_to_memory

    options = replace(options, workers=1)
    if max_memory is not None:
        options = replace(fit_to_memory(options, max_memory, src, dst), workers=1)
    part, inflight = pipe_sizes(options.part_size, options.part_concurrency, options.max_bytes_in_flight,
                                expected_size, upload, max_memory is not None)
    # the store's connections and AIMD ceiling are concurrency + part_concurrency: one transfer
    return replace(options, part_size=part, part_concurrency=inflight, concurrency=1)


def run_pipe(url: str, s3: S3Options | None, options: TransferOptions, *, read: ReadInto | None = None,
             write: WriteAll | None = None, meter: SentMeter | None = None) -> PipeResult:
    """Upload from `read` to the object `url` names, or download it to `write` (exactly one of
    them), in a new event loop; Ctrl-C or SIGTERM raise Interrupted after an upload is aborted."""
    from ...stores import open_store

    upload = read is not None
    loc, key = pipe_target(url, s3, writing=upload)
    shown = loc.url_for(key)

    async def go() -> PipeResult:
        store: Any = await open_store(loc, options.store_options())
        try:
            if read is not None:
                if not store.features.write:
                    raise UsageError(f"{url} cannot be written to")
                return await upload_stream(store, key, read, part_size=options.part_size,
                                           concurrency=options.part_concurrency, url=shown, meter=meter)
            assert write is not None
            try:
                return await download_stream(store, key, write, part_size=options.part_size,
                                             concurrency=options.part_concurrency, url=shown)
            except NotFound as exc:
                if isinstance(exc, BucketMissing):
                    raise
                raise await not_an_object(store, loc, key) from None
        finally:
            await store.close()

    what = f"the upload to {shown} was aborted: nothing was written" if upload else f"stopped reading {shown}"
    return run_interruptible(go, what)
