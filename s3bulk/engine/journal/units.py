"""The resume journal: which work units of a run are finished, and which multipart uploads are open.

One SQLite file per run, written only by the coordinator (workers report to it over the event
queue). WAL with synchronous=NORMAL: a commit survives the process being killed (not a power
cut, which may lose the last commits: those units are then simply redone). A unit is recorded
only after every object of it is copied, so whatever moment the run dies at, what the journal
says is done is done.

Tables:
    meta(k, v)                                  version, identity (JSON), src, dst, mode, state, created
    ranges(after, until, objects, bytes)        ordered sources: finished key ranges (after, until];
                                                NULL after = from the start, NULL until = to the end.
                                                Adjacent ranges are merged, so a run finishing in order
                                                keeps one row ("done through key K") plus one per gap.
    pages(first, last, next_token, objects, bytes)   token-paged sources: finished pages first..last of
                                                the listing chain; next_token starts page last+1 (NULL:
                                                the listing ended there). Merged the same way.
    uploads(dst_key, upload_id, size, part_size, src_size, src_mtime, src_etag, started)
                                                S3 multipart uploads in flight (removed when completed
                                                or aborted); a resumed run continues them (the parts
                                                already uploaded are kept) or aborts them. A row
                                                without an upload_id is an intent: the upload was
                                                being asked for (engine/leftover_uploads.py finds it).
    done_keys(key, size)                        objects finished inside units that were not finished
                                                when a run stopped; a resumed run skips them.

Objects, not only units: a unit is a whole page (1,000 keys), so recording units alone would make a
resume redo every page that was in flight. Each worker therefore appends every object it finishes
to a small per-page file under `<journal>.d/` (one write() per object, no fsync: it survives the
process being killed, as the SQLite WAL does). When the coordinator has committed the page's unit
as done it deletes that file; files left behind by a stop belong to pages not finished, and a
resumed run folds them into done_keys. So whatever moment a run dies at, a resume redoes at most
the objects whose transfer was in flight.

Uploads the same way: the coordinator's commit comes up to COMMIT_SECONDS after a worker reports an
upload, and a SIGKILL in between would leave an upload open that nothing records. So each worker
also appends every upload note to `<journal>.d/<pid>-<wid>.uploads` (UploadLog) before the request
it is about is sent: an intent before CreateMultipartUpload, the id before the first part, the end
after the completion or abort. The next open of the journal (a resume, or a fresh run that replaces
it) replays those notes over the uploads table (fold_upload_notes), so whatever moment the run dies
at, every upload it opened is completed, aborted, or in the journal.

A run that completes without failures deletes its journal. A fresh run (no --resume) replaces an
old journal, aborting the uploads it had open.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from bisect import bisect_right
from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from ...config.filters import Filters
from ...config.urls import Location
from ...errors import UsageError
from ...model import WorkUnit
from ..plan import SyncOptions

if TYPE_CHECKING:
    import sqlite3  # imported where a journal is opened: a run with none (--no-journal) never needs it

VERSION = "1"
COMMIT_SECONDS = 0.02  # at most 50 commits a second; each is one WAL append (no fsync), ~50 us

_SCHEMA = """
    CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT);
    CREATE TABLE IF NOT EXISTS ranges (after TEXT, until TEXT, objects INTEGER, bytes INTEGER);
    CREATE TABLE IF NOT EXISTS pages (first INTEGER PRIMARY KEY, last INTEGER, next_token TEXT,
                                      objects INTEGER, bytes INTEGER);
    CREATE TABLE IF NOT EXISTS done_keys (key TEXT PRIMARY KEY, size INTEGER);
    CREATE TABLE IF NOT EXISTS uploads (dst_key TEXT PRIMARY KEY, upload_id TEXT, size INTEGER,
                                        part_size INTEGER, src_size INTEGER, src_mtime REAL,
                                        src_etag TEXT, started REAL);
