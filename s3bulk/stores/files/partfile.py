"""A partly downloaded file's record of the parts already in it, so that a resumed run fetches
only the rest of a large object.

A large object downloaded to local disk is written part by part into a preallocated temporary
file (stores/local/store.py, `.s3bulk-<hash>.s3bulk.part`) and renamed into place when every part is
in. When the run keeps a resume journal, that temporary file is no longer thrown away when the
run is interrupted: beside it sits this record, `.s3bulk-<hash>.ranges.s3bulk.part`, saying which
source version the file holds parts of and which parts are completely on disk. A resumed run
that lists the same source version continues the file; any other run (no --resume, or the
source changed) starts it over and removes both.

Why a sidecar file, not rows in the run's journal: the journal is written by the coordinator
alone, fed by messages over the event queue, while the parts are written by a worker and by
engine/transfer/spread.py's helper processes. A record is only true once the part's bytes are durable,
and the process that made them durable (fdatasync) can say so with one append right after,
with no message in flight in between that a kill could lose or reorder. The sidecar also lives
and dies with the file it describes (same directory and filesystem, removed with it), and a
stale one is found by the same name rule as the stale temporary file.

Format (text; a line counts only when complete, so a record torn by a kill is ignored):
    line 1   JSON: {"v": 1, "size", "part", "etag", "mtime", "version", "checksum"}: the
             source's identity and the part size the file is cut into (a resume uses this
             part size, not the one of today's options)
    then     "<part number> <crc>" per part whose bytes are on disk; crc is the part's CRC
             when the object's FULL_OBJECT checksum is checked (so the resumed run still checks
             the whole object without reading kept parts again), else -1

Durability: a part is recorded only after an fdatasync of the temporary file that began after
the part's write returned; a record never claims bytes a crash could lose. The records
themselves are not synced (a lost record means a part fetched again). Parts landing while an
fdatasync runs wait for the next one (group commit), so there is at most one fdatasync in flight
per object, in a thread, and the transfer never waits for it.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ...quick_dataclass import dataclass

VERSION = 1
NO_CRC = -1


@dataclass(frozen=True)
class SourceId:
    """What names one version of a source object: a resumed file continues only the same one."""

    size: int
    etag: str | None = None
    mtime: float | None = None
    version: str | None = None
    checksum: str | None = None  # "ALGORITHM:value" of a FULL_OBJECT checksum, when checked

    @property
    def checkable(self) -> bool:
        """Whether a later listing can tell this version from another (ETag or modification time)."""
        return self.etag is not None or self.mtime is not None

    def same(self, other: "SourceId") -> bool:
        """Conservative: a field known on both sides must agree; ETag and mtime must not both be
        unknown; the checksum must agree exactly (it decides which parts carry CRCs)."""
        if not (self.checkable and other.checkable) or self.size != other.size:
            return False
        if self.etag is not None and other.etag is not None and self.etag != other.etag:
            return False
        if self.etag is None or other.etag is None:  # no ETag to compare: the mtime must say it
            if self.mtime is None or other.mtime is None:
                return False
        if self.mtime is not None and other.mtime is not None and abs(self.mtime - other.mtime) >= 1e-3:
            return False
        if self.version is not None and other.version is not None and self.version != other.version:
            return False
        return self.checksum == other.checksum


@dataclass
class Record:
    """A sidecar as read back: the source it describes, its part size, and the parts on disk."""

    source: SourceId
    part: int
    parts: dict[int, int]  # part number -> CRC (NO_CRC when none was computed)
    length: int = 0        # bytes up to the last complete line: appending continues there


def sidecar_path(tmp: str) -> str:
    """The record's name beside temporary file `tmp` (listing skips both: .s3bulk-*.s3bulk.part)."""
    suffix = ".s3bulk.part"
    base = tmp[:-len(suffix)] if tmp.endswith(suffix) else tmp
    return base + ".ranges" + suffix


