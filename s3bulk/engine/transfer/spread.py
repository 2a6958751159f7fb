"""One big object downloaded by several processes at once.

A run that copies one object has one worker, and one worker is one event loop on one core: for a
1 GiB object that core does every receive into the part buffers and every write into the file,
while the machine's other cores wait. Here the object's parts are dealt out round-robin to this
process and to helper processes forked from it; each helper opens its own source store (its own
connections and retry wrapper), reads its parts into buffers it reuses, and writes them with
pwrite straight into the destination's preallocated temporary file, which it opens by name. The
part's bytes never cross a process boundary: a helper reports only the byte counts of finished
parts (progress) and, at its end, whether it failed and why. The destination is completed (renamed
into place) by this process once every part of every process has landed, and aborted (temporary
file removed) when any part failed, the run was stopped or cancelled.

How many processes: half the cores (so none on a 2-core machine), or S3BULK_SPREAD_PROCESSES.
When it applies (`spread_processes`): the destination's upload is a file other processes can write
at offsets (`shared_path`, local files), the source can be opened again in another process (S3, a
list/get server), the run has a single worker (a one-object run, or `-w 1`; with several workers
the other cores are busy already), no memory budget makes it flush part by part, the object is
above SPREAD_ABOVE (`S3BULK_SPREAD_ABOVE`, a size; `0` turns this off), and the platform forks.
The parts in flight stay `part_concurrency` in all, shared between the processes, so memory for
buffers is the same as in one process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import struct
import sys
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, runtime_checkable

from ...errors import StoreError
from ...config.sizes import parse_size
from ...config.urls import Location
from ...stores import StoreOptions

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ...quick_dataclass import dataclass

SPREAD_ABOVE = 128 * 1024 * 1024
MAX_PROCESSES = 8
# a helper's message: (bytes of a finished part, its number, its CRC when the object's full-object
# CRC is being checked, else 0), or (-len(error), 0, 0) followed by the pickled error, or, last,
# (-len(counts), -1, 0) followed by the pickled requests it sent (stores/requests.py)
_PROGRESS = struct.Struct("<qqQ")


@runtime_checkable
class SharedFile(Protocol):
    """An upload whose data is one preallocated file that any process may write at offsets."""

    shared_path: str


class HelperParts(Protocol):
    """Hears of each part a helper process wrote: its number, its CRC (when the object's checksum
    is being checked, else 0) and its size (in_parts.PartsJob.helper_part)."""

    def helper_part(self, number: int, crc: int, n: int) -> None: ...


def spread_above() -> int:
    """The size above which one object is spread over processes (0: never)."""
    raw = os.environ.get("S3BULK_SPREAD_ABOVE")
    if not raw:
        return SPREAD_ABOVE
    try:
        return parse_size(raw, "S3BULK_SPREAD_ABOVE")
    except Exception:
        return SPREAD_ABOVE


def spread_processes(size: int, part: int, upload: Any, src_remote: bool, workers: int, flush: bool) -> int:
    """How many processes (this one included) should move this object's parts; 1 means: only this one.
    Only a source reached over the network (`src_remote`: S3, a list/get server) gains from more."""
    limit = spread_above()
    if (limit <= 0 or size <= limit or workers != 1 or flush or not hasattr(os, "fork")
            or sys.platform != "linux" or not src_remote or not isinstance(upload, SharedFile)):
        return 1
    parts = -(-size // part)
    return max(1, min(_processes(), MAX_PROCESSES, parts))


def _processes() -> int:
    """Processes for one big object: S3BULK_SPREAD_PROCESSES, else half the cores this process may
    run on. Not all of them: receiving and writing a GiB takes kernel time beside the processes
    (softirq, page cache), and on a 2-core machine with the server on it (the benchmark) a second
    process measured no faster (median 8.1 against 7.5 s per GiB, load ~20) for +27 MiB of PSS."""
    raw = os.environ.get("S3BULK_SPREAD_PROCESSES", "")
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores // 2)


def deal(size: int, part: int, processes: int) -> list[list[tuple[int, int, int]]]:
    """Parts (number, start, end) of an object, dealt round-robin to `processes` processes, so
    each process's parts are spread over the whole object (the file fills evenly)."""
    shares: list[list[tuple[int, int, int]]] = [[] for _ in range(processes)]
    for number, start in enumerate(range(0, size, part), 1):
        shares[(number - 1) % processes].append((number, start, min(size, start + part)))
    return shares