"""
_TABLES = ("meta", "ranges", "pages", "done_keys", "uploads")

_LO = (0, "")   # sort key of "from the start"
_HI = (2, "")   # sort key of "to the end"


def _akey(after: str | None) -> tuple[int, str]:
    return _LO if after is None else (1, after)


def _ukey(until: str | None) -> tuple[int, str]:
    return _HI if until is None else (1, until)


class JournaledPlan(Protocol):
    """What a journal reads from a plan: engine/plan.py's Plan, or rm's (journal/rm.py RmPlan)."""

    @property
    def src(self) -> Location: ...
    @property
    def dst(self) -> Location: ...
    @property
    def single_key(self) -> str | None: ...
    @property
    def keymap(self) -> Any: ...  # what has exact_dst: plan.KeyMap, or rm's stand-in
    @property
    def filters(self) -> Filters: ...
    @property
    def sync(self) -> SyncOptions | None: ...
    @property
    def manifest(self) -> str | None: ...
    @property
    def manifest_name(self) -> str | None: ...


def identity_of(plan: JournaledPlan, mode: str) -> dict[str, Any]:
    """What makes two runs the same run: both sides, the mode, and the options that decide which
    keys are copied (not speed knobs such as workers or page size)."""
    def side(loc: Location) -> dict[str, Any]:
        return {"kind": loc.kind, "bucket": loc.root, "prefix": loc.prefix,
                "endpoint": loc.s3.endpoint_url if loc.is_s3 else None}

    ident: dict[str, Any] = {"mode": mode, "src": side(plan.src), "dst": side(plan.dst),
                             "single_key": plan.single_key, "dst_key": plan.keymap.exact_dst,
                             "filters": plan.filters.identity()}
    if plan.manifest is not None:
        ident["manifest"] = plan.manifest_name or plan.manifest
    if plan.sync is not None:
        ident["sync"] = {"delete": plan.sync.delete, "compare": plan.sync.compare}
    return ident


def journal_dir(directory: str | None = None) -> str:
    """Where default journals live: `directory` (--journal-dir), else $XDG_STATE_HOME/s3bulk/journals
    (~/.local/state/s3bulk/journals)."""
    if directory:
        return os.path.abspath(os.path.expanduser(directory))
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "s3bulk", "journals")


def default_path(plan: JournaledPlan, mode: str, directory: str | None = None) -> str:
    """<journal_dir>/<hash of src, dst and mode>.sqlite: the same command line finds its journal again."""
    ident = identity_of(plan, mode)
    key = json.dumps({k: ident[k] for k in ("mode", "src", "dst", "single_key", "dst_key")}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return os.path.join(journal_dir(directory), f"{digest}.sqlite")


STALE_DAYS = 30  # a default journal untouched this long is removed by the next run that opens one


def prune_stale(directory: str, keep: str, max_age_days: float = STALE_DAYS) -> list[str]:
    """Remove the journals under `directory` not written for `max_age_days` (their -wal/-shm files and
    per-page object logs too), except `keep`; returns the journals removed.

    Why: a run that completes removes its journal, but one interrupted and never resumed, or one
    with failures nobody retried, would otherwise stay forever. A journal in use is committed to
    many times a second, so its age is the time since its run stopped. The S3 multipart uploads such
    a journal had open are left to the bucket's AbortIncompleteMultipartUpload lifecycle rule."""
    cutoff = time.time() - max_age_days * 86400
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        if not name.endswith(".sqlite"):
            continue
        path = os.path.join(directory, name)
        if path == keep:
            continue
        try:
            newest = max(os.stat(p).st_mtime for p in (path, path + "-wal", object_log_dir(path))
                         if os.path.exists(p))
        except (OSError, ValueError):
            continue
        if newest < cutoff:
            remove_files(path)
            remove_object_logs(path)
            removed.append(path)
    return removed


def _describe(ident: dict[str, Any]) -> str:
    def side(s: dict[str, Any]) -> str:
        if s["kind"] == "s3":
            return f"s3://{s['bucket']}/{s['prefix']}"
        if s["kind"] == "local":
            return os.path.join(s["bucket"], s["prefix"]) if s["prefix"] else s["bucket"]
        return s["bucket"]

    return f"{ident.get('mode')} {side(ident['src'])} -> {side(ident['dst'])}"


