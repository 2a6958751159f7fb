"""Listed pages that wait for their turn to be printed, kept on disk instead of in memory.

Why: `ls` prints in key order, but its key ranges are listed in parallel and finish out of order.
Holding every page listed ahead of the range being printed would grow memory with the bucket;
not listing ahead (the old held-page limit) leaves the output waiting on one chain of pages. So
pages listed ahead, beyond a small in-memory budget, are written here and read back when the output
reaches them: memory stays flat, listings in flight stay high, and disk holds what is ahead of the
output.

One file per key range (`<dir>/<range id>`) in a private directory made on the first write
(`tempfile.mkdtemp`, so `$TMPDIR`): a range's file is removed as soon as the range has been
printed, the directory when the listing ends, fails or is closed early (Ctrl-C included; a
`weakref.finalize` is the backstop when the event loop is torn down under the generator). Files are
opened for each write and read (no descriptors held, whatever the number of ranges waiting).
What is written is the caller's bytes: a page of objects as one `marshal` record of plain tuples
(`encode_page`: ~0.2 us a key to write, ~0.4 to read), or the page's rendered text (`ls`).
"""

from __future__ import annotations

import marshal
import os
import shutil
import tempfile
import weakref
from typing import NamedTuple

from ...model import ObjectInfo


def encode_page(entries: list[ObjectInfo]) -> bytes:
    return marshal.dumps([tuple(e) for e in entries])


def decode_page(data: bytes) -> list[ObjectInfo]:
    make = ObjectInfo._make
    return [make(t) for t in marshal.loads(data)]


class Spilled(NamedTuple):
    """Where one page of range `sid` lies in that range's file."""

    sid: int
    offset: int
    length: int


class Spill:
    """Spilled pages of many key ranges, at most `max_bytes` on disk at once (`room()` says if
    another page fits)."""

    def __init__(self, max_bytes: int = 1 << 30, directory: str | None = None) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0           # on disk now
        self.pages = 0           # pages written over the whole listing (for tests and reports)
        self._parent = directory
        self._dir: str | None = None
        self._sizes: dict[int, int] = {}  # range id -> its file's size
        self._finalizer: weakref.finalize | None = None

    @property
    def path(self) -> str | None:
        """The directory, once something was spilled."""
        return self._dir

    def room(self) -> bool:
        return self.bytes < self.max_bytes

    def write(self, sid: int, data: bytes) -> Spilled:
        """Append one page's bytes to range `sid`'s file."""
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="s3bulk-ls-", dir=self._parent)
            self._finalizer = weakref.finalize(self, shutil.rmtree, self._dir, True)
        fd = os.open(os.path.join(self._dir, str(sid)), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            offset = self._sizes.get(sid, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        self._sizes[sid] = offset + len(data)
        self.bytes += len(data)
        self.pages += 1
        return Spilled(sid, offset, len(data))

    def read(self, where: Spilled) -> bytes:
        assert self._dir is not None
        fd = os.open(os.path.join(self._dir, str(where.sid)), os.O_RDONLY)
        try:
            chunks = []
            got = 0
            while got < where.length:
                chunk = os.pread(fd, where.length - got, where.offset + got)
                if not chunk:
                    raise OSError(f"spill file of range {where.sid} is shorter than written")
                chunks.append(chunk)
                got += len(chunk)
        finally:
            os.close(fd)
        return b"".join(chunks)

    def drop(self, sid: int) -> None:
        """Range `sid` is printed: its file goes."""
        size = self._sizes.pop(sid, None)
        if size is None or self._dir is None:
            return
        self.bytes -= size
        try:
            os.unlink(os.path.join(self._dir, str(sid)))
        except FileNotFoundError:
            pass

    def close(self) -> None:
        """Remove every file and the directory (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()
        self._sizes.clear()
        self.bytes = 0