async def run_parts(parts: list[tuple[int, int, int]], concurrency: int,
                    do_part: Callable[[int, int, int], Awaitable[None]]) -> None:
    """do_part for each of `parts`, at most `concurrency` at once; the first error is raised."""
    window = asyncio.Semaphore(max(1, concurrency))

    async def one(number: int, start: int, end: int) -> None:
        try:
            await do_part(number, start, end)
        finally:
            window.release()

    try:
        async with asyncio.TaskGroup() as tg:
            for number, start, end in parts:
                await window.acquire()
                tg.create_task(one(number, start, end))
    except BaseExceptionGroup as group:
        raise group.exceptions[0] from None


@dataclass(frozen=True)
class HelperTask:
    """What every helper of one object is given (in the fork's copy of memory, never sent): the
    source to open again, the object, the destination file to write at offsets, the parts each
    keeps in flight. `check` (a checksums.PartCrcs or None): helpers send each part's CRC back for
    it. `if_match`: the ETag every read of theirs names (stores/conditions.py): the object's parts
    all come from the one version the run saw, or the helper fails with SourceChanged."""

    location: Location
    store_options: StoreOptions
    key: str
    path: str
    concurrency: int
    check: Any = None
    if_match: str | None = None


class Helpers:
    """Forked helper processes, each moving its share of the parts; see the module docstring."""

    def __init__(self) -> None:
        self.pids: list[int] = []
        self.fds: list[int] = []

    def start(self, shares: list[list[tuple[int, int, int]]], task: HelperTask) -> None:
        """A helper forked for each share of the parts, each given `task`."""
        parent = os.getpid()
        for share in shares:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the helper: never returns
                os.close(r)
                _die_with(parent)
                _helper_main(w, share, task)
            os.close(w)
            self.pids.append(pid)
            self.fds.append(r)

    async def wait(self, parts: HelperParts, requests: dict[tuple[str, str], int] | None = None) -> None:
        """Until every helper has ended; each part they wrote goes to `parts` (in this loop), the
        requests the helpers sent are added into `requests` (the source store's count). Raises the
        first helper's error (or a StoreError naming how it died)."""
        import pickle  # here, not at import: only an object big enough for helpers gets here

        loop = asyncio.get_running_loop()

        def collect(fd: int) -> tuple[BaseException | None, dict[tuple[str, str], int]]:
            error: BaseException | None = None
            counted: dict[tuple[str, str], int] = {}
            with os.fdopen(fd, "rb", buffering=0) as pipe:
                while True:
                    head = _read_exact(pipe, _PROGRESS.size)
                    if head is None:
                        break
                    n, number, crc = _PROGRESS.unpack(head)
                    if n >= 0:
                        loop.call_soon_threadsafe(parts.helper_part, number, crc, n)
                        continue
                    blob = _read_exact(pipe, -n)
                    if number == -1:
                        try:
                            counted = pickle.loads(blob) if blob is not None else {}
                        except Exception:
                            pass
                        continue
                    try:
                        error = pickle.loads(blob) if blob is not None else None
                    except Exception:
                        error = None
                    error = error or StoreError("a helper process failed", op="get")
            return error, counted

        fds, self.fds = self.fds, []
        results = await asyncio.gather(*(asyncio.to_thread(collect, fd) for fd in fds))
        statuses = [await asyncio.to_thread(_reap, pid) for pid in self.pids]
        self.pids = []
        if requests is not None:
            for _, counted in results:
                for k, v in counted.items():
                    requests[k] = requests.get(k, 0) + v
        for (error, _), status in zip(results, statuses):
            if error is not None:
                raise error
            if status != 0:
                how = f"signal {-status}" if status < 0 else f"exit code {status}"
                raise StoreError(f"a helper process moving parts of this object died ({how})", op="get")

    def kill(self) -> None:
        """Stop every helper at once (cancelled run, failure elsewhere) and reap it."""
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in self.pids:
            _reap(pid)
        self.pids = []
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


