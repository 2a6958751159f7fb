"""sync --delete's deletes, kept on disk until every copy of the run succeeded.

Why deferred: a sync whose source had a failing entry (a dangling symlink, an unreadable file) must
not delete that key's copy at DST in the same run, and a run that failed halfway is no mirror to
delete against. So by default the keys a work unit's march finds only at DST are not deleted as
they are found: each worker keeps a unit's keys (`KeySpool`, in memory up to one batch, then in a
temporary file) until every object of the unit is copied, then sends them to the coordinator in
`Deletes` messages of at most PER_MESSAGE keys naming the unit (the unit's report: the one thing that
crosses a process or a Dask machine), no faster than the coordinator reads them. The coordinator (`DeferredDeletes`) appends them to one spool file beside the
resume journal, and records the spool's committed length in the journal in the same commit as the
unit, so a `--resume` after a kill keeps exactly the deletes of the units it will not redo. When
no unit is left and nothing failed, `delete_phase` sends them in DeleteObjects batches of 1,000.
Memory stays constant whatever the count: one batch per worker and one in the coordinator.

A run with any failure deletes nothing and says "N deletes not done: M objects failed".
`--delete-during` (plan.sync.delete_during) keeps the older streaming behaviour: each unit deletes
its keys once its copies are done, and not at all when one of them failed.

The caps (`--max-delete N|P%`, `--max-delete-size`) and the empty-source guard are checked here,
before the first delete, on the whole count (`refusal`). With `--backup-dir` each batch is first
copied there (engine/transfer/backup.py) and only the keys whose backup landed are deleted.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from ...model import Counters, Failure

if TYPE_CHECKING:
    from ...stores import Writer
    from ..transfer.backup import Backup

BATCH = 1000  # keys per DeleteObjects request (S3's limit)
# keys per Deletes message: the events queue holds up to 1,024 messages, so a worker that finds keys
# faster than the coordinator spools them holds at most ~1,024 x 100 keys (~3 MB) unread, not 30 MB
PER_MESSAGE = 100

Row = tuple[str, int]  # (DST key, size)


def _temporary_file() -> Any:
    """A spool file for keys to delete: tempfile (with shutil, bz2 and lzma) is imported only by a
    run that deletes, not by every copy's worker that imports this module."""
    import tempfile

    return tempfile.TemporaryFile(prefix="s3bulk-deletes-")


class KeySpool:
    """An append-only list of (key, size) rows in constant memory: the first BATCH rows in a list,
    the rest in a temporary file (or in the named file `path`, kept: the coordinator's spool)."""

    __slots__ = ("path", "_rows", "_file", "count", "nbytes", "_keep", "seen")

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self._keep = path is not None
        self._rows: list[Row] = []
        self._file: Any = None
        self.count = 0
        self.nbytes = 0
        self.seen = 0  # a worker's unit: DST objects its march saw (for --max-delete P%)
        if path is not None:
            self._file = open(path, "ab+")
            self.count, self.nbytes = _tally(path)

    def add(self, key: str, size: int) -> None:
        self.count += 1
        self.nbytes += size
        if self._file is None and len(self._rows) < BATCH:
            self._rows.append((key, size))
            return
        if self._file is None:
            self._file = _temporary_file()
            self._write(self._rows)
            self._rows = []
        self._write(((key, size),))

    def extend(self, rows: list[Row]) -> None:
        if self._file is None and len(self._rows) + len(rows) <= BATCH:
            self._rows.extend(rows)
            self.count += len(rows)
            self.nbytes += sum(s for _, s in rows)
            return
        if self._file is None:
            self._file = _temporary_file()
            self._write(self._rows)
            self._rows = []
        self._write(rows)  # one write for the message's rows
        self.count += len(rows)
        self.nbytes += sum(s for _, s in rows)

    def take(self, other: "KeySpool") -> None:
        """Append every row of `other` (a unit's pending keys), its file copied as it is."""
        if other._file is None:
            self.extend(other._rows)
            return
        if self._file is None:
            self._file = _temporary_file()
            self._write(self._rows)
            self._rows = []
        other._file.flush()
        other._file.seek(0)
        import shutil  # only a sync --delete spools keys: a copy starts without it (bz2, lzma)

        shutil.copyfileobj(other._file, self._file, 1 << 20)
        self.count += other.count
        self.nbytes += other.nbytes

    def messages(self) -> Iterator[list[Row]]:
        """The rows in the order added, PER_MESSAGE at a time (a worker's Deletes messages)."""
        for batch in self.batches():
            for i in range(0, len(batch), PER_MESSAGE):
                yield batch[i:i + PER_MESSAGE]

    def _write(self, rows: Iterable[Row]) -> None:
        self._file.write(b"".join(_line(k, s) for k, s in rows))

    def length(self) -> int:
        """The spool file's length in bytes, everything appended so far written (0 in memory)."""
        if self._file is None:
            return 0
        self._file.flush()
        return self._file.tell()

    def batches(self) -> Iterator[list[Row]]:
        """The rows in the order added, BATCH at a time."""
        if self._file is None:
            if self._rows:
                yield list(self._rows)
            return
        self._file.flush()
        self._file.seek(0)
        batch: list[Row] = []
        for line in self._file:
            row = _row(line)
            if row is None:
                continue  # a line torn by a kill (beyond the committed length it is cut anyway)
            batch.append(row)
            if len(batch) == BATCH:
                yield batch
                batch = []
        self._file.seek(0, os.SEEK_END)
        if batch:
            yield batch

    def close(self, *, remove: bool = False) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._rows = []
        if remove and self._keep and self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


