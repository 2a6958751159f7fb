"""The resume journal of a versions copy (`copy --all-versions` / `--as-of`): which source
versions (key, version id) have landed at DST, so `--resume` after an interrupted run writes
none of them again.

Why a journal of its own and not the engine's (engine/journal/units.py): a versions copy replays each
key's history one version after another, oldest first, on engine/actions/versions.py's own path; what must be
remembered is not key ranges but versions within a key. Because a key's versions are written in
order and each is recorded only once it has landed, what a journal holds of a key is always the
oldest part of its history: a resume continues each key from its first version not recorded, so
the destination still gets the versions in the source's order, none twice.

A version in flight when the process is killed outright (SIGKILL, power loss) may have landed
without its record. So before a version is sent the journal notes it as being sent, with the
destination's version id of the key's last landed version (what the write that landed it
answered, when the destination is a versioned S3 bucket); a resume asks the destination about
that one version before sending it again (engine/actions/versions.py `_landed`): a newer version than that one
at the destination is the version in flight, landed. (A first Ctrl-C or SIGTERM lets those in
flight land and be recorded first.)

One SQLite file in WAL mode, a row per version committed as it lands; the file is removed when a
run copies everything it was asked to.

Tables: done(key, version_id) the versions landed; keys(key, sending, started, dst_version) per
key, the version being sent (NULL once it landed) and when it was begun, and the destination's
version id of the last one landed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from ...config.filters import Filters
from ...config.urls import S3Options
from ...errors import UsageError

VERSION = "1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT);
CREATE TABLE IF NOT EXISTS done (key TEXT, version_id TEXT, PRIMARY KEY (key, version_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS keys (key TEXT PRIMARY KEY, sending TEXT, started REAL, dst_version TEXT) WITHOUT ROWID;
"""


def identity(src: str, dst: str, src_endpoint: str | None, dst_endpoint: str | None, *,
             include_delete_markers: bool, as_of: float | None, filters: Filters | None) -> dict[str, Any]:
    """What makes two versions copies the same run (what is copied where, not how fast)."""
    return {"mode": "copy-versions", "src": src, "dst": dst, "src_endpoint": src_endpoint,
            "dst_endpoint": dst_endpoint, "delete_markers": include_delete_markers, "as_of": as_of,
            "filters": filters.identity() if filters is not None else []}


@dataclass(frozen=True, slots=True)
class VersionsRun:
    """What a versions copy copies where, as its journal tells one run from another (`identity`)."""

    src: str
    dst: str
    src_s3: S3Options | None = None
    dst_s3: S3Options | None = None
    include_delete_markers: bool = False
    as_of: float | None = None
    filters: Filters | None = None

    def identity(self) -> dict[str, Any]:
        return identity(self.src, self.dst, _endpoint(self.src_s3), _endpoint(self.dst_s3),
                        include_delete_markers=self.include_delete_markers, as_of=self.as_of,
                        filters=self.filters)


def _endpoint(s3: S3Options | None) -> str | None:
    return s3.endpoint_url if s3 is not None else None


def default_path(ident: dict[str, Any], directory: str | None = None) -> str:
    """<journal dir>/versions-<hash of the run>.sqlite, beside the engine's journals: the same
    command line finds its journal again."""
    from .units import journal_dir

    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]
    return os.path.join(journal_dir(directory), f"versions-{digest}.sqlite")


def open_for(run: VersionsRun, *, path: str | None = None, directory: str | None = None,
             resume: bool = False) -> "VersionsJournal":
    """The journal of this versions copy: at `path`, or the default one for this run."""
    ident = run.identity()
    where = os.path.abspath(os.path.expanduser(path)) if path else default_path(ident, directory)
    return VersionsJournal.open(where, ident, resume=resume)