def _read_exact(pipe: Any, n: int) -> bytes | None:
    chunks = b""
    while len(chunks) < n:
        got = pipe.read(n - len(chunks))
        if not got:
            return None
        chunks += got
    return chunks


def _reap(pid: int) -> int:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return 0
    return os.waitstatus_to_exitcode(status)


def _die_with(parent: int) -> None:
    """Have the kernel kill this helper when the process that forked it dies (SIGKILLed, crashed):
    its parts are of no use then, and it would go on fetching them. prctl(PR_SET_PDEATHSIG)
    rather than a pipe whose end-of-file the helper watches: helpers only exist on Linux
    (spread_processes), it costs no thread or loop reader in the helper, and it holds even while
    the helper is blocked in a write. The signal comes when the forking *thread* ends: that is the
    worker's event loop thread, which outlives its helpers (they are reaped or killed first). A
    parent that died before the call is caught by the getppid check."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def _helper_main(w: int, parts: list[tuple[int, int, int]], task: HelperTask) -> None:
    """Body of a helper process: its own event loop and source store; exits, never returns."""
    import pickle

    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # its parent decides what Ctrl-C means
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if hasattr(signal, "SIGUSR1"):
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        asyncio.events._set_running_loop(None)  # forked from inside the parent's running loop
        from ..loop import new_loop

        loop = new_loop()
        asyncio.set_event_loop(loop)
        loop.run_until_complete(_helper_parts(w, parts, task))
        code = 0
    except BaseException as exc:  # reported to the parent, which raises it
        try:
            blob = pickle.dumps(exc if isinstance(exc, StoreError) else StoreError(f"{type(exc).__name__}: {exc}",
                                                                                   op="get"))
        except Exception:
            blob = pickle.dumps(StoreError(str(exc)[:500], op="get"))
        try:
            os.write(w, _PROGRESS.pack(-len(blob), 0, 0) + blob)
        except OSError:
            pass
    finally:
        os._exit(code)


async def _helper_parts(w: int, parts: list[tuple[int, int, int]], task: HelperTask) -> None:
    import pickle

    from ...stores import open_store
    from ...stores.files.filesink import RangeSink
    from .part_buffers import part_buffer
    from .sinks import enabled, fill
    from ...stores.reading import read_range

    key, check, if_match = task.key, task.check, task.if_match  # every read held to the object's ETag
    src = await open_store(task.location, task.store_options)
    fd = os.open(task.path, os.O_WRONLY)
    buffers: list[memoryview] = []
    sinks = src.features.read_to and enabled()
    try:
        async def one(number: int, start: int, end: int) -> None:
            if sinks:  # written into the file as received, checksum on the way (sinks.py)
                sink = RangeSink(fd, start, end, check.algorithm if check is not None else None)
                crc = await fill(src, key, number, sink, _Collect() if check is not None else None, 1,
                                 lambda: AssertionError("unreachable: nothing is checked here"), if_match)
                os.write(w, _PROGRESS.pack(end - start, number, crc))
                return
            buf = buffers.pop() if buffers else None
            if buf is None or len(buf) < end - start:
                buf = part_buffer(end - start)
            try:
                data = await read_range(src, key, start, end, buf, if_match=if_match)
                crc = check.crc_of(data) if check is not None else 0
                await asyncio.to_thread(_pwrite_all, fd, data, start)
            finally:
                buffers.append(buf)
            os.write(w, _PROGRESS.pack(end - start, number, crc))

        await run_parts(parts, task.concurrency, one)
    finally:
        os.close(fd)
        await src.close()
        counted = getattr(src, "requests", None)
        if counted:  # the requests this helper sent, for the parent's count (before any error)
            blob = pickle.dumps(dict(counted))
            os.write(w, _PROGRESS.pack(-len(blob), -1, 0) + blob)


class _Collect:
    """What a helper's fill() hands the part's CRC to: nothing is checked here, the CRC goes back
    to the parent, whose check takes it (as for parts received into buffers)."""

    def add_crc(self, number: int, crc: int, size: int) -> None:
        pass


def _pwrite_all(fd: int, data: Any, offset: int) -> None:
    from ...stores.files.filesink import write_part

    write_part(fd, data, offset)  # allocates the part's range too, as this process's writes do
