"""Content hashes of local files for `sync --checksum`, cached so a second run does not reread files
that did not change. The key is path, inode, size, mtime, ctime and part size: any write to the
file changes its ctime, and so do `touch -r`, `rsync -t` and restores that put an old mtime back
(utime sets ctime to now), so a same-size edit is never hidden by a restored mtime.

The hash is what S3 would show as the ETag of the same bytes: the MD5 hex digest for a single-part
object, or MD5(concat(MD5(part))) + "-N" for a multipart one uploaded in parts of `part_size`.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading

_SCHEMA = ("CREATE TABLE IF NOT EXISTS hashes_v2 (path TEXT, ino INTEGER, size INTEGER, mtime_ns INTEGER, "
           "ctime_ns INTEGER, part_size INTEGER, etag TEXT, "
           "PRIMARY KEY (path, ino, size, mtime_ns, ctime_ns, part_size))")

_SUMS_SCHEMA = ("CREATE TABLE IF NOT EXISTS sums_v1 (path TEXT, ino INTEGER, size INTEGER, mtime_ns INTEGER, "
                "ctime_ns INTEGER, algorithm TEXT, part_size INTEGER, value TEXT, "
                "PRIMARY KEY (path, ino, size, mtime_ns, ctime_ns, algorithm, part_size))")


def default_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "s3bulk", "hashes.sqlite")


class HashCache:
    def __init__(self, path: str | None = None) -> None:
        self.path = path or default_path()
        self._local = threading.local()

    def _db(self) -> sqlite3.Connection | None:
        db = getattr(self._local, "db", None)
        if db is None:
            try:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(_SCHEMA)
            except sqlite3.Error:
                db = False  # an unusable cache only costs rereads
            self._local.db = db
        return db if isinstance(db, sqlite3.Connection) else None  # False: unusable

    def etag(self, path: str, part_size: int = 0) -> str:
        """The S3-style ETag of the file's bytes (multipart form when part_size > 0 and the file is larger)."""
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, part_size)
        db = self._db()
        if db is not None:
            row = db.execute("SELECT etag FROM hashes_v2 WHERE path=? AND ino=? AND size=? AND mtime_ns=? "
                             "AND ctime_ns=? AND part_size=?", key).fetchone()
            if row:
                return row[0]
        value = file_etag(path, part_size)
        if db is not None:
            try:
                db.execute("INSERT OR REPLACE INTO hashes_v2 VALUES (?,?,?,?,?,?,?)", (*key, value))
            except sqlite3.Error:
                pass
        return value


    def checksum(self, path: str, algorithm: str, part_size: int = 0) -> str:
        """The additional checksum S3 would show for the file's bytes (checksums.file_checksum),
        cached under the same key as etag() with the algorithm."""
        from ...stores.checksums import file_checksum

        st = os.stat(path)
        key = (os.path.abspath(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, algorithm, part_size)
        db = self._db()
        if db is not None:
            try:
                db.execute(_SUMS_SCHEMA)
                row = db.execute("SELECT value FROM sums_v1 WHERE path=? AND ino=? AND size=? AND mtime_ns=? "
                                 "AND ctime_ns=? AND algorithm=? AND part_size=?", key).fetchone()
            except sqlite3.Error:
                row, db = None, None
            if row:
                return row[0]
        value = file_checksum(path, algorithm, part_size)
        if db is not None:
            try:
                db.execute("INSERT OR REPLACE INTO sums_v1 VALUES (?,?,?,?,?,?,?,?)", (*key, value))
            except sqlite3.Error:
                pass
        return value


def file_etag(path: str, part_size: int = 0) -> str:
    chunk = 1 << 20
    with open(path, "rb") as f:
        if part_size <= 0:
            h = hashlib.md5(usedforsecurity=False)
            while block := f.read(chunk):
                h.update(block)
            return h.hexdigest()
        from ...stores.checksums import file_part_digests

        digests = file_part_digests(f, part_size, lambda: hashlib.md5(usedforsecurity=False), chunk)
        if not digests:
            return hashlib.md5(b"", usedforsecurity=False).hexdigest()
        return hashlib.md5(b"".join(digests), usedforsecurity=False).hexdigest() + f"-{len(digests)}"
