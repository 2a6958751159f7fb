"""Small value types shared by stores, engine and CLI.

They are plain frozen dataclasses (or NamedTuples on the hot path) so that they
pickle cheaply: work units and counters cross process boundaries, objects do not.
"""

from __future__ import annotations

from dataclasses import field
from os.path import commonprefix
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, cast

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from .quick_dataclass import dataclass


class ObjectInfo(NamedTuple):
    """One listed object. size/mtime/etag are None where the store cannot say (list/get servers)."""

    key: str
    size: int | None = None
    mtime: float | None = None
    etag: str | None = None
    storage_class: str | None = None  # S3's listing says it (STANDARD, GLACIER...); None elsewhere


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
    gone: tuple[str, ...] = ()  # keys a narrowed sync was told changed that the source no longer has

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

    def shared_prefix(self, prefix: str) -> str:
        """The longest prefix every key of this unit under `prefix` has: what after and until (or
        `prefix` itself, for an open start) begin with alike. Any key between two strings that
        share a beginning shares it too, so a listing asked for this prefix instead of `prefix`
        returns the same keys of the unit, and the server stops near the unit's end instead of
        filling a page with keys past it (ranges cut from one listing are often much shorter
        than a page: a posix-backed gateway pays for every key it puts on a page)."""
        if self.until is None or self.token is not None:
            return prefix
        low = self.after if self.after is not None else prefix
        shared = commonprefix((low, self.until))
        return shared if len(shared) > len(prefix) and shared.startswith(prefix) else prefix

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
    # --metrics: requests sent, {(operation, status class): n} (stores/requests.py); work units
    # finished (counted by the coordinator); and three gauges sent as changes like `concurrency`:
    # transfers in flight, bytes of bodies held against the workers' budgets, and those budgets
    requests: dict[tuple[str, str], int] = field(default_factory=dict)
    units: int = 0
    in_flight: int = 0
    buffer_bytes: int = 0
    buffer_limit: int = 0
    # a dry run: the requests a real run would add to those the dry run sent itself, by operation
    # (engine/transfer/estimate.py)
    planned: dict[str, int] = field(default_factory=dict)
    # `check`: of the keys it counts in `done` (only in SRC or different), those at both sides that
    # differ; the rest are only in SRC
    differ: int = 0
    # archived objects (GLACIER, DEEP_ARCHIVE not restored) skipped, not copied: engine/transfer/archived.py
    archived: int = 0
    archived_bytes: int = 0
    # objects not written because DST already held them (--no-clobber) or a newer copy (--update):
    # counted in `skipped` too, and here for the reason (engine/transfer/guards.py)
    kept: int = 0

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
        requests, planned = self.requests, self.planned
        for key, n in other.requests.items():
            requests[key] = requests.get(key, 0) + n
        for op, n in other.planned.items():
            planned[op] = planned.get(op, 0) + n
        self.units += other.units
        self.in_flight += other.in_flight
        self.buffer_bytes += other.buffer_bytes
        self.buffer_limit += other.buffer_limit
        self.differ += other.differ
        self.archived += other.archived
        self.archived_bytes += other.archived_bytes
        self.kept += other.kept

    def take(self) -> "Counters":
        """Return the counts so far and reset to zero (for periodic deltas)."""
        out = Counters(self.listed, self.listed_bytes, self.done, self.done_bytes,
                       self.failed, self.skipped, self.skipped_bytes, self.deleted, self.server_side,
                       self.retries, self.throttled, self.part_bytes, self.resumed, self.resumed_bytes,
                       self.concurrency, self.requests, self.units, self.in_flight, self.buffer_bytes,
                       self.buffer_limit, self.planned, self.differ, self.archived, self.archived_bytes,
                       self.kept)
        self.differ = self.archived = self.archived_bytes = self.kept = 0
        self.listed = self.listed_bytes = self.done = self.done_bytes = 0
        self.failed = self.skipped = self.skipped_bytes = self.deleted = self.server_side = 0
        self.retries = self.throttled = self.part_bytes = self.resumed = self.resumed_bytes = self.concurrency = 0
        self.units = self.in_flight = self.buffer_bytes = self.buffer_limit = 0
        self.requests, self.planned = {}, {}
        return out

    @property
    def moved_bytes(self) -> int:
        """Bytes moved so far: finished objects plus the parts of those still moving."""
        return self.done_bytes + self.part_bytes

    def __bool__(self) -> bool:
        return any((self.listed, self.done, self.failed, self.skipped, self.deleted, self.retries,
                    self.throttled, self.part_bytes, self.resumed, self.concurrency, self.requests, self.units,
                    self.in_flight, self.buffer_bytes, self.buffer_limit, self.planned, self.differ,
                    self.archived, self.kept))

    def requests_by_operation(self) -> dict[str, dict[str, int]]:
        """{operation: {status class: n}}, as --json's summary carries them."""
        out: dict[str, dict[str, int]] = {}
        for (op, status), n in sorted(self.requests.items()):
            out.setdefault(op, {})[status] = n
        return out