def load(path: str) -> Record | None:
    """The record at `path`, None when missing or unreadable (the object is then started over)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    length = data.rfind(b"\n") + 1
    lines = data[:length].split(b"\n")
    lines.pop()  # b"" after the last "\n" (a line torn by a kill is cut off above)
    if not lines:
        return None
    try:
        head = json.loads(lines[0])
        if head.get("v") != VERSION:
            return None
        source = SourceId(int(head["size"]), head.get("etag"), head.get("mtime"), head.get("version"),
                          head.get("checksum"))
        part = int(head["part"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if part <= 0:
        return None
    count = -(-source.size // part)
    parts: dict[int, int] = {}
    for line in lines[1:]:
        fields = line.split()
        if len(fields) != 2:
            continue
        try:
            number, crc = int(fields[0]), int(fields[1])
        except ValueError:
            continue
        if 1 <= number <= count:
            parts[number] = crc
    return Record(source, part, parts, length)


def part_span(number: int, part: int, size: int) -> tuple[int, int]:
    """Bytes [start, end) of part `number` (from 1)."""
    start = (number - 1) * part
    return start, min(size, start + part)


class RangeLog:
    """Records the parts of one temporary file as they become durable (see the module docstring).

    Used from one event loop. `landed` is called when a part's bytes are written (by this process
    or, reported over its pipe, by a helper process: both write the same file, so one fdatasync
    here covers them); `settle` waits until what landed is recorded (a graceful stop); `close`
    ends recording (the file completed or was given up)."""

    def __init__(self, data_path: str, path: str, *, header: dict[str, Any] | None = None,
                 continue_at: int = 0, synced: bool = False) -> None:
        """Opens the record for appending and the data file for its fdatasyncs: a new record
        starts with `header`; a continued one is first cut back to `continue_at` (Record.length),
        so a line a kill tore is not glued to the next. `synced`: every write is already
        fdatasynced by its writer (--flush-writes), so records need no sync of their own."""
        self.path = path
        self.synced = synced
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | (os.O_TRUNC if header is not None else 0)
        self._fd = os.open(path, flags, 0o600)
        try:
            if header is not None:
                os.write(self._fd, json.dumps(header).encode() + b"\n")
            else:
                os.ftruncate(self._fd, continue_at)
            # its own descriptor: the writer may close its one while an fdatasync runs here
            self._data = os.open(data_path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            os.close(self._fd)
            raise
        self._pending: list[tuple[int, int]] = []
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    def create(cls, data_path: str, source: SourceId, part: int, *, synced: bool = False) -> "RangeLog":
        header = {"v": VERSION, "part": part, **asdict(source)}
        return cls(data_path, sidecar_path(data_path), header=header, synced=synced)

    def landed(self, number: int, crc: int = NO_CRC) -> None:
        """Part `number`'s bytes were written (its write returned): record it once they are durable."""
        if self._closed:
            return
        self._pending.append((number, crc))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        while self._pending and not self._closed:
            batch, self._pending = self._pending, []
            try:
                if not self.synced:
                    await asyncio.to_thread(os.fdatasync, self._data)
                if self._closed:
                    break
                os.write(self._fd, b"".join(b"%d %d\n" % p for p in batch))
            except OSError:
                self._closed = True  # no more records: a resume fetches what is not recorded
        if self._closed:
            self._release()

    async def settle(self) -> None:
        """Until every part that landed is recorded (or recording failed)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    def close(self) -> None:
        """Record nothing more. An fdatasync in flight is left to finish in its thread (closing
        the descriptor under it is harmless: a call under way holds its own reference to the
        file, and at worst one not yet begun syncs another file or fails unseen), its task
        cancelled so that no task outlives the object."""
        self._closed = True
        self._pending = []
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._release()

    def _release(self) -> None:
        for name in ("_fd", "_data"):
            fd = getattr(self, name)
            if fd >= 0:
                setattr(self, name, -1)
                try:
                    os.close(fd)
                except OSError:
                    pass


@runtime_checkable
class PartialUpload(Protocol):
    """A multipart download whose file is kept for a resume (LocalMultipart from open_partial)."""

    def part_landed(self, number: int, crc: int = NO_CRC) -> None:
        """Part `number`'s bytes are written; recorded once durable."""
        ...

    async def discard(self) -> None:
        """Remove the file and its record (wrong bytes, or another version of the source)."""
        ...


@runtime_checkable
class PartialFiles(Protocol):
    """A destination that can keep a multipart download's file for a resume (stores/local/store.py)."""

    async def open_partial(self, key: str, size: int, part_size: int, source: SourceId,
                           mtime: float | None = None, *, props: Any = None,
                           resume: bool = False) -> tuple[Any, int, dict[int, int]]:
        """(upload, part size, {part number: CRC} already in the file)."""
        ...
