"""What a worker tells the coordinator, as small typed records.

Workers (processes, the in-process thread, Dask tasks through cluster/driver.py) put these on the events
queue; the coordinator (engine/run/coordinator.py) dispatches on their class. They are frozen, slotted
records (config/record.py: what dataclass(frozen=True, slots=True) gave them, without its cost at
import): a field is read by name, never by position, and each pickles to a few dozen bytes more
than the tuple it replaced (a run sends a handful per page, so that is noise).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from ..model import Counters, Failure, ObjectInfo, WorkUnit
from .events import Notice, PlannedEvent
from ..config.record import Record, set_field as _set


class Listed(Record):
    """The unit's page was listed; `pieces` is what the page did not cover, as contiguous units
    (several when the range was split: engine/listing/units.py), empty when the unit is done listing."""

    __slots__ = ("wid", "unit", "pieces")
    wid: int
    unit: WorkUnit
    pieces: list[WorkUnit]

    def __init__(self, wid: int, unit: WorkUnit, pieces: list[WorkUnit]) -> None:
        _set(self, "wid", wid)
        _set(self, "unit", unit)
        _set(self, "pieces", pieces)


class UnitDone(Record):
    """Every object of the unit's page was handled. `rest` is what was handed on (the journal
    records the page as the range between); `object_log` is the page's per-object journal file."""

    __slots__ = ("wid", "unit", "rest", "objects", "nbytes", "failed", "object_log")
    wid: int
    unit: WorkUnit
    rest: WorkUnit | None
    objects: int
    nbytes: int
    failed: int
    object_log: str | None

    def __init__(self, wid: int, unit: WorkUnit, rest: WorkUnit | None, objects: int, nbytes: int, failed: int,
                 object_log: str | None = None) -> None:
        _set(self, "wid", wid)
        _set(self, "unit", unit)
        _set(self, "rest", rest)
        _set(self, "objects", objects)
        _set(self, "nbytes", nbytes)
        _set(self, "failed", failed)
        _set(self, "object_log", object_log)


class Deletes(Record):
    """sync --delete, deferred (engine/run/deletes.py): DST keys of `unit` (its UnitDone follows),
    at most 100 (key, size) rows a message; `dst_seen`, DST objects the
    unit's march saw (for --max-delete P%); `skipped`, keys not to be deleted because an object of
    the unit failed (or, with --delete-during, that were not deleted for that reason); `backed_up`,
    objects this worker copied to --backup-dir since its last report (overwrites, and
    --delete-during's deletes)."""

    __slots__ = ("wid", "keys", "dst_seen", "skipped", "backed_up", "unit")
    wid: int
    keys: list[tuple[str, int]]
    dst_seen: int
    skipped: int
    backed_up: int
    unit: WorkUnit | None

    def __init__(self, wid: int, keys: list[tuple[str, int]], dst_seen: int = 0, skipped: int = 0,
                 backed_up: int = 0, unit: WorkUnit | None = None) -> None:
        _set(self, "wid", wid)
        _set(self, "keys", keys)
        _set(self, "dst_seen", dst_seen)
        _set(self, "skipped", skipped)
        _set(self, "backed_up", backed_up)
        _set(self, "unit", unit)


class Abandoned(Record):
    """A stop was requested: the unit (narrowed to its page when it was listed) is not finished
    and goes back to the coordinator's frontier."""

    __slots__ = ("wid", "unit", "was_listed")
    wid: int
    unit: WorkUnit
    was_listed: bool

    def __init__(self, wid: int, unit: WorkUnit, was_listed: bool) -> None:
        _set(self, "wid", wid)
        _set(self, "unit", unit)
        _set(self, "was_listed", was_listed)


class UploadBegun(NamedTuple):
    """A multipart upload about to be asked for (no `upload_id` yet: an intent,
    engine/leftover_uploads.py), or begun: a Transfer's note (engine/transfer/notes.py). `part_size` 0: a copy in parts the store runs itself,
    whose id comes when the store names it (stores.base.COPY_UPLOAD_OPENED). The source's size, mtime and ETag say whether a resume may continue it."""

    kind: Literal["upload"]
    key: str
    upload_id: str | None
    size: int
    part_size: int
    src_size: int | None
    src_mtime: float | None
    src_etag: str | None

    @classmethod
    def of(cls, key: str, upload_id: str | None, size: int, part_size: int,
           info: ObjectInfo | None) -> UploadBegun:
        if info is None:
            return cls("upload", key, upload_id, size, part_size, None, None, None)
        return cls("upload", key, upload_id, size, part_size, info.size, info.mtime, info.etag)