def remove_files(path: str) -> None:
    for p in (path, path + "-wal", path + "-shm"):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def object_log_dir(path: str) -> str:
    """Where workers log the objects they finish, page by page (see the module docstring)."""
    return path + ".d"


def remove_object_logs(path: str) -> None:
    d = object_log_dir(path)
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return
    for name in names:
        try:
            os.unlink(os.path.join(d, name))
        except FileNotFoundError:
            pass
    try:
        os.rmdir(d)
    except OSError:
        pass


def read_object_log(path: str) -> list[tuple[str, int]]:
    """(key, size) lines of one per-page object log; a line torn by a kill is ignored."""
    out: list[tuple[str, int]] = []
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return out
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            key, size = json.loads(line)
        except (ValueError, TypeError):
            continue
        if isinstance(key, str) and isinstance(size, int):
            out.append((key, size))
    return out


class ObjectLog:
    """A worker's record of the objects it finished in one page: one line per object, appended with one
    write() as soon as the object is in place. Opened lazily, on the first finished object."""

    __slots__ = ("path", "_fd")

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = -1

    def add(self, key: str, size: int) -> None:
        """Record one finished object. Best effort: if the journal's disk refuses (full, gone), the
        page is simply redone on resume, and the copy itself is not a failure."""
        # the line json.dumps([key, size]) writes, made without its encoder (~6 us -> ~0.7 us an object)
        self._append(f"[{encode_basestring_ascii(key)}, {int(size)}]\n".encode())

    def add_line(self, row: list[Any]) -> None:
        """Append one JSON line with one write()."""
        self._append(json.dumps(row).encode() + b"\n")

    def _append(self, line: bytes) -> None:
        if self._fd == -2:
            return
        try:
            if self._fd < 0:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
            os.write(self._fd, line)
        except OSError:
            self.close()
            self._fd = -2

    @property
    def used(self) -> bool:
        return self._fd != -1

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        if self._fd != -2:
            self._fd = -1


class UploadLog:
    """A worker's on-disk record of the S3 multipart uploads it opens: one JSON line per note
    (engine/transfer/one_object.py's ("upload", key, id or None, size, part size, source size, mtime, ETag) or
    ("upload_end", key, id or None)) and the time it was made, appended with one write() before
    the request it is about (see the module docstring). Best effort, as ObjectLog."""

    __slots__ = ("_log",)

    def __init__(self, path: str) -> None:
        self._log = ObjectLog(path)

    def add(self, note: tuple) -> None:
        self._log.add_line([*note, time.time()])

    def close(self) -> None:
        self._log.close()


def read_upload_logs(path: str) -> list[list[Any]]:
    """The notes of every upload log beside the journal at `path`, in the order they were made
    (a line torn by a kill is skipped)."""
    d = object_log_dir(path)
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(".uploads"))
    except FileNotFoundError:
        return []
    notes: list[tuple[float, int, list[Any]]] = []
    for name in names:
        try:
            with open(os.path.join(d, name), "rb") as f:
                lines = f.read().split(b"\n")
        except FileNotFoundError:
            continue
        for line in lines:
            try:
                note = json.loads(line)
            except ValueError:
                continue
            if isinstance(note, list) and len(note) >= 4 and note[0] in ("upload", "upload_end") \
                    and isinstance(note[1], str) and isinstance(note[-1], (int, float)):
                notes.append((float(note[-1]), len(notes), note))
    return [n for _, _, n in sorted(notes)]


