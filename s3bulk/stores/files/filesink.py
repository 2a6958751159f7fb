"""One range of an object written into a local file as it arrives.

A multipart download used to receive each 8 MiB part into a part buffer, then pwrite the buffer
into the file and compute its checksum over it: every byte was written to memory by the receive,
read back from memory (the buffer is far bigger than the CPU's cache) by the pwrite and the
checksum. Here the HTTP client hands each chunk it received (at most its 256 KiB scratch buffer)
to a RangeSink, which pwrites it at its offset in the file and feeds the checksum with it at once,
while the chunk is still in cache; no part buffer exists at all.

What stays as it was: the file is sized up front (size_for_parts) and each range allocates its
own extent before its first byte (write_part's posix_fallocate); the range's bytes are counted and
a short or long answer is Corrupt (stores/s3/wire.py); a failed read starts the range over at its
first byte (begin(), called by every attempt); a part is recorded for a resume only once whole and
durable (stores/files/partfile.py, by the caller).

Where the writes run: by default on the event loop, synchronously: while a pwrite runs nothing
is read from the socket, so a destination slower than the network slows the reading
(back-pressure through the socket's buffer to the server) instead of piling bytes up in memory.
A download in parts (engine/transfer/sinks.py) turns on off_thread(): the chunks are received into
buffers of a small pool and pwritten by one thread of the process (offthread.py), so the loop's
core receives the next chunk while another core copies the last into the page cache (a 1 MiB
chunk's pwrite takes ~0.3 ms, the handoff microseconds); the pool's size is the back-pressure.
"""

from __future__ import annotations

import errno
import os
from typing import Any, Callable

# a chunk below this is written on the loop's thread (its buffer kept for the next read): on a slow
# link the reads are small, and waking the writer thread for each would cost more than its write
_HANDOFF = 256 * 1024

# the lean client's statuses whose body is the range asked for: 206, and nothing else (a 200 to a
# ranged GET is the whole object, received into memory and cut by the caller)
_PARTIAL = 206


class RangeSink:
    """Bytes [start, end) of an object, written at the same offsets of the file `fd` as they arrive.

    `hasher` (checksums.Hasher or None) is fed every byte in order, started over with the range;
    `on_error` turns an OSError of the file into the caller's error (a StoreError naming the
    destination), raised from write() and so from the read."""

    __slots__ = ("fd", "start", "end", "pos", "hasher", "algorithm", "on_error", "_allocated",
                 "off_thread", "writes", "held", "queued", "failed", "small")

    def __init__(self, fd: int, start: int, end: int, algorithm: str | None = None,
                 on_error: Callable[[OSError], BaseException] | None = None) -> None:
        self.fd, self.start, self.end = fd, start, end
        self.algorithm = algorithm
        self.on_error = on_error
        self.pos = start
        self.hasher: Any = None
        self._allocated = False
        self.off_thread = False  # chunks written by offthread.py's thread (off_thread())
        self.writes: Any = None  # offthread.Writes then
        self.held: memoryview | None = None  # the pool's buffer the next read goes into
        self.queued = 0  # chunks handed to that thread, not yet written (counted under its lock)
        self.failed: BaseException | None = None  # the OSError of a write there
        self.small = False  # the last read was small: the next goes into the thread's scratch

    def use_thread(self) -> None:
        """Chunks received into the pool's buffers and written by the process's writer thread
        (offthread.py, started on the first such read): the caller then settle()s before it takes
        the range as written."""
        self.off_thread = True

    def file_error(self, exc: OSError) -> BaseException:
        """The caller's error for a failed write into the file (a StoreError naming it)."""
        return self.on_error(exc) if self.on_error is not None else exc

    def room(self) -> memoryview:
        """BodySink with off_thread (http/client.py): the buffer the next read goes into: one of
        the pool's, or while the reads are small this thread's scratch (no buffer held per lane)."""
        if self.small:  # written here before the next read: the client's own scratch serves
            from ...http.client import thread_sink_scratch

            return thread_sink_scratch()
        held = self.held
        if held is None:
            writes = self.writes
            if writes is None:
                from .offthread import writes as process_writes

                writes = self.writes = process_writes()
            held = self.held = writes.take()
        return held

    def settle(self, quiet: bool = False) -> None:
        """Wait until every chunk handed to the writer thread is written; its error, if a write
        failed, raised here (unless `quiet`: the read failed already, and the file must not be
        closed while a write to it is pending). A buffer held for a read that never came goes
        back to the pool."""
        writes = self.writes
        if writes is None:
            return
        writes.settle(self)
        if self.held is not None:
            writes.give(self.held)
            self.held = None
        if quiet:
            self.failed = None
        else:
            self._raise_failed()

    def _raise_failed(self) -> None:
        """The writer thread's failure for this sink, if any, raised once (then forgotten)."""
        failed, self.failed = self.failed, None
        if failed is not None:
            self._raise(failed)

    def _raise(self, exc: BaseException) -> None:
        """A write's failure raised as the caller's error (an OSError as file_error() says)."""
        if isinstance(exc, OSError):
            raise self.file_error(exc) from exc
        raise exc

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def written(self) -> int:
        """Bytes of the range written since the last begin()."""
        return self.pos - self.start

    def begin(self) -> None:
        """Start (over) at the range's first byte: every read attempt calls this first."""
        if self.writes is not None:
            self.settle()  # the last attempt's chunks written (or failed) before the hasher starts over
        self.pos = self.start
        if self.algorithm is not None:
            from ..checksums import Hasher

            self.hasher = Hasher(self.algorithm)
        if not self._allocated:
            self._allocated = True
            self._allocate()

    def accepts(self, status: int, length: int, headers: dict[str, str]) -> bool:
        """BodySink (http/client.py): only the range itself, as a 206 of exactly its length."""
        return status == _PARTIAL and length == self.end - self.start and self.pos == self.start

    def write(self, chunk: memoryview) -> None:
        """BodySink (http/client.py): the next received bytes, written where they belong."""
        n = len(chunk)
        if self.pos + n > self.end:  # never past the range: the next one's bytes are not ours
            from ...errors import Corrupt

            raise Corrupt(f"range got more than its {self.end - self.start} bytes", op="get")
        held = self.held
        if held is not None and chunk.obj is held.obj:  # received into the pool's buffer
            if self.failed is not None:
                self._raise_failed()
            if n >= _HANDOFF:  # written by the writer thread
                if self.hasher is not None:  # here, in order (the writes may land in any order)
                    self.hasher.update(chunk)
                self.held = None
                self.writes.put(self, held, n, self.pos)
                self.pos += n
                return
            self.small = True  # small reads (a slow link): the next go to this thread's scratch
            self.held = None
            self._write_here(chunk, n)
            self.writes.give(held)
            return
        if self.off_thread and n >= _HANDOFF:
            self.small = False  # a full read: the next goes to the pool again
        self._write_here(chunk, n)

    def _write_here(self, chunk: memoryview, n: int) -> None:
        try:
            offset = self.pos
            view = chunk
            while view:
                done = os.pwrite(self.fd, view, offset)
                view, offset = view[done:], offset + done
        except OSError as exc:
            raise self.file_error(exc) from exc
        if self.hasher is not None:
            self.hasher.update(chunk)
        self.pos += n

    def crc(self) -> int:
        """The range's checksum as the part checks take it (checksums.PartCrcs.add_crc,
        CompositeParts.add_crc): the first 8 bytes of its digest, as an integer."""
        return int.from_bytes(self.hasher.digest()[:8], "big") if self.hasher is not None else 0

    def _allocate(self) -> None:
        """The range's extent, before its first byte (as write_part does for a whole part): a
        full disk fails here, not as a short write in the middle."""
        try:
            allocate_range(self.fd, self.start, self.end - self.start)
        except OSError as exc:
            raise self.file_error(exc) from exc