@dataclass(frozen=True, slots=True)
class Failure:
    """One object that could not be copied: what was tried, from where, to where, and why (also
    the event a run's subscriber receives: engine/events.py)."""

    event: ClassVar[str] = "failure"
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
    check: bool = False             # a `check`: its counts are differences, and any difference is not ok
    # the cap that stopped the run gracefully ("max-transfer" or "max-duration": engine/run/caps.py);
    # `interrupted` is then set too: the journal is left as a Ctrl-C leaves it, for --resume
    capped: str | None = None
    # multipart uploads aborted but still listed by the server after every try (URL?uploadId=ID):
    # kept in the journal, whose next run aborts them again
    open_uploads: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The run did what was asked: no failure, not stopped; for `check`, no difference either
        (a script reading `ok` is told whether the trees match, as the exit code says)."""
        c = self.counters
        return self.fatal is None and not self.interrupted and c.failed == 0 and \
            not (self.check and (c.done or c.deleted))

    def check_counts(self) -> dict[str, int]:
        """`check`'s own counts: keys the same at both sides, different, only in SRC, only in DST."""
        c = self.counters
        return {"same": c.skipped, "differ": c.differ, "only_in_src": c.done - c.differ, "only_in_dst": c.deleted}

    def estimate(self) -> dict[str, object] | None:
        """A dry run's estimate of the real run (None for a real run): the requests it would send
        by operation (those the dry run sent itself listing and comparing, plus those its copies and
        deletes would need: engine/transfer/estimate.py) and the bytes it would copy."""
        if not self.dry_run:
            return None
        return dry_run_estimate(self.counters.requests, self.counters.planned, self.counters.done_bytes)

    def to_dict(self) -> dict[str, object]:
        """The counts and outcome as plain JSON-able values (what `--json`'s summary carries)."""
        c = self.counters
        if self.check:
            return {"ok": self.ok, "listed": c.listed, **self.check_counts(), "failed": c.failed,
                    "elapsed_seconds": round(self.elapsed, 3), "cpu_seconds": round(self.cpu_seconds, 3),
                    "peak_rss_bytes": self.peak_rss_bytes, "workers": self.workers, "fatal": self.fatal,
                    "interrupted": self.interrupted, "retries": c.retries, "throttled": c.throttled,
                    "requests": c.requests_by_operation(),
                    "failures": [{"op": f.op, "src": f.src, "dst": f.dst, "error": f.error, "kind": f.kind}
                                 for f in self.failures],
                    "failures_not_shown": self.failures_dropped}
        return {"ok": self.ok, "listed": c.listed, "copied": c.done, "copied_bytes": c.done_bytes,
                "failed": c.failed, "skipped": c.skipped, "skipped_bytes": c.skipped_bytes,
                "skipped_archived": c.archived, "deleted": c.deleted, "server_side_copies": c.server_side, "dry_run": self.dry_run,
                "elapsed_seconds": round(self.elapsed, 3), "cpu_seconds": round(self.cpu_seconds, 3),
                "peak_rss_bytes": self.peak_rss_bytes, "workers": self.workers, "fatal": self.fatal,
                "interrupted": self.interrupted, "resumed_skipped": self.resumed_skipped,
                "resumed_skipped_bytes": self.resumed_skipped_bytes, "journal": self.journal,
                "retries": c.retries, "throttled": c.throttled, "kept": c.kept, "capped": self.capped,
                "requests": c.requests_by_operation(), "estimate": self.estimate(),
                "failures": [{"op": f.op, "src": f.src, "dst": f.dst, "error": f.error, "kind": f.kind}
                             for f in self.failures],
                "failures_not_shown": self.failures_dropped,
                "resume": None if self.resume is None else {"after": self.resume.after, "until": self.resume.until,
                                                            "token": self.resume.token, "seq": self.resume.seq}}