def fold_upload_notes(uploads: dict[str, dict[str, Any]], notes: list[list[Any]]
                      ) -> tuple[list[tuple[str, tuple]], list[dict[str, Any]]]:
    """The uploads table (`uploads`, dst key -> row, changed in place) brought up to the workers'
    notes: for each key they name, their last note says what is open (an upload, an intent, or
    nothing). The table may already hold a prefix of those notes (the coordinator committed
    them), so only the last one counts. Returns the SQL that makes the table match, and the rows
    to abort: an upload the table held that the notes replaced without ending (nothing continues it)."""
    ops: list[tuple[str, tuple]] = []
    doomed: list[dict[str, Any]] = []
    last: dict[str, list[Any]] = {}
    ended: dict[str, set[str | None]] = {}
    for note in notes:
        if note[0] == "upload" and len(note) != 9:
            continue  # not a note this version writes
        last[note[1]] = note
        if note[0] == "upload_end":
            ended.setdefault(note[1], set()).add(note[2])
    for key, note in last.items():
        old = uploads.pop(key, None)
        new = None
        if note[0] == "upload":
            new = dict(zip(("dst_key", "upload_id", "size", "part_size", "src_size", "src_mtime", "src_etag",
                            "started"), (key, *note[2:8], note[8])))
            if old is not None and old["upload_id"] == new["upload_id"]:
                new["started"] = old["started"]
        if old is not None and old["upload_id"] is not None and old["upload_id"] not in ended.get(key, ()) \
                and (new is None or new["upload_id"] != old["upload_id"]):
            doomed.append(old)
        if new is None:
            ops.append(("DELETE FROM uploads WHERE dst_key = ?", (key,)))
        else:
            uploads[key] = new
            ops.append(("INSERT OR REPLACE INTO uploads VALUES (?, ?, ?, ?, ?, ?, ?, ?)", tuple(new.values())))
    return ops, doomed


