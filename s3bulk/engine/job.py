"""One request value through the layers: what a copy, mv, sync or check is asked to do.

Every entry point (the command line's copy, sync, mv, check and `sync --watch`, the Python API,
the Lambda handler) builds one `Job` from what its caller gave, once; the orchestration path
(engine/run/orchestrate.py `run`), the planner (`build_plan`) and the watcher receive it whole
instead of two dozen keywords copied through each layer. What is not a request but a hook of this
process (the subscriber, a stop handle, the display's context, a cluster's runner) travels beside
it, so the Job stays plain data: frozen, and it pickles.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Literal

from ..config.filters import Filters
from ..config.record import Record
from ..config.urls import S3Options
from ..model import WorkUnit
from .plan import SyncOptions, TransferOptions

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ..quick_dataclass import dataclass

__all__ = ["Command", "Job", "JournalChoice", "Manifest"]

Command = Literal["copy", "mv", "sync", "check"]


class JournalChoice(Record):
    """Where the run's resume journal is kept and whether the run continues the one there. Kept
    when `path` is given, or at the per-run default path when `default` (the command line keeps
    one unless --no-journal; the API none unless given a path)."""

    path: str | None = None
    default: bool = False
    directory: str | None = None   # where default journals live (stale ones there are pruned)
    resume: bool = False

    @property
    def kept(self) -> bool:
        return self.path is not None or self.default


class Manifest(Record):
    """The keys to copy, from a file instead of a listing (--files-from). `name` is what the
    journal knows it by when `path` is a spooled copy of stdin or of an S3 Inventory report."""

    path: str
    format: str = "auto"
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """One copy, mv, sync or check from `src` to `dst`, as asked. `sync` is set for sync and check
    (check: its `check` flag), None for copy and mv. `max_memory`: an RSS budget (bytes or "128MiB")
    the options are fitted to. `start`: the unit an earlier run stopped at. `report`: a file (.csv
    or .jsonl) with a row per object; `report_objects`: the subscriber also gets Copied and Deleted
    per object. `empty_source_ok`: an S3 SRC prefix holding nothing is synced as empty rather than
    refused as a typo (`sync --watch` once its first sync found it)."""

    command: Command
    src: str
    dst: str
    options: TransferOptions = field(default_factory=TransferOptions)
    sync: SyncOptions | None = None
    src_s3: S3Options | None = None
    dst_s3: S3Options | None = None
    filters: Filters = field(default_factory=Filters)
    manifest: Manifest | None = None
    journal: JournalChoice = field(default_factory=JournalChoice)
    max_memory: int | str | None = None
    start: WorkUnit | None = None
    report: str | None = None
    report_objects: bool = False
    empty_source_ok: bool = False

    @property
    def move(self) -> bool:
        """`mv`: each source object is deleted once its copy has landed."""
        return self.command == "mv"

    @property
    def check(self) -> bool:
        return self.sync is not None and self.sync.check

    @property
    def dry_run(self) -> bool:
        """Nothing is written: sync's and check's dry run is their SyncOptions', copy's and mv's
        their TransferOptions'."""
        return bool(self.sync is not None and self.sync.dry_run) or self.options.dry_run