def _line(key: str, size: int) -> bytes:
    """One spool line: the size, a tab, the key with backslashes and newlines escaped (a key may
    hold any character; JSON lines cost ~5x more to read back, and a run may spool millions)."""
    if "\\" in key or "\n" in key:
        key = key.replace("\\", "\\\\").replace("\n", "\\n")
    return b"%d\t%s\n" % (size, key.encode("utf-8", "surrogatepass"))


def _row(line: bytes) -> Row | None:
    """A spool line back to (key, size); None for a line torn by a kill."""
    size, tab, raw = line.partition(b"\t")
    if not tab or not raw.endswith(b"\n"):
        return None
    key = raw[:-1].decode("utf-8", "surrogatepass")
    if "\\" in key:
        key = "\\".join(part.replace("\\n", "\n") for part in key.split("\\\\"))
    try:
        return key, int(size)
    except ValueError:
        return None


def _tally(path: str) -> tuple[int, int]:
    count = nbytes = 0
    with open(path, "rb") as f:
        for line in f:
            row = _row(line)
            if row is not None:
                count += 1
                nbytes += row[1]
    return count, nbytes


def spool_path(journal_path: str | None) -> str:
    """The coordinator's spool: beside the journal (kept for --resume), else a temporary file."""
    if journal_path is not None:
        from ..journal.units import object_log_dir

        d = object_log_dir(journal_path)
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, "deferred.deletes")
    import tempfile

    fd, path = tempfile.mkstemp(prefix="s3bulk-deletes-", suffix=".spool")
    os.close(fd)
    return path


class DeferredDeletes:
    """The coordinator's side: the keys of each unit being reported (`pending`, by worker and unit,
    until its UnitDone), the committed spool, and what was not done (`skipped`: keys of units with a
    failure)."""

    def __init__(self, journal: Any = None) -> None:
        self.journal = journal
        path = spool_path(journal.path if journal is not None else None)
        if journal is not None and journal.resumed:
            _truncate(path, journal.deletes_state()[0])
            self.dst_seen = journal.deletes_state()[1]
        else:
            _truncate(path, 0)
            self.dst_seen = 0
        self.spool = KeySpool(path)
        self.pending: dict[tuple[int, Any], KeySpool] = {}
        self.skipped = 0

    def found(self, wid: int, unit: Any, rows: list[Row], dst_seen: int, skipped: int) -> None:
        if rows:
            self.pending.setdefault((wid, unit), KeySpool()).extend(rows)
        self.dst_seen += dst_seen
        self.skipped += skipped

    def unit_done(self, wid: int, unit: Any, failed: bool) -> None:
        """`unit` is done: its keys join the spool (or are dropped when an object of it failed: a
        resume redoes the unit and finds them again)."""
        keys = self.pending.pop((wid, unit), None)
        if keys is None:
            return
        if failed:
            self.skipped += keys.count
        else:
            self.spool.take(keys)
        keys.close()
        if self.journal is not None:
            self.journal.note_deletes(self.spool.length(), self.dst_seen)

    def close(self, *, remove: bool) -> None:
        for keys in self.pending.values():
            keys.close()
        self.pending = {}
        self.spool.close(remove=remove)


def _truncate(path: str, length: int) -> None:
    with open(path, "ab") as f:
        f.truncate(length)


def refuse(sync: Any, count: int, nbytes: int, dst_seen: int, src_objects: int) -> None:
    """Raise when a run's `count` deletes (`nbytes` in all) must not happen: an empty source (unless
    --allow-empty-source: UsageError, exit 2), or more than --max-delete / --max-delete-size allows
    (TooManyDeletes, exit 4). `src_objects` < 0: not known (a narrowed sync --watch batch)."""
    from ...config.delete_caps import check_caps
    from ...errors import UsageError

    if not count:
        return
    if src_objects == 0 and not sync.allow_empty_source:
        raise UsageError(f"SRC listed no objects, so sync --delete would delete all {count:,} objects it found "
                         "at DST; nothing deleted (an unmounted directory or a mistyped prefix looks like this; "
                         "--allow-empty-source if it is meant)")
    check_caps("sync --delete", count, nbytes, dst_seen, sync.max_delete, sync.max_delete_size)


async def delete_batch(dst: Writer, rows: list[Row], backup: Backup | None, url_for: Callable[[str], str],
                       counters: Counters, failures: list[Failure], notes: list[Any] | None) -> int:
    """Delete one batch at DST, first backing each key up when `backup` is set (a key whose backup
    failed stays, as a failure); counts and reports like a worker's deletes. Returns the failures."""
    from ...errors import S3BulkError

    keys = [k for k, _ in rows]
    failed: list[tuple[str, str]] = []
    if backup is not None:
        unsaved = await backup.save(keys)
        if unsaved:
            bad = {k for k, _ in unsaved}
            keys = [k for k in keys if k not in bad]
            failed.extend((k, f"not deleted: its backup failed: {why}") for k, why in unsaved)
    refused: list[tuple[str, str]] = []
    if keys:
        try:
            refused = await dst.delete_many(keys)
        except S3BulkError as exc:
            refused = [(k, str(exc)) for k in keys]
    counters.deleted += len(keys) - len(refused)
    if notes is not None:
        gone = {k for k, _ in refused}
        notes.extend(("deleted", url_for(k), "dst", 0, None, None) for k in keys if k not in gone)
    failed.extend(refused)
    for key, why in failed:
        counters.failed += 1
        failures.append(Failure("delete", url_for(key), "", why, "DeleteFailed"))
    return len(failed)