class Journal:
    """The coordinator's record of a run. Methods only change memory and queue SQL; `commit`
    (called at most every COMMIT_SECONDS, and at the end) writes it in one transaction."""

    def __init__(self, path: str, ident: dict[str, Any], ordered: bool) -> None:
        self.path = path
        self.ident = ident
        self.ordered = ordered
        self.db: sqlite3.Connection | None = None
        self._ops: list[tuple[str, tuple]] = []
        self._last_commit = 0.0
        # ordered: after-key -> [after, until, objects, bytes]; until-key -> after-key
        self._by_after: dict[tuple[int, str], list[Any]] = {}
        self._by_until: dict[tuple[int, str], tuple[int, str]] = {}
        # token-paged: first -> [first, last, next_token, objects, bytes]; last -> first
        self._by_first: dict[int, list[Any]] = {}
        self._by_last: dict[int, int] = {}
        self.uploads: dict[str, dict[str, Any]] = {}
        self.resumed = False  # opened with --resume: the run starts where this journal stopped
        self.nothing_to_resume = False  # --resume found no journal: a run from the start
        self.done_keys: dict[str, int] = {}  # objects finished in units not finished (resume skips them)
        self._unlink_after_commit: list[str] = []  # per-page object logs whose unit is committed done
        self.stale_uploads: list[dict[str, Any]] = []  # from a replaced journal: to abort
        # sync --delete, deferred (engine/run/deletes.py): the committed length of the delete spool in
        # `<journal>.d/` and the DST objects seen by the units recorded done
        self._deletes = (0, 0)
        # called first in every commit: a report's rows are on disk before a unit is recorded done
        # (engine/report.py), so a resume that skips the unit owes no rows for it
        self.before_commit: Callable[[], None] | None = None

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: str, plan: JournaledPlan, mode: str, *, resume: bool) -> "Journal":
        ident = identity_of(plan, mode)
        j = cls(path, ident, ordered=plan.src.lists_in_order and plan.manifest is None)
        exists = os.path.exists(path)
        if resume and not exists:
            # a first run, or the last one completed: the same command line works every time (what a
            # scheduler restarting a job needs); the caller says so in one line
            j._create()
            j.nothing_to_resume = True
            return j
        if resume:
            j._load(check=True)
            j.resumed = True
            j._fold_object_logs()
            j._ops.append(("INSERT OR REPLACE INTO meta VALUES ('state', ?)", ("running",)))
            return j
        stale: list[dict[str, Any]] = []
        if exists:
            old = cls(path, ident, j.ordered)
            try:
                old._load(check=False)
                assert old.db is not None  # _load opened it, or raised
                theirs = json.loads(dict(old.db.execute("SELECT k, v FROM meta").fetchall())
                                    .get("identity") or "{}")
                if theirs.get("dst") == ident["dst"]:
                    old._fold_upload_logs()  # what its workers noted that it never committed
                    # open uploads of the replaced run (intents too): to abort
                    stale = old.stale_uploads + list(old.uploads.values())
            except Exception:
                pass  # unreadable: it is replaced all the same
            finally:
                if old.db is not None:
                    old.db.close()
            remove_files(path)
        remove_object_logs(path)
        j._create()
        j.stale_uploads = stale
        return j

    def _connect(self) -> sqlite3.Connection:
        import sqlite3

        parent = os.path.dirname(self.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise UsageError(f"cannot open journal {self.path}: {exc}") from None
        return db

    def _create(self) -> None:
        db = self.db = self._connect()
        db.executescript(_SCHEMA)
        meta = {"version": VERSION, "identity": json.dumps(self.ident, sort_keys=True),
                "run": _describe(self.ident), "state": "running", "created": str(time.time())}
        db.execute("BEGIN")
        db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())
        db.execute("COMMIT")

    def _load(self, *, check: bool) -> None:
        import sqlite3

        try:
            db = self.db = self._connect()
            meta = dict(db.execute("SELECT k, v FROM meta").fetchall())
            ranges = db.execute("SELECT after, until, objects, bytes FROM ranges").fetchall()
            pages = db.execute("SELECT first, last, next_token, objects, bytes FROM pages").fetchall()
            done_keys = db.execute("SELECT key, size FROM done_keys").fetchall()
            uploads = db.execute("SELECT dst_key, upload_id, size, part_size, src_size, src_mtime, src_etag, "
                                 "started FROM uploads").fetchall()
        except sqlite3.Error as exc:
            if check:
                raise UsageError(f"{self.path} is not a readable s3bulk journal ({exc}); "
                                 "run without --resume to start over") from None
            raise
        if check:
            if meta.get("version") != VERSION:
                raise UsageError(f"journal {self.path} was written by another s3bulk version; "
                                 "run without --resume to start over")
            theirs = json.loads(meta.get("identity") or "{}")
            if theirs != self.ident:
                raise UsageError(f"journal {self.path} belongs to another run ({meta.get('run', '?')}"
                                 f"{_difference(theirs, self.ident)}); run without --resume to start over, "
                                 "or name its own --journal")
        for after, until, objects, nbytes in ranges:
            row = [after, until, objects, nbytes]
            self._by_after[_akey(after)] = row
            self._by_until[_ukey(until)] = _akey(after)
        for first, last, token, objects, nbytes in pages:
            self._by_first[first] = [first, last, token, objects, nbytes]
            self._by_last[last] = first
        self.done_keys = dict(done_keys)
        try:
            self._deletes = (int(meta.get("deletes_len") or 0), int(meta.get("deletes_seen") or 0))
        except ValueError:
            self._deletes = (0, 0)
        for r in uploads:
            self.uploads[r[0]] = dict(zip(("dst_key", "upload_id", "size", "part_size", "src_size",
                                           "src_mtime", "src_etag", "started"), r))

    # ------------------------------------------------------------------ recording

    def unit_done(self, unit: WorkUnit, rest: WorkUnit | None, objects: int, nbytes: int,
                  object_log: str | None = None) -> None:
        """Every object of `unit` (the page it listed; `rest` is what it handed on) is copied.
        `object_log`, the page's per-object file, is deleted once this is committed."""
        if object_log is not None:
            self._unlink_after_commit.append(object_log)
        if self.ordered:
            self._add_range(unit.after, rest.after if rest is not None else unit.until, objects, nbytes)
        else:
            self._add_page(unit.seq, rest.token if rest is not None else None, objects, nbytes)

    def note_deletes(self, length: int, seen: int) -> None:
        """The delete spool holds `length` bytes of keys of units recorded done (written in the same
        commit as those units: a resume cuts the spool back to it), and their march saw `seen` DST
        objects."""
        self._deletes = (length, seen)
        self._ops.append(("INSERT OR REPLACE INTO meta VALUES ('deletes_len', ?)", (str(length),)))
        self._ops.append(("INSERT OR REPLACE INTO meta VALUES ('deletes_seen', ?)", (str(seen),)))

    def deletes_state(self) -> tuple[int, int]:
        """(committed spool length, DST objects seen) as the journal last recorded them."""
        return self._deletes

    def _add_range(self, after: str | None, until: str | None, objects: int, nbytes: int) -> None:
        if after is not None and until is not None and until <= after:
            return  # empty range (a page with nothing new)
        # the indexes are kept tolerant (pop, not del): ranges that overlap (a server's listing that
        # strayed outside a unit, before stores/s3/pages.py held pages to their units) must not
        # crash the journal, whose resume takes the union of what it recorded anyway
        ak = _akey(after)
        left_ak = self._by_until.get(_akey(after)) if after is not None else None
        right = self._by_after.get((1, until)) if until is not None else None
        row: list[Any] = [after, until, objects, nbytes]
        if left_ak is not None:
            left = self._by_after.pop(left_ak)
            self._by_until.pop(_ukey(left[1]), None)
            self._ops.append(("DELETE FROM ranges WHERE after IS ?", (left[0],)))
            row = [left[0], until, left[2] + objects, left[3] + nbytes]
            ak = left_ak
        if right is not None:
            self._by_after.pop(_akey(until), None)  # (1, until): `right` was found under it
            self._by_until.pop(_ukey(right[1]), None)
            self._ops.append(("DELETE FROM ranges WHERE after IS ?", (right[0],)))
            row = [row[0], right[1], row[2] + right[2], row[3] + right[3]]
        if ak in self._by_after:  # overlaps a range recorded before: keep both, resume takes the union
            old = self._by_after.pop(ak)
            self._by_until.pop(_ukey(old[1]), None)
            self._ops.append(("DELETE FROM ranges WHERE after IS ?", (old[0],)))
            if _ukey(old[1]) > _ukey(row[1]):
                row[1] = old[1]
            row[2] += old[2]
            row[3] += old[3]
        self._by_after[ak] = row
        self._by_until[_ukey(row[1])] = ak
        self._ops.append(("INSERT INTO ranges VALUES (?, ?, ?, ?)", tuple(row)))

    def _add_page(self, seq: int, next_token: str | None, objects: int, nbytes: int) -> None:
        for first, row in self._by_first.items():
            if first <= seq <= row[1]:
                return  # already recorded (a page a resumed run skipped)
        row = [seq, seq, next_token, objects, nbytes]
        left_first = self._by_last.get(seq - 1)
        if left_first is not None:
            left = self._by_first.pop(left_first)
            del self._by_last[left[1]]
            self._ops.append(("DELETE FROM pages WHERE first = ?", (left_first,)))
            row = [left[0], seq, next_token, left[3] + objects, left[4] + nbytes]
        right = self._by_first.pop(seq + 1, None)
        if right is not None:
            del self._by_last[right[1]]
            self._ops.append(("DELETE FROM pages WHERE first = ?", (right[0],)))
            row = [row[0], right[1], right[2], row[3] + right[3], row[4] + right[4]]
        self._by_first[row[0]] = row
        self._by_last[row[1]] = row[0]
        self._ops.append(("INSERT INTO pages VALUES (?, ?, ?, ?, ?)", tuple(row)))

    def upload_started(self, dst_key: str, upload_id: str | None, size: int, part_size: int,
                       src_size: int | None, src_mtime: float | None, src_etag: str | None) -> None:
        row = {"dst_key": dst_key, "upload_id": upload_id, "size": size, "part_size": part_size,
               "src_size": src_size, "src_mtime": src_mtime, "src_etag": src_etag, "started": time.time()}
        self.uploads[dst_key] = row
        self._ops.append(("INSERT OR REPLACE INTO uploads VALUES (?, ?, ?, ?, ?, ?, ?, ?)", tuple(row.values())))

    def upload_ended(self, dst_key: str, upload_id: str | None) -> None:
        row = self.uploads.get(dst_key)
        if row is not None and row["upload_id"] == upload_id:
            del self.uploads[dst_key]
            self._ops.append(("DELETE FROM uploads WHERE dst_key = ? AND upload_id IS ?", (dst_key, upload_id)))

    def _fold_upload_logs(self) -> list[str]:
        """The workers' upload logs replayed over the uploads table (an upload they noted that the
        coordinator never committed is in it now); returns the logs' paths, to delete once this is
        committed."""
        notes = read_upload_logs(self.path)
        ops, doomed = fold_upload_notes(self.uploads, notes)
        self._ops.extend(ops)
        self.stale_uploads.extend(doomed)
        d = object_log_dir(self.path)
        try:
            return [os.path.join(d, n) for n in os.listdir(d) if n.endswith(".uploads")]
        except FileNotFoundError:
            return []

    def _fold_object_logs(self) -> None:
        """Resume: objects finished in the stopped run's unfinished pages become done_keys, and the
        uploads its workers noted join the uploads table (committed before their files are deleted,
        so a kill in between loses nothing)."""
        d = object_log_dir(self.path)
        try:
            names = sorted(os.listdir(d))
        except FileNotFoundError:
            names = []
        files = [os.path.join(d, n) for n in names if n.endswith(".keys")]
        upload_logs = self._fold_upload_logs()
        for key in [k for k in self.done_keys if self._in_done_range(k)]:  # their pages finished since
            del self.done_keys[key]
            self._ops.append(("DELETE FROM done_keys WHERE key = ?", (key,)))
        for f in files:
            for key, size in read_object_log(f):
                if key not in self.done_keys and not self._in_done_range(key):
                    self.done_keys[key] = size
                    self._ops.append(("INSERT OR REPLACE INTO done_keys VALUES (?, ?)", (key, size)))
        self.commit()
        for f in files + upload_logs:
            try:
                os.unlink(f)
            except FileNotFoundError:
                pass

    def _in_done_range(self, key: str) -> bool:
        """Whether an ordered source's finished ranges already hold `key` (its page's log outlived the
        commit that recorded the page)."""
        if not self.ordered:
            return False
        k = (1, key)
        for row in self._by_after.values():
            if _akey(row[0]) < k <= _ukey(row[1]):
                return True
        return False

    def maybe_commit(self) -> None:
        if (self._ops or self._unlink_after_commit) and time.monotonic() - self._last_commit >= COMMIT_SECONDS:
            self.commit()

    def commit(self) -> None:
        self._last_commit = time.monotonic()
        if self.before_commit is not None:
            self.before_commit()
        if self.db is None:
            return
        if not self._ops:
            self._unlink_committed()
            return
        ops, self._ops = self._ops, []
        db = self.db
        db.execute("BEGIN")
        try:
            for sql, args in ops:
                db.execute(sql, args)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._ops = ops + self._ops
            raise
        self._unlink_committed()

    def _unlink_committed(self) -> None:
        logs, self._unlink_after_commit = self._unlink_after_commit, []
        for f in logs:  # their pages are committed done: the per-object record is not needed any more
            try:
                os.unlink(f)
            except FileNotFoundError:
                pass

    def finish(self, *, complete: bool) -> None:
        """Write what is left; a complete run removes its journal (nothing to resume)."""
        if self.db is None:
            return
        if complete:
            if self.before_commit is not None:  # the report's last rows before the journal goes
                self.before_commit()
            self.db.close()
            self.db = None
            remove_files(self.path)
            remove_object_logs(self.path)
            return
        self._ops.append(("INSERT OR REPLACE INTO meta VALUES ('state', ?)", ("incomplete",)))
        self.commit()
        import sqlite3

        try:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass
        self.db.close()
        self.db = None

    # ------------------------------------------------------------------ resuming

    def done_totals(self) -> tuple[int, int]:
        """(objects, bytes) the journal records as copied."""
        rows: Iterable[list[Any]] = self._by_after.values() if self.ordered else self._by_first.values()
        o = b = 0
        for row in rows:
            o += row[-2]
            b += row[-1]
        return o, b

    def resume_units(self) -> list[WorkUnit]:
        """The units a resumed run starts from: for an ordered source, every key range not yet
        finished (the gaps between finished ranges, and what follows the last); for a token-paged
        source, the first unfinished page (later finished pages are skipped, see skip_pages)."""
        if self.ordered:
            spans = sorted((_akey(r[0]), _ukey(r[1]), r[0], r[1]) for r in self._by_after.values())
            if not spans:
                return [WorkUnit()]
            units: list[WorkUnit] = []
            cursor_key, cursor = _LO, None   # every key up to cursor is done
            for ak, uk, after, until in spans:
                if ak > cursor_key:
                    units.append(WorkUnit(after=cursor, until=after, seq=len(units)))
                if uk > cursor_key:
                    cursor_key, cursor = uk, until
                if cursor_key == _HI:
                    break
            if cursor_key != _HI:
                units.append(WorkUnit(after=cursor, until=None, seq=len(units)))
            return units
        head = self._by_first.get(0)
        if head is None:
            return [WorkUnit()]
        if head[2] is None:
            return []  # the listing's last page is done, and every page before it
        return [WorkUnit(token=head[2], seq=head[1] + 1)]

    def skip_pages(self) -> tuple[tuple[int, int], ...]:
        """Token-paged sources: (first, last) runs of pages already done beyond the first gap."""
        return tuple(sorted((r[0], r[1]) for r in self._by_first.values() if r[0] != 0))


