"""Keys from a manifest instead of a listing (`--files-from FILE`).

A manifest names the keys to copy, one per line, relative to SRC's prefix, or as CSV rows
`bucket,key[,version]` with URL-encoded keys (the S3 Batch Operations manifest format; `bucket`
must be SRC's). Reading it replaces the listing: the source is wrapped in `ManifestSource`,
whose pages are runs of manifest lines, paged by byte offset (a page token, as a list/get server
pages), so the engine, the journal and resume treat it as any token-paged source. Each page's keys
are looked up (HEAD, a bounded number at once) to learn size, time and ETag, so the copy can be
server-side, sync can compare, and a key the source lacks is reported per key as a failure
(exit 1) while the rest goes on. The file is read a page at a time: constant memory at any size.

`sync --watch` narrows each sync to the keys that changed with an internal format, "changes"
(CHANGES): one URL-quoted key per line (a local name may hold a newline). There a key the source
lacks is no failure but news: it went away, and the page lists it in `Page.gone` so the sync can
delete it at DST (with --delete), with what DST holds under it as a folder when SRC is a directory
(a directory renamed or removed is one event).
"""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import os
from typing import Any, cast
from urllib.parse import quote, unquote, unquote_plus

from ...errors import NotFound, S3BulkError, UsageError
from ...model import ObjectInfo, ObjectProps, Page, WorkUnit
from ...stores.base import WHOLE, FileBodyReader, GetOptions, GetResult, PropsReader, Store, StreamedBody

HEADS_AT_ONCE = 32
FORMATS = ("auto", "lines", "csv", "inventory")
CHANGES = "changes"  # sync --watch's narrowed syncs (engine/watch/): not offered to users


def write_changes(path: str, keys: list[str]) -> None:
    """A CHANGES manifest of `keys` (relative to SRC's root) at `path`."""
    with open(path, "w", encoding="ascii") as f:
        for key in keys:
            f.write(quote(key, safe="/", errors="surrogateescape") + "\n")


def check_manifest(path: str, fmt: str) -> str:
    """The format to read `path` with, after checking it can be read (a UsageError otherwise)."""
    if fmt not in FORMATS and fmt != CHANGES:
        raise UsageError(f"--files-from-format must be one of {', '.join(FORMATS)}")
    if fmt == "inventory":  # engine/run/orchestrate.py `run` spools an inventory report into CSV before planning
        fmt = "csv"
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as exc:
        raise UsageError(f"cannot read --files-from {path}: {exc.strerror or exc}") from None
    if fmt == "auto":
        fmt = "csv" if path.lower().endswith(".csv") else "lines"
    return fmt


def read_lines(path: str, offset: int, limit: int) -> tuple[list[bytes], int | None]:
    """Up to `limit` non-empty lines from byte `offset`, and the offset after them (None at the end)."""
    out: list[bytes] = []
    with open(path, "rb") as f:
        f.seek(offset)
        while len(out) < limit:
            line = f.readline()
            if not line:
                return out, None
            offset += len(line)
            line = line.rstrip(b"\r\n")
            if line:
                out.append(line)
        return out, (offset if f.read(1) else None)


def parse_line(line: bytes, fmt: str, bucket: str) -> tuple[str | None, str | None]:
    """(key relative to SRC's prefix, None) or (None, why the line cannot be used)."""
    text = line.decode("utf-8", "surrogateescape")
    if fmt == CHANGES:
        return unquote(text, errors="surrogateescape"), None
    if fmt == "lines":
        return text, None
    try:
        row = next(csv.reader([text]))
    except (csv.Error, StopIteration):
        return None, "not a CSV row"
    if len(row) < 2:
        return None, "a CSV row needs bucket,key"
    if len(row) > 2 and row[2].strip():
        return None, "object versions are not supported yet"
    if row[0] != bucket:
        return None, f"in bucket {row[0]!r}, not SRC's bucket {bucket!r}"
    return unquote_plus(row[1]), None


class ManifestSource:
    """The source store, listed through a manifest: pages of its lines, each key looked up."""

    def __init__(self, inner: Store, path: str, fmt: str, location_prefix: str) -> None:
        self.inner = inner
        self.path = path
        self.fmt = fmt
        self.location = inner.location
        self.features = dataclasses.replace(inner.features, ordered=False)
        self._root = location_prefix  # manifest keys are relative to it (CSV keys are whole keys)

    @property
    def ordered(self) -> bool:
        return False

    def unwrap(self) -> Any:
        return self.inner

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        offset = int(unit.token or 0)
        lines, next_offset = await asyncio.to_thread(read_lines, self.path, offset, limit)
        bucket = self.location.root  # S3: the bucket each CSV row must name
        keys: list[str] = []
        problems: list[tuple[str, str]] = []
        gone: list[str] = []
        for line in lines:
            rel, why = parse_line(line, self.fmt, bucket)
            if rel is None:
                problems.append((line.decode("utf-8", "backslashreplace")[:200], f"manifest line skipped: {why}"))
            elif self.fmt == "csv":
                if rel.startswith(self._root):
                    keys.append(rel)
                else:
                    problems.append((rel, f"not under SRC's prefix {self._root!r}"))
            else:
                keys.append(self._root + rel)
        window = asyncio.Semaphore(HEADS_AT_ONCE)

        async def look(key: str) -> ObjectInfo | str:
            async with window:
                try:
                    return await self.inner.head(key)
                except NotFound:
                    return "no such key (named in the manifest)"
                except S3BulkError as exc:
                    return str(exc)

        found = await asyncio.gather(*(look(k) for k in keys))
        entries: list[ObjectInfo] = []
        for key, info in zip(keys, found):
            if isinstance(info, str):
                if self.fmt == CHANGES and info.startswith("no such key"):
                    gone.append(key)
                else:
                    problems.append((key, info))
            else:
                entries.append(info._replace(key=key))
        return Page(entries, next_token=None if next_offset is None else str(next_offset),
                    problems=tuple(problems), gone=tuple(gone))

    async def head(self, key: str) -> ObjectInfo:
        return await self.inner.head(key)

    async def get(self, key: str, opts: GetOptions = WHOLE) -> GetResult:
        return await self.inner.get(key, opts)

    # the capabilities below are the inner store's, asked only where its features say it has them

    async def read_props(self, key: str) -> ObjectProps:
        return await cast(PropsReader, self.inner).read_props(key)

    async def restore_status(self, key: str) -> str | None:
        return await cast(Any, self.inner).restore_status(key)  # an S3 store's (transfer/archived.py)

    async def read_tagging(self, key: str) -> str:
        return await cast(PropsReader, self.inner).read_tagging(key)

    def read_body(self, key: str, start: int, end: int) -> StreamedBody:
        return cast(FileBodyReader, self.inner).read_body(key, start, end)

    async def close(self) -> None:
        await self.inner.close()


def spool_stdin(directory: str | None = None) -> str:
    """`--files-from -`: stdin copied to a temporary file (pages are read by offset, and a resume
    needs the same lines again), in constant memory. The caller removes it."""
    import sys
    import tempfile

    fd, path = tempfile.mkstemp(prefix="s3bulk-manifest-", suffix=".txt", dir=directory)
    with os.fdopen(fd, "wb") as out:
        while True:
            chunk = sys.stdin.buffer.read(1 << 20)
            if not chunk:
                break
            out.write(chunk)
    return path