def dry_run_estimate(sent: dict[tuple[str, str], int], planned: dict[str, int], nbytes: int) -> dict[str, object]:
    """{"requests": {operation: n}, "bytes": n}: the requests a dry run sent (any status) plus
    those it planned, and the bytes a real run would copy."""
    requests: dict[str, int] = {}
    for (op, _), n in sent.items():
        requests[op] = requests.get(op, 0) + n
    for op, n in planned.items():
        requests[op] = requests.get(op, 0) + n
    return {"requests": dict(sorted(requests.items())), "bytes": nbytes}


# What an object carries besides its bytes. The system metadata S3 keeps as HTTP headers, in the
# order aws-cli names them; CopyObject with the COPY directive keeps exactly these plus user metadata.
SYSTEM_METADATA = ("content_type", "cache_control", "content_disposition", "content_encoding",
                   "content_language", "expires")


@dataclass(frozen=True, slots=True)
class ObjectProps:
    """The properties one object is written with (or was read with): system and user metadata,
    tags, storage class, and the write-only settings (ACL, encryption, requester pays).

    None means "not set": the store's default. Read from a source, `tag_count` says how many tags
    it has (None: the answer did not say), so tags are fetched (GetObjectTagging) only when some
    exist. Frozen and small: one is made per object on the streamed path and pickles with the options.
    """

    content_type: str | None = None
    cache_control: str | None = None
    content_disposition: str | None = None
    content_encoding: str | None = None
    content_language: str | None = None
    expires: str | None = None                 # an HTTP-date, as the Expires header carries it
    metadata: tuple[tuple[str, str], ...] | None = None   # x-amz-meta-*; None: not set, () : none
    tagging: str | None = None                 # URL-encoded k=v&k2=v2, as x-amz-tagging takes it
    storage_class: str | None = None
    acl: str | None = None                     # canned ACL
    sse: str | None = None                     # AES256 | aws:kms
    sse_kms_key_id: str | None = None
    sse_c_key: bytes | None = field(default=None, repr=False)  # 32 raw bytes; never printed
    request_payer: str | None = None           # requester
    tag_count: int | None = None               # read side only

    def with_(self, **changes: object) -> "ObjectProps":
        from dataclasses import replace

        return replace(self, **cast(dict[str, Any], changes))


COPY_PROPS = ("none", "metadata-directive", "default")


@dataclass(frozen=True, slots=True)
class WriteProps:
    """What the user asked of the properties of every object written (aws-cli's options).

    `set` holds the values given on the command line (each wins over what a source carries);
    `copy_props` and `metadata_directive` say what an S3-to-S3 copy carries from the source
    object, as aws-cli's --copy-props and --metadata-directive; `guess_mime_type` is aws-cli's
    default Content-Type from the file name; `preserve_xattrs` keeps Content-Type and user
    metadata in extended attributes on local disk (rclone's user.* names) and restores them on upload.
    """

    set: ObjectProps = ObjectProps()
    guess_mime_type: bool = True
    copy_props: str = "default"            # none | metadata-directive | default
    metadata_directive: str | None = None  # COPY | REPLACE (None: COPY)
    preserve_xattrs: bool = False

    def __post_init__(self) -> None:
        from .errors import UsageError

        if self.copy_props not in COPY_PROPS:
            raise UsageError(f"--copy-props must be one of {', '.join(COPY_PROPS)}, not {self.copy_props!r}")
        if self.metadata_directive not in (None, "COPY", "REPLACE"):
            raise UsageError(f"--metadata-directive must be COPY or REPLACE, not {self.metadata_directive!r}")

    @property
    def carries_metadata(self) -> bool:
        """An S3-to-S3 copy keeps the source's system and user metadata."""
        return self.copy_props != "none" and self.metadata_directive != "REPLACE"

    @property
    def carries_tags(self) -> bool:
        """An S3-to-S3 copy keeps the source's tags and storage class (aws-cli's default)."""
        return self.copy_props == "default"

    @property
    def overrides(self) -> bool:
        """Some metadata or tags given on the command line (what a plain CopyObject cannot apply)."""
        s = self.set
        return any(getattr(s, name) is not None for name in SYSTEM_METADATA) or \
            s.metadata is not None or s.tagging is not None

    @property
    def plain_copy(self) -> bool:
        """A server-side CopyObject as it is, which keeps metadata and tags by itself."""
        return self.carries_metadata and self.carries_tags and not self.overrides