class VersionsJournal:
    """The versions of one run that have landed. Used from one event loop's thread."""

    def __init__(self, path: str, db: sqlite3.Connection, *, resumed: bool, nothing_to_resume: bool) -> None:
        self.path, self.db = path, db
        self.resumed = resumed                      # it continues an earlier run's journal
        self.nothing_to_resume = nothing_to_resume  # --resume, but no journal was there

    @classmethod
    def open(cls, path: str, ident: dict[str, Any], *, resume: bool) -> "VersionsJournal":
        """Continue the journal at `path` (resume: it must be this run's), or start a new one
        there (an old one of any run is replaced)."""
        exists = os.path.exists(path)
        if exists and not resume:
            remove(path)
        db = _connect(path)
        try:
            if resume and exists:
                meta = dict(db.execute("SELECT k, v FROM meta").fetchall())
                if meta.get("version") != VERSION or json.loads(meta.get("identity") or "{}") != ident:
                    db.close()
                    raise UsageError(f"journal {path} belongs to another run or s3bulk version; run without "
                                     "--resume to start over, or name its own --journal")
                db.executescript(_SCHEMA)  # a journal written before the keys table was
                return cls(path, db, resumed=True, nothing_to_resume=False)
            db.executescript(_SCHEMA)
            db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                           {"version": VERSION, "identity": json.dumps(ident, sort_keys=True),
                            "created": str(time.time())}.items())
        except sqlite3.Error as exc:
            db.close()
            raise UsageError(f"{path} is not a readable s3bulk journal ({exc}); "
                             "run without --resume to start over") from None
        return cls(path, db, resumed=False, nothing_to_resume=resume)

    def landed(self, key: str) -> set[str]:
        """The version ids of `key` already copied."""
        if not self.resumed:
            return set()
        return {row[0] for row in self.db.execute("SELECT version_id FROM done WHERE key = ?", (key,))}

    def record(self, key: str, version_id: str, dst_version: str | None = None) -> None:
        """`key`'s version `version_id` has landed at DST, where the write made `dst_version` (None
        when DST did not say) (committed at once: a kill right after must not lose it)."""
        db = self.db
        db.execute("BEGIN")
        try:
            db.execute("INSERT OR IGNORE INTO done VALUES (?, ?)", (key, version_id))
            db.execute("INSERT INTO keys VALUES (?, NULL, NULL, ?) ON CONFLICT (key) DO UPDATE SET sending = NULL, "
                       "started = NULL, dst_version = excluded.dst_version", (key, dst_version))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def sending(self, key: str, version_id: str) -> None:
        """`key`'s version `version_id` is about to be sent (committed before it is: a resume after a
        kill asks DST whether it landed, rather than writing it twice)."""
        self.db.execute("INSERT INTO keys VALUES (?, ?, ?, NULL) ON CONFLICT (key) DO UPDATE SET "
                        "sending = excluded.sending, started = excluded.started", (key, version_id, time.time()))

    def in_flight(self, key: str) -> tuple[str | None, float | None, str | None]:
        """(the version of `key` a stopped run was sending, when it began, the DST version id of the
        key's last version landed): what a resume checks at DST; Nones where there is none."""
        if not self.resumed:
            return None, None, None
        row = self.db.execute("SELECT sending, started, dst_version FROM keys WHERE key = ?", (key,)).fetchone()
        return (row[0], row[1], row[2]) if row is not None else (None, None, None)

    def close(self, *, complete: bool) -> None:
        """Close it; a complete run's journal is removed (nothing is left to resume)."""
        self.db.close()
        if complete:
            remove(self.path)


def _connect(path: str) -> sqlite3.Connection:
    parent = os.path.dirname(path)
    try:
        if parent:
            os.makedirs(parent, exist_ok=True)
        db = sqlite3.connect(path, isolation_level=None)  # autocommit: each record is its own commit
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    except (OSError, sqlite3.Error) as exc:
        raise UsageError(f"cannot open journal {path}: {exc}") from None
    return db


def remove(path: str) -> None:
    for p in (path, path + "-wal", path + "-shm"):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