def export_token(path: str) -> dict[str, list[list[Any]]]:
    """A stopped run's journal as plain JSON (its tables' rows), the per-page object logs folded
    into done_keys: what a process with no lasting disk (AWS Lambda) hands to the next one, which
    rebuilds the file with import_token and resumes from it. Its size is that of the journal:
    a few ranges, the open uploads, and the objects finished in unfinished pages."""
    import sqlite3

    db = sqlite3.connect(path)
    try:
        out = {t: [list(r) for r in db.execute(f"SELECT * FROM {t}").fetchall()] for t in _TABLES}
    finally:
        db.close()
    uploads = {r[0]: dict(zip(("dst_key", "upload_id", "size", "part_size", "src_size", "src_mtime", "src_etag",
                                "started"), r)) for r in out["uploads"]}
    fold_upload_notes(uploads, read_upload_logs(path))
    out["uploads"] = [list(r.values()) for r in uploads.values()]
    done = {k: n for k, n in out["done_keys"]}
    d = object_log_dir(path)
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        for key, size in read_object_log(os.path.join(d, name)):
            done.setdefault(key, size)
    out["done_keys"] = [[k, n] for k, n in sorted(done.items())]
    return out


def import_token(path: str, token: dict[str, Any]) -> None:
    """Write `token` (export_token's) as the journal file at `path`, replacing what is there;
    opening it with resume=True then checks it belongs to the same run, as for any journal."""
    import sqlite3

    remove_files(path)
    remove_object_logs(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    try:
        db = sqlite3.connect(path)
        try:
            db.executescript(_SCHEMA)
            for table in _TABLES:
                rows = [tuple(r) for r in token.get(table) or []]
                if rows:
                    marks = ", ".join("?" * len(rows[0]))
                    db.executemany(f"INSERT OR REPLACE INTO {table} VALUES ({marks})", rows)
            db.commit()
        finally:
            db.close()
    except (sqlite3.Error, TypeError, ValueError, AttributeError) as exc:
        remove_files(path)
        raise UsageError(f"not a resume token of s3bulk: {exc}") from None


def page_skipped(runs: tuple[tuple[int, int], ...], seq: int) -> bool:
    """Whether page `seq` lies in one of the sorted (first, last) runs."""
    if not runs:
        return False
    i = bisect_right(runs, (seq, float("inf"))) - 1
    return i >= 0 and runs[i][0] <= seq <= runs[i][1]


def _difference(theirs: dict[str, Any], ours: dict[str, Any]) -> str:
    diff = [k for k in sorted(set(theirs) | set(ours)) if theirs.get(k) != ours.get(k)]
    return f"; differs in {', '.join(diff)}" if diff else ""
