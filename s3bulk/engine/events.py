"""Everything a run tells whoever watches it, as typed events, and the one place that delivers them.

The coordinator turns what workers report into events and hands each to one `Subscriber`
(`Subscriber.notify`, the single dispatch point); a subscriber has one method per kind of event,
each a no-op until overridden, as s3transfer's subscribers have `on_queued` / `on_progress` /
`on_done`. The CLI's renderers (the live display, `--quiet`, `--json`), the lines a dry run or
`check` prints, and a Python caller's own subscriber all receive the same objects; nothing
dispatches on strings. A worker never writes to stdout itself.

    event          method           when
    Progress       on_progress      about four times a second, and once at the end
    Failure        on_failure       an object could not be copied (or deleted)
    Stopping       on_stopping      a first Ctrl-C or SIGTERM began a graceful stop
    Notice         on_notice        a remark for the user ("nothing to resume ...")
    Copied         on_copied        an object landed (with report_objects: `--json -v`, `-v`)
    Skipped        on_skipped       sync found an object unchanged, `check` found it the same (with report_objects)
    Deleted        on_deleted       an object was deleted: mv's source, or sync --delete's destination
    Restarted      on_restarted     an object started over because its source changed while it was read
    DryRunAction   on_dry_run       a dry run: a copy or delete a real run would do
    Difference     on_difference    `check`: a key only in SRC, only in DST, or different
    WatchStatus    on_watch_status  `sync --watch`: how far behind SRC the mirror is, about once a second

The commands outside the worker pool report through the same subscriber: `rm` (Deleted, or
DryRunAction "delete", per key; Failure "delete"; Notice; Progress four times a second),
`copy --all-versions` (Copied or Failure per version), `check --against-report` (Difference),
`sync --watch-queue`'s feed (Notice). An upload `rm --incomplete-uploads` aborted is an
UploadAborted, a kind of Deleted (on_deleted); one its dry run found an UploadFound, a kind of
DryRunAction (on_dry_run): a kind reaches its base's method, so the methods above are all there is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal, TextIO, Union

from ..model import Counters, Failure

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ..quick_dataclass import dataclass

__all__ = ["Copied", "Deleted", "Difference", "DryRunAction", "Event", "Failure",
           "Notice", "PlannedEvent", "Progress", "Relay", "Restarted",
           "Skipped", "Stopping", "Subscriber", "UploadAborted", "UploadFound", "WatchStatus",
           "deletion"]


@dataclass(frozen=True, slots=True)
class Progress:
    """Counts so far (a copy: later counts do not change it), whether the listing has finished,
    seconds since the run began, and the number of workers."""

    event: ClassVar[str] = "progress"
    counters: Counters
    listing_done: bool
    elapsed: float
    workers: int


@dataclass(frozen=True, slots=True)
class Stopping:
    """A first Ctrl-C or SIGTERM: the transfers in flight finish, then the run returns."""

    event: ClassVar[str] = "stopping"


@dataclass(frozen=True, slots=True)
class Notice:
    """A one-line remark for the user, such as "nothing to resume (no journal at ...)"."""

    event: ClassVar[str] = "notice"
    message: str


@dataclass(frozen=True, slots=True)
class Copied:
    """One object landed at `dst` (`size` bytes); `etag` is the source's as listed (the version
    read), None where the source has none."""

    event: ClassVar[str] = "copied"
    src: str
    dst: str
    size: int
    etag: str | None = None

    def json_fields(self) -> dict[str, Any]:
        """The --json line without its schema version (the renderer adds "v")."""
        return {"event": self.event, "action": "copy", "src": self.src, "dst": self.dst, "size": self.size}


@dataclass(frozen=True, slots=True)
class Deleted:
    """One object deleted: `side` "src" for a source `mv` moved, "dst" for a key `sync --delete`
    removed."""

    event: ClassVar[str] = "deleted"
    url: str
    side: Literal["src", "dst"]
    moved_to: str | None = None  # mv: where the source's copy landed, its size and ETag (None: not known)
    size: int | None = None
    etag: str | None = None


    def json_fields(self) -> dict[str, Any]:
        return {"event": self.event, "action": "delete", self.side: self.url}


@dataclass(frozen=True, slots=True)
class Skipped:
    """sync found `src` unchanged at `dst` and left it (check: found it the same); only when the run
    reports objects (a `--report`, or report_objects=True), batched by the workers as Copied is."""

    event: ClassVar[str] = "skipped"
    src: str
    dst: str
    size: int | None
    etag: str | None = None
    checksum: str | None = None  # "ALGORITHM:value" that proved it unchanged (sync/check --checksum)
    # why DST's copy was kept instead (--no-clobber, --update: engine/transfer/guards.py); None: unchanged
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Restarted:
    """An object started over from its new version because its source changed while it was read
    (a second change fails it)."""

    event: ClassVar[str] = "restarted"
    src: str
    dst: str
    reason: str

    def json_fields(self) -> dict[str, Any]:
        return {"event": self.event, "src": self.src, "dst": self.dst, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class DryRunAction:
    """--dry-run: a copy or a delete that a real run would do."""

    event: ClassVar[str] = "dryrun"
    action: Literal["copy", "delete", "move"]  # move: `mv --dry-run`, a copy and its source's delete
    src: str | None  # None for a delete
    dst: str

    def line(self) -> str:
        if self.action in ("copy", "move"):
            return f"(dryrun) {self.action}: {self.src} -> {self.dst}"
        return f"(dryrun) delete: {self.dst}"

    def json_fields(self) -> dict[str, Any]:
        """The --json line without its schema version (the renderer adds "v")."""
        if self.src is None:
            return {"event": self.event, "action": self.action, "dst": self.dst}
        return {"event": self.event, "action": self.action, "src": self.src, "dst": self.dst}


@dataclass(frozen=True, slots=True)
class Difference:
    """`s3bulk check`: one key that is only in SRC, only in DST, or differs."""

    event: ClassVar[str] = "difference"
    kind: Literal["only-in-src", "differs", "only-in-dst"]
    src: str | None  # None for only-in-dst
    dst: str

    def line(self) -> str:
        if self.kind == "only-in-src":
            return one_line(f"{self.kind}: {self.src}")
        if self.kind == "differs":
            return one_line(f"{self.kind}: {self.src} <> {self.dst}")
        return one_line(f"{self.kind}: {self.dst}")

    def json_fields(self) -> dict[str, Any]:
        if self.src is None:
            return {"event": self.event, "kind": self.kind, "dst": self.dst}
        return {"event": self.event, "kind": self.kind, "src": self.src, "dst": self.dst}


@dataclass(frozen=True, slots=True)
class WatchStatus:
    """`sync --watch`, between and during its narrowed syncs: `lag` is the seconds since the oldest
    change not yet landed at DST (0.0 when none waits), `handled` the changes landed since the watch
    began, `queue_depth` the changes still waiting at the feed when it can say (an SQS queue's
    approximate count), else None."""

    event: ClassVar[str] = "watch"
    lag: float
    handled: int
    queue_depth: int | None

    def json_fields(self) -> dict[str, Any]:
        return {"event": self.event, "lag": round(self.lag, 3), "handled": self.handled,
                "queue_depth": self.queue_depth}


@dataclass(frozen=True, slots=True)
class UploadAborted(Deleted):
    """`rm --incomplete-uploads`: a multipart upload left open was aborted (its parts deleted): a
    Deleted whose `url` is the key's URL with ?uploadId=, received by `on_deleted`; `initiated`
    is when it began (epoch seconds, the store's clock; None when the store does not say)."""

    key: str = ""
    upload_id: str = ""
    initiated: float | None = None

    def json_fields(self) -> dict[str, Any]:
        return {"event": "aborted", "action": "abort", "dst": self.url, "key": self.key,
                "upload_id": self.upload_id, "initiated": self.initiated}


@dataclass(frozen=True, slots=True)
class UploadFound(DryRunAction):
    """`rm --incomplete-uploads --dry-run`: a multipart upload left open that a real run would
    abort (a DryRunAction "delete", received by `on_dry_run`), with what UploadAborted says of it."""

    key: str = ""
    upload_id: str = ""
    initiated: float | None = None

    def json_fields(self) -> dict[str, Any]:
        return {"event": self.event, "action": "abort", "dst": self.dst, "key": self.key,
                "upload_id": self.upload_id, "initiated": self.initiated}


def deletion(url: str, why: str | None, dry_run: bool) -> "Deleted | DryRunAction | Failure":
    """The event of one key `rm` deleted (or, dry, would delete), or could not delete (`why`)."""
    if why is not None:
        return Failure("delete", url, "", why)
    return DryRunAction("delete", None, url) if dry_run else Deleted(url, "dst")


PlannedEvent = DryRunAction | Difference
Event = Union[Progress, Failure, Stopping, Notice, Copied, Skipped, Deleted, Restarted, DryRunAction, Difference,
              WatchStatus]
"""Any one event a run reports: `Subscriber.notify` receives each and calls the `on_*` method of its kind."""


class Subscriber:
    """Receives a run's events: subclass it and override the methods for the events wanted (each
    is a no-op here), then pass an instance as `subscriber=` to copy / sync / move / check.

    The methods run in the thread that runs the coordinator (the caller's, or `*_async`'s worker
    thread), between its turns: a slow method slows the run's bookkeeping, not the transfers. An
    exception raised by one stops the run as any bug would."""

    def on_progress(self, event: Progress) -> None:
        """Counts so far, about four times a second and once at the end."""

    def on_failure(self, event: Failure) -> None:
        """An object that could not be copied or deleted (the summary keeps the first 1,000)."""

    def on_stopping(self, event: Stopping) -> None:
        """A first Ctrl-C or SIGTERM began a graceful stop."""

    def on_notice(self, event: Notice) -> None:
        """A remark for the user."""

    def on_copied(self, event: Copied) -> None:
        """An object landed (only when the run reports objects: `--json -v`)."""

    def on_skipped(self, event: Skipped) -> None:
        """sync left an object unchanged, or check found it the same (only when the run reports objects)."""

    def on_deleted(self, event: Deleted) -> None:
        """An object was deleted (only when the run reports objects)."""

    def on_restarted(self, event: Restarted) -> None:
        """An object started over because its source changed while it was read."""

    def on_dry_run(self, event: DryRunAction) -> None:
        """A dry run: one copy or delete a real run would do."""

    def on_difference(self, event: Difference) -> None:
        """`check`: one key that differs or is on one side only."""

    def on_watch_status(self, event: WatchStatus) -> None:
        """`sync --watch`: the mirror's lag, changes handled, the feed's depth (about once a second)."""

    def notify(self, event: Event) -> None:
        """Deliver `event` to its method: the one dispatch point, by the event's type."""
        getattr(self, _METHODS[type(event)])(event)


# event type -> the Subscriber method that receives it (a test checks every event has one)
_METHODS: dict[type, str] = {
    Progress: "on_progress", Failure: "on_failure", Stopping: "on_stopping", Notice: "on_notice",
    Copied: "on_copied", Skipped: "on_skipped", Deleted: "on_deleted", Restarted: "on_restarted",
    DryRunAction: "on_dry_run", Difference: "on_difference", WatchStatus: "on_watch_status",
}
# the kinds of an event that its method receives as well (a test checks each has its base's method)
_METHODS.update({UploadAborted: _METHODS[Deleted], UploadFound: _METHODS[DryRunAction]})


class Relay(Subscriber):
    """A subscriber that acts on some events itself, then passes every event on to `then`."""

    def __init__(self, then: Subscriber | None = None) -> None:
        self.then = then if then is not None else Subscriber()

    def notify(self, event: Event) -> None:
        super().notify(event)
        self.then.notify(event)


def one_line(text: str) -> str:
    """A key's control characters shown escaped: a newline in a key cannot forge another line."""
    return text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text


def write_line(out: TextIO, text: str) -> None:
    """One line of a dry run or `check`, unflushed (there may be millions; the next flush of `out`
    sends them in order with the rest). Keys that are not valid UTF-8 (local names) are written
    with backslash escapes rather than failing the run."""
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(text + "\n")
    else:
        buffer.write((text + "\n").encode("utf-8", "backslashreplace"))

