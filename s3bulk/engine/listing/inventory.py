"""An S3 Inventory report as the list of keys to copy (`--files-from .../manifest.json`).

S3 Inventory writes, daily or weekly, a `manifest.json` naming gzip'd CSV data files whose rows
describe every object of the source bucket (bucket, URL-encoded key, then the columns of
`fileSchema`). For a bucket of billions of keys it replaces days of listing by a download of the
report. Here the report is turned, once per run, into a plain `bucket,key` CSV spool file (the S3
Batch Operations form `--files-from` already reads), streaming: one 8 MiB piece of one data file
at a time, so memory is constant and disk use is a fraction of the report's. Rows that are not the
current version (`IsLatest` false) or are delete markers are left out. Each data file's MD5 is
checked against the manifest, so a truncated download is an error rather than missing keys.

The manifest and its data files may be local (a copy of the inventory's destination, with the data
files found under the directory that holds `<data file key>`, searched upwards from the manifest)
or in S3 (`s3://BUCKET/.../manifest.json`, read with SRC's S3 options). The spool is rebuilt
identically on `--resume`, so the journal's page offsets still point at the same rows.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import os
import tempfile
import zlib
from typing import Any, Callable, Iterable

from ...errors import UsageError

PIECE = 8 << 20


def is_inventory(path: str, fmt: str) -> bool:
    """Whether `--files-from PATH` names an S3 Inventory manifest (by format or by its name)."""
    return fmt == "inventory" or (fmt == "auto" and os.path.basename(path.rstrip("/")) == "manifest.json")


def parse_manifest(text: bytes, where: str) -> tuple[list[str], list[tuple[str, int | None, str | None]]]:
    """(column names, [(data file key, size, md5)]) of a manifest.json, or a UsageError saying why not."""
    try:
        doc = json.loads(text)
        fmt = str(doc.get("fileFormat", "CSV"))
        schema = [c.strip() for c in str(doc["fileSchema"]).split(",")]
        files = [(str(f["key"]), f.get("size"), f.get("MD5checksum")) for f in doc["files"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise UsageError(f"{where} is not an S3 Inventory manifest.json (needs fileSchema and files)") from None
    if fmt.upper() != "CSV":
        raise UsageError(f"{where}: only CSV inventories can be read, not {fmt} (set the inventory's format to CSV)")
    if schema[:2] != ["Bucket", "Key"]:
        raise UsageError(f"{where}: the inventory's fileSchema must start with Bucket, Key")
    return schema, files


def rows_to_keep(schema: list[str]) -> Callable[[list[str]], bool]:
    """A test for rows that name an object to copy: its current version, not a delete marker."""
    latest = schema.index("IsLatest") if "IsLatest" in schema else None
    marker = schema.index("IsDeleteMarker") if "IsDeleteMarker" in schema else None

    def keep(row: list[str]) -> bool:
        if latest is not None and len(row) > latest and row[latest].lower() == "false":
            return False
        return not (marker is not None and len(row) > marker and row[marker].lower() == "true")

    return keep


class RowWriter:
    """One gzip'd CSV data file, fed in compressed pieces: writes `bucket,key` of the rows kept to
    `out`, and at the end checks the compressed bytes' MD5 against the manifest's."""

    def __init__(self, keep: Callable[[list[str]], bool], out: Any, name: str, md5: str | None) -> None:
        self.keep, self.out, self.name, self.md5 = keep, out, name, md5
        self.unzip = zlib.decompressobj(wbits=31)
        self.digest = hashlib.md5()
        self.tail = b""
        self.count = 0

    def _emit(self, lines: list[bytes]) -> None:
        for row in csv.reader(io.StringIO(b"\n".join(lines).decode("utf-8", "surrogateescape"))):
            if len(row) >= 2 and self.keep(row):
                self.out.write(f"{row[0]},{row[1]}\n".encode("utf-8", "surrogateescape"))
                self.count += 1

    def feed(self, chunk: bytes) -> None:
        self.digest.update(chunk)
        try:
            data = self.tail + self.unzip.decompress(chunk)
        except zlib.error as exc:
            raise UsageError(f"inventory data file {self.name} is not valid gzip: {exc}") from None
        lines = data.split(b"\n")
        self.tail = lines.pop()
        if lines:
            self._emit(lines)

    def finish(self) -> int:
        """The number of rows written; UsageError when the file was cut short or its MD5 differs."""
        if not self.unzip.eof:
            raise UsageError(f"inventory data file {self.name} ends early (incomplete gzip)")
        data = self.tail + self.unzip.flush()
        if data.strip():
            self._emit(data.split(b"\n"))
        if self.md5 and self.digest.hexdigest() != self.md5.lower():
            raise UsageError(f"inventory data file {self.name} does not match the manifest's MD5 (incomplete copy?)")
        return self.count


def _data_file_finder(manifest: str, keys: list[str]) -> Callable[[str], str]:
    """Where the data files' keys live locally: under a folder above the manifest that holds the
    first one by its whole key (a copy of the inventory's destination), or in a `data/` folder
    beside or above it by file name (a flat copy)."""
    here = os.path.dirname(os.path.abspath(manifest))
    if not keys:
        return lambda key: key
    while True:
        if os.path.isfile(os.path.join(here, keys[0])):
            return functools.partial(os.path.join, here)
        data = os.path.join(here, "data")
        if os.path.isfile(os.path.join(data, os.path.basename(keys[0]))):
            return lambda key: os.path.join(data, os.path.basename(key))
        parent = os.path.dirname(here)
        if parent == here:
            raise UsageError(f"inventory data file {keys[0]} not found under any folder above {manifest}")
        here = parent


def _local_chunks(path: str) -> Iterable[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(PIECE):
            yield chunk


def spool_local(manifest: str, directory: str | None = None) -> str:
    """A local manifest.json and its data files as a `bucket,key` spool file (the caller removes it)."""
    try:
        with open(manifest, "rb") as f:
            text = f.read()
    except OSError as exc:
        raise UsageError(f"cannot read --files-from {manifest}: {exc.strerror or exc}") from None
    schema, files = parse_manifest(text, manifest)
    locate = _data_file_finder(manifest, [k for k, _, _ in files])
    keep = rows_to_keep(schema)
    fd, path = tempfile.mkstemp(prefix="s3bulk-inventory-", suffix=".csv", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            for key, _, md5 in files:
                data = locate(key)
                rows = RowWriter(keep, out, key, md5)
                try:
                    for chunk in _local_chunks(data):
                        rows.feed(chunk)
                except OSError as exc:
                    raise UsageError(f"cannot read inventory data file {data}: {exc.strerror or exc}") from None
                rows.finish()
    except BaseException:
        os.unlink(path)
        raise
    return path


async def spool_s3(url: str, s3: Any = None, directory: str | None = None) -> str:
    """An S3 manifest.json (s3://BUCKET/.../manifest.json) and its data files, read from the same
    bucket, as a `bucket,key` spool file (the caller removes it)."""
    from ...errors import NotFound
    from ...stores import open_store
    from ...stores.reading import read_all, read_range
    from ...config.urls import parse_location

    loc = parse_location(url, s3)
    store = await open_store(loc.with_prefix(""))
    fd, path = tempfile.mkstemp(prefix="s3bulk-inventory-", suffix=".csv", dir=directory)
    try:
        try:
            text = await read_all(store, loc.prefix)
        except NotFound:
            raise UsageError(f"no inventory manifest at {url}") from None
        schema, files = parse_manifest(text, url)
        keep = rows_to_keep(schema)
        with os.fdopen(fd, "wb") as out:
            for key, size, md5 in files:
                if size is None:
                    size = (await store.head(key)).size or 0
                rows = RowWriter(keep, out, key, md5)
                for start in range(0, size, PIECE):  # one piece in memory at a time
                    rows.feed(await read_range(store, key, start, min(start + PIECE, size)))
                rows.finish()
    except BaseException:
        os.unlink(path)
        raise
    finally:
        await store.close()
    return path
