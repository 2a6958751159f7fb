"""Small value types shared by stores, engine and CLI.

They are plain frozen dataclasses (or NamedTuples on the hot path) so that they
pickle cheaply: work units and counters cross process boundaries, objects do not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class ObjectInfo(NamedTuple):
    """One listed object. size/mtime/etag are None where the store cannot say (list/get servers)."""

    key: str
    size: int | None = None
    mtime: float | None = None
    etag: str | None = None


class Page(NamedTuple):
    """One page of a listing, in key order.

    `next_after` and `next_token` say where the following page starts; both None
    means the listing (or the unit) is finished. Key-ordered stores set `next_after`
    (the last key seen), so the rest is again a key range; sequential-only stores
    (the list/get server) set an opaque `next_token`.
    """

    entries: list[ObjectInfo]
    next_after: str | None = None
    next_token: str | None = None
    problems: tuple[tuple[str, str], ...] = ()  # (name, why) for entries that could not be listed

    @property
    def is_last(self) -> bool:
        return self.next_after is None and self.next_token is None


@dataclass(frozen=True, slots=True)
class WorkUnit:
    """The one unit of work: a key range, or a page token where a source can only page in sequence.

    Keys in the unit are those with `after < key <= until` under the listing prefix
    (None meaning unbounded). A worker lists one page of the unit, hands the rest
    back as a new unit at once (so another process lists on while this one copies),
    and reports the page's results. The same unit is what sync compares on both
    sides and what a resume journal records.
    """

    after: str | None = None
    until: str | None = None
    token: str | None = None
    seq: int = 0  # position in the listing chain; for ordering reports, not semantics

    def rest(self, page: Page) -> "WorkUnit | None":
        """The unit that covers what this page did not, or None when the unit is done."""
        if page.is_last:
            return None
        if page.next_after is not None and self.until is not None and page.next_after >= self.until:
            return None
        return WorkUnit(after=page.next_after, until=self.until, token=page.next_token, seq=self.seq + 1)


@dataclass(slots=True)
class Counters:
    """Aggregated counts that workers send to the coordinator (never one message per object)."""

    listed: int = 0
    listed_bytes: int = 0
    done: int = 0
    done_bytes: int = 0
    failed: int = 0
    skipped: int = 0
    skipped_bytes: int = 0
    deleted: int = 0
    server_side: int = 0
    retries: int = 0       # requests tried again (throttling, 5xx, dropped connections, short bodies)
    throttled: int = 0     # answers that asked us to slow down (503 SlowDown and kin)
    part_bytes: int = 0    # bytes of parts landed for objects still in transfer (progress inside big objects)
    resumed: int = 0       # objects an interrupted run had finished (the journal's done_keys): not redone
    resumed_bytes: int = 0
    # Sum over workers of their current request concurrency: workers send the change since their
    # last report, so the coordinator's sum is the run's concurrency now (where AIMD settled).
    concurrency: int = 0

    def add(self, other: "Counters") -> None:
        self.listed += other.listed
        self.listed_bytes += other.listed_bytes
        self.done += other.done
        self.done_bytes += other.done_bytes
        self.failed += other.failed
        self.skipped += other.skipped
        self.skipped_bytes += other.skipped_bytes
        self.deleted += other.deleted
        self.server_side += other.server_side
        self.retries += other.retries
        self.throttled += other.throttled
        self.part_bytes += other.part_bytes
        self.resumed += other.resumed
        self.resumed_bytes += other.resumed_bytes
        self.concurrency += other.concurrency

    def take(self) -> "Counters":
        """Return the counts so far and reset to zero (for periodic deltas)."""
        out = Counters(self.listed, self.listed_bytes, self.done, self.done_bytes,
                       self.failed, self.skipped, self.skipped_bytes, self.deleted, self.server_side,
                       self.retries, self.throttled, self.part_bytes, self.resumed, self.resumed_bytes,
                       self.concurrency)
        self.listed = self.listed_bytes = self.done = self.done_bytes = 0
        self.failed = self.skipped = self.skipped_bytes = self.deleted = self.server_side = 0
        self.retries = self.throttled = self.part_bytes = self.resumed = self.resumed_bytes = self.concurrency = 0
        return out

    @property
    def moved_bytes(self) -> int:
        """Bytes moved so far: finished objects plus the parts of those still moving."""
        return self.done_bytes + self.part_bytes

    def __bool__(self) -> bool:
        return any((self.listed, self.done, self.failed, self.skipped, self.deleted, self.retries,
                    self.throttled, self.part_bytes, self.resumed, self.concurrency))


@dataclass(frozen=True, slots=True)
class Failure:
    """One object that could not be copied: what was tried, from where, to where, and why."""

    op: str
    src: str
    dst: str
    error: str
    kind: str = "StoreError"


@dataclass(slots=True)
class Summary:
    """What a run did, for the final screen, `--json` and the Python API."""

    counters: Counters = field(default_factory=Counters)
    failures: list[Failure] = field(default_factory=list)
    failures_dropped: int = 0
    elapsed: float = 0.0
    cpu_seconds: float = 0.0
    peak_rss_bytes: int = 0
    workers: int = 1
    fatal: str | None = None
    fatal_code: int = 3             # the exit code the fatal error asks for (2 for a usage error)
    interrupted: bool = False
    dry_run: bool = False
    resume: WorkUnit | None = None  # where a stopped run continues (see run_plan's should_stop)
    resumed_skipped: int = 0        # objects a resumed run skipped: its journal had them done
    resumed_skipped_bytes: int = 0
    journal: str | None = None      # the resume journal kept for this run (None: none, or removed when complete)

    @property
    def ok(self) -> bool:
        return self.fatal is None and not self.interrupted and self.counters.failed == 0

    def to_dict(self) -> dict:
        """The counts and outcome as plain JSON-able values (what `--json`'s summary carries)."""
        c = self.counters
        return {"ok": self.ok, "listed": c.listed, "copied": c.done, "copied_bytes": c.done_bytes,
                "failed": c.failed, "skipped": c.skipped, "skipped_bytes": c.skipped_bytes,
                "deleted": c.deleted, "server_side_copies": c.server_side, "dry_run": self.dry_run,
                "elapsed_seconds": round(self.elapsed, 3), "cpu_seconds": round(self.cpu_seconds, 3),
                "peak_rss_bytes": self.peak_rss_bytes, "workers": self.workers, "fatal": self.fatal,
                "interrupted": self.interrupted, "resumed_skipped": self.resumed_skipped,
                "resumed_skipped_bytes": self.resumed_skipped_bytes, "journal": self.journal,
                "retries": c.retries, "throttled": c.throttled,
                "failures": [{"op": f.op, "src": f.src, "dst": f.dst, "error": f.error, "kind": f.kind}
                             for f in self.failures],
                "failures_not_shown": self.failures_dropped,
                "resume": None if self.resume is None else {"after": self.resume.after, "until": self.resume.until,
                                                            "token": self.resume.token, "seq": self.resume.seq}}
