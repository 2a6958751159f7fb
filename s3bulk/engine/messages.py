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
from ..config.record import Record


class Listed(Record):
    """The unit's page was listed; `pieces` is what the page did not cover, as contiguous units
    (several when the range was split: engine/listing/units.py), empty when the unit is done listing."""

    wid: int
    unit: WorkUnit
    pieces: list[WorkUnit]


class UnitDone(Record):
    """Every object of the unit's page was handled. `rest` is what was handed on (the journal
    records the page as the range between); `object_log` is the page's per-object journal file."""

    wid: int
    unit: WorkUnit
    rest: WorkUnit | None
    objects: int
    nbytes: int
    failed: int
    object_log: str | None = None


class Deletes(Record):
    """sync --delete, deferred (engine/run/deletes.py): DST keys of `unit` (its UnitDone follows),
    at most 100 (key, size) rows a message; `dst_seen`, DST objects the
    unit's march saw (for --max-delete P%); `skipped`, keys not to be deleted because an object of
    the unit failed (or, with --delete-during, that were not deleted for that reason); `backed_up`,
    objects this worker copied to --backup-dir since its last report (overwrites, and
    --delete-during's deletes)."""

    wid: int
    keys: list[tuple[str, int]]
    dst_seen: int = 0
    skipped: int = 0
    backed_up: int = 0
    unit: WorkUnit | None = None


class Abandoned(Record):
    """A stop was requested: the unit (narrowed to its page when it was listed) is not finished
    and goes back to the coordinator's frontier."""

    wid: int
    unit: WorkUnit
    was_listed: bool


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

    wid: int
    note: UploadBegun


class UploadEnded(Record):
    """An S3 multipart upload was completed or aborted (no upload_id: it was refused, not made)."""

    wid: int
    note: UploadEnd


class ProgressReport(Record):
    """Counters added up since the last report (a quarter second) and the failures seen meanwhile."""

    wid: int
    counters: Counters
    failures: list[Failure]


class Planned(Record):
    """A dry run's would-be actions or `check`'s differences for one page (events.py), in key order."""

    wid: int
    events: list[PlannedEvent | Notice]  # a Notice: said once a run (the coordinator drops repeats)


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

    wid: int
    notes: list[ObjectNote]


class Fatal(Record):
    """The run cannot go on (the first one wins; its exit code is the run's)."""

    wid: int
    message: str
    exit_code: int


class Exited(Record):
    """A worker's last words: its peak RSS and the CPU seconds it used."""

    wid: int
    peak_rss_bytes: int
    cpu_seconds: float


WorkerMessage = (Listed | UnitDone | Deletes | Abandoned | UploadStarted | UploadEnded | ProgressReport | Planned
                 | ObjectsReported | Fatal | Exited)
