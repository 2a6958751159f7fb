"""Request bodies that are not in memory: a byte range of a local file, sent chunk by chunk.

Why: an upload of one object up to the multipart threshold used to read the whole file into one
bytes object first (and a single PUT's body then sat in the socket's write buffer as a second
copy), so one 64 MiB PUT cost 64-128 MiB of memory however small --max-buffer was. A FileBody is
read in CHUNK-sized pieces as the socket takes them (the HTTP client awaits the transport's
write back-pressure between chunks), so the memory of a streamed upload is a few chunks.

A FileBody is restartable: every `chunks()` starts at the beginning again, so a retried request
re-reads the file. The CRC32 the PUT announces is computed by one read pass before the send.

Every pass reads one version of the file (conditions.FileVersion, the same for every pass of
one body): the fd's fstat at open must be the version's, and is looked at again before the last
chunk is handed to the request. A file that changed raises SourceFileChanged there, out of the
body: the request is cut short of its Content-Length and the connection closed, so the server
stores nothing (it commits a PUT only with all its bytes), and the transfer starts over.
"""

from __future__ import annotations

import asyncio
import base64
import os
from typing import AsyncIterator

from ...errors import Corrupt, StoreError
from ..checksums import crc32_of
from ..conditions import FileVersion

CHUNK = 1024 * 1024  # bytes read from the file at a time (and written to the socket per write)


class FileBody:
    """Bytes [start, end) of the file at `path`; `url`/`key` name it in errors."""

    __slots__ = ("path", "start", "end", "url", "key", "version")

    def __init__(self, path: str, start: int, end: int, *, url: str = "", key: str = "",
                 version: FileVersion | None = None) -> None:
        self.path, self.start, self.end = path, start, end
        self.url, self.key = url or path, key
        self.version = version or FileVersion()  # the one version of the file every pass sends

    def __len__(self) -> int:
        return self.end - self.start

    def _open(self) -> tuple[int, tuple[int, int, int, int, int]]:
        """(fd, the identity it was opened with, checked against the version)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise StoreError(f"cannot read: {exc.strerror or exc}", op="read", url=self.url, key=self.key) from exc
        try:
            return fd, self.version.opened(os.fstat(fd), self.url, self.key)
        except BaseException:
            os.close(fd)
            raise

    def _check(self, fd: int, ident: tuple[int, int, int, int, int]) -> None:
        self.version.read(ident, os.fstat(fd), self.url, self.key)

    def _read(self, fd: int, at: int, ident: tuple[int, int, int, int, int]) -> bytes:
        want = min(CHUNK, self.end - at)
        try:
            data = os.pread(fd, want, at)
        except OSError as exc:
            raise StoreError(f"cannot read: {exc.strerror or exc}", op="read", url=self.url, key=self.key) from exc
        if not data:
            self._check(fd, ident)  # shrank: it changed, if its fstat says so
            raise Corrupt(f"file shrank while reading: got {at - self.start} of {len(self)} bytes",
                          op="read", url=self.url, key=self.key)
        return data

    async def chunks(self) -> AsyncIterator[bytes]:
        """The bytes in order, at most CHUNK at a time, read off the event loop; the last one only
        once the file is found unchanged since the open (else SourceFileChanged, before it is sent)."""
        fd, ident = await asyncio.to_thread(self._open)
        try:
            at = self.start
            if at >= self.end:
                self._check(fd, ident)
            while at < self.end:
                data = await asyncio.to_thread(self._read, fd, at, ident)
                at += len(data)
                if at >= self.end:
                    self._check(fd, ident)
                yield data
        finally:
            os.close(fd)

    async def crc32_b64(self) -> str:
        """CRC32 of the range (base64 of the big-endian 4 bytes, as x-amz-checksum-crc32 wants), read
        afresh on every call: a retry after a BadDigest must see the file as it is now."""
        crc = 0
        async for data in self.chunks():
            crc = crc32_of(data, crc)
        return base64.b64encode(crc.to_bytes(4, "big")).decode()

    async def read_all(self) -> bytes:
        """The whole range in memory: for the stores that cannot send a body chunk by chunk."""
        parts = [data async for data in self.chunks()]
        return b"".join(parts)