class UploadEnd(NamedTuple):
    """A multipart upload completed or aborted, or an intent that made no upload (`upload_id` None)."""

    kind: Literal["upload_end"]
    key: str
    upload_id: str | None

    @classmethod
    def of(cls, key: str, upload_id: str | None) -> UploadEnd:
        return cls("upload_end", key, upload_id)


UploadNote = UploadBegun | UploadEnd


class UploadStarted(Record):
    """An S3 multipart upload began (the journal keeps it so that a resume can continue it), or,
    with no upload_id, is about to be asked for (an intent: engine/leftover_uploads.py): the
    transfer's note of it, from worker `wid`."""

    __slots__ = ("wid", "note")
    wid: int
    note: UploadBegun

    def __init__(self, wid: int, note: UploadBegun) -> None:
        _set(self, "wid", wid)
        _set(self, "note", note)


class UploadEnded(Record):
    """An S3 multipart upload was completed or aborted (no upload_id: it was refused, not made)."""

    __slots__ = ("wid", "note")
    wid: int
    note: UploadEnd

    def __init__(self, wid: int, note: UploadEnd) -> None:
        _set(self, "wid", wid)
        _set(self, "note", note)


class ProgressReport(Record):
    """Counters added up since the last report (a quarter second) and the failures seen meanwhile."""

    __slots__ = ("wid", "counters", "failures")
    wid: int
    counters: Counters
    failures: list[Failure]

    def __init__(self, wid: int, counters: Counters, failures: list[Failure]) -> None:
        _set(self, "wid", wid)
        _set(self, "counters", counters)
        _set(self, "failures", failures)


class Planned(Record):
    """A dry run's would-be actions or `check`'s differences for one page (events.py), in key order."""

    __slots__ = ("wid", "events")
    wid: int
    events: list[PlannedEvent | Notice]  # a Notice: said once a run (the coordinator drops repeats)

    def __init__(self, wid: int, events: list[PlannedEvent | Notice]) -> None:
        _set(self, "wid", wid)
        _set(self, "events", events)


ObjectNote = tuple[str, str, str, "int | None", "str | None", "str | None"]
"""(kind, url, other, size, etag, checksum): see ObjectsReported."""


class ObjectsReported(Record):
    """With plan.report_objects (`--json -v`, `--report`) only, since the last flush (and before the
    UnitDone of a unit whose objects they are): each object copied ("copied", src_url, dst_url, size,
    source ETag, None), left unchanged by sync or found the same by check ("skipped", src_url,
    dst_url, size, source ETag, the checksum that proved it or None), kept at DST by --no-clobber or
    --update ("kept", src_url, dst_url, size, source ETag, the reason), moved by mv ("moved", src_url,
    dst_url, size, ETag, None) or deleted by sync --delete ("deleted", url, "dst", 0, None, None);
    and always each object started over because its source changed ("restarted", src_url, dst_url,
    0, None, None)."""

    __slots__ = ("wid", "notes")
    wid: int
    notes: list[ObjectNote]

    def __init__(self, wid: int, notes: list[ObjectNote]) -> None:
        _set(self, "wid", wid)
        _set(self, "notes", notes)


class Fatal(Record):
    """The run cannot go on (the first one wins; its exit code is the run's)."""

    __slots__ = ("wid", "message", "exit_code")
    wid: int
    message: str
    exit_code: int

    def __init__(self, wid: int, message: str, exit_code: int) -> None:
        _set(self, "wid", wid)
        _set(self, "message", message)
        _set(self, "exit_code", exit_code)


class Exited(Record):
    """A worker's last words: its peak RSS and the CPU seconds it used."""

    __slots__ = ("wid", "peak_rss_bytes", "cpu_seconds")
    wid: int
    peak_rss_bytes: int
    cpu_seconds: float

    def __init__(self, wid: int, peak_rss_bytes: int, cpu_seconds: float) -> None:
        _set(self, "wid", wid)
        _set(self, "peak_rss_bytes", peak_rss_bytes)
        _set(self, "cpu_seconds", cpu_seconds)


WorkerMessage = (Listed | UnitDone | Deletes | Abandoned | UploadStarted | UploadEnded | ProgressReport | Planned
                 | ObjectsReported | Fatal | Exited)