def allocate_range(fd: int, offset: int, length: int) -> None:
    """Reserve bytes [offset, offset + length) of the file before they are written: its extents
    laid out as if preallocated, and ENOSPC here rather than as a short write. Nothing where the
    filesystem cannot (EOPNOTSUPP and kin) or where allocating costs as much as writing (tmpfs:
    allocation_zeroes)."""
    if length <= 0 or allocation_zeroes(fd):
        return
    try:
        os.posix_fallocate(fd, offset, length)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise


# filesystems whose fallocate writes zeros into memory pages: tmpfs, ramfs
_ZEROING = frozenset(("tmpfs", "ramfs"))
_zeroing_devices: dict[int, bool] = {}


def allocation_zeroes(fd: int) -> bool:
    """Whether allocating a range of the file `fd` ahead of writing it costs as much as writing
    it: on tmpfs posix_fallocate zeroes every page of the range (~8 ms for 32 MiB here, on the
    event loop, then the data is copied over the zeros), where on a disk filesystem it only
    reserves extents. Such a file is not preallocated range by range: its free space was checked
    when it was sized (store.size_for_parts) and a later full filesystem still fails the write.
    Looked up once per device in /proc/self/mountinfo (tmpfs has an anonymous device, major 0)."""
    try:
        dev = os.fstat(fd).st_dev
    except OSError:
        return False
    known = _zeroing_devices.get(dev)
    if known is not None:
        return known
    zeroes = False
    if os.major(dev) == 0:
        wanted = f"{os.major(dev)}:{os.minor(dev)}"
        try:
            with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    fields = line.split()
                    if len(fields) > 3 and fields[2] == wanted and "-" in fields:
                        kind = fields.index("-") + 1
                        zeroes = kind < len(fields) and fields[kind] in _ZEROING
                        break
        except OSError:
            pass
    _zeroing_devices[dev] = zeroes
    return zeroes


def size_for_parts(fd: int, size: int) -> None:
    """Give a file that parts will be written into at their offsets its final length, after
    checking the filesystem has room for it (a full disk fails the object before any byte moves).

    Not posix_fallocate of the whole file here: on tmpfs that zeroes every page of it up front
    (~0.3 s per GiB) while no part can be received yet; each part allocates its own range
    as it is written (write_part), in the thread that writes it, beside the receiving."""
    try:
        fs = os.fstatvfs(fd)
    except OSError:
        fs = None
    if fs is not None and fs.f_blocks:  # 0 blocks: a filesystem that does not say (procfs-like)
        free = (fs.f_bfree if os.geteuid() == 0 else fs.f_bavail) * (fs.f_frsize or fs.f_bsize)
        if free < size:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    os.ftruncate(fd, size)


def write_part(fd: int, data: Any, offset: int) -> int:
    """Write data at offset of a file sized by size_for_parts, allocating its range first (extents
    as if the file had been preallocated, and ENOSPC here rather than as a short write); returns
    the offset after it. Big parts come here in a thread (nothing here touches the event loop)."""
    view = memoryview(data)
    allocate_range(fd, offset, view.nbytes)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n
    return offset
