"""What a run will do, decided before any worker starts; everything here pickles."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import field
from typing import TYPE_CHECKING, Literal

from ..config.filters import Filters
from ..config.sizes import size_field
from ..model import ObjectInfo, WriteProps
from ..stores import GetResult, ObjectHead, ResilienceOptions, StoreOptions
from ..stores.requests import counted_by
from ..config.urls import Location

if TYPE_CHECKING:
    from dataclasses import dataclass
    from ..config.sizes import Size
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ..quick_dataclass import dataclass

MiB = 1024 * 1024
# transfers in flight per worker a run may grow to by default: at 50 ms a request and ~150 us of CPU
# an object, one core needs ~330 in flight to be busy; each costs a connection (~30 KiB: memory_budget.py)
AUTO_MAX_CONCURRENCY = 512
# parts of one object in flight a transfer may grow to by default while the link gives more with
# each step (engine/transfer/link.py): at 25 MB/s a connection, 32 parts in flight move 800 MB/s
AUTO_MAX_PART_CONCURRENCY = 32
DEFAULT_PART_SIZE = 8 * MiB


Compare = Literal["default", "size-only", "exact-timestamps", "checksum"]


@dataclass(frozen=True, slots=True)
class SyncOptions:
    """What `sync` (and `check`, a dry run that reports differences) adds to a copy's plan."""

    delete: bool = False
    dry_run: bool = False
    compare: Compare = "default"
    hash_cache: str | None = None
    check: bool = False          # `s3bulk check`: a dry run that reports each difference and its kind
    # deletes (engine/run/deletes.py): deferred to the end of the run and skipped when anything failed,
    # unless delete_during (each unit deletes once its own copies are done, none if one failed)
    delete_during: bool = False
    allow_empty_source: bool = False  # an empty SRC may empty DST (else refused, exit 2)
    max_delete: str | None = None     # "N" or "P%" of DST's objects seen: more refuses every delete
    max_delete_size: int | None = None  # bytes: more refuses every delete
    backup_dir: str | None = None     # URL: what is deleted or overwritten is first copied there
    suffix: str = ""                  # appended to each backup's key


@dataclass(frozen=True, slots=True)
class TransferOptions:
    """Knobs of the engine. Defaults suit a small machine talking to a nearby S3. Sizes are given
    as bytes or as strings such as "16MiB" and read back as bytes; every value is checked when the
    options are built (UsageError)."""

    workers: int = 0                 # worker processes; 0 = one per core (half for a server here: sharing_cores)
    concurrency: int = 64            # transfers in flight per worker (at the start: see max_concurrency)
    # while requests are slow (latency, not CPU, bounds the worker: engine/run/inflight.py) a worker adds
    # transfers up to this many; 0 = AUTO_MAX_CONCURRENCY; equal to concurrency = fixed (what -c N asks)
    max_concurrency: int = 0
    page_size: int = 1000            # keys per listing request
    multipart_threshold: Size = size_field(16 * MiB)
    # the largest part held in a buffer (aws-cli uses 8 MiB parts too); with auto_part_size each
    # object's parts are sized from the object (engine/transfer/link.py), else exactly this.
    # auto_part_size None (the default): auto unless a part_size other than the default is given
    part_size: Size = size_field(DEFAULT_PART_SIZE)
    auto_part_size: bool | None = None
    part_concurrency: int = 8        # parts of one object in flight (at the start: see max_part_concurrency)
    # while the link gives more with each step, an object's parts in flight grow up to this many
    # (engine/transfer/link.py); 0 = AUTO_MAX_PART_CONCURRENCY; equal to part_concurrency = fixed
    max_part_concurrency: int = 0
    max_bytes_in_flight: Size = size_field(256 * MiB)   # whole run, split across workers
    copy_threshold: Size = size_field(5 * 1024 * MiB)   # CopyObject up to here, UploadPartCopy above
    copy_part_size: Size = size_field(512 * MiB)
    copy_concurrency: int = 8        # parts of one server-side copy in flight (no bytes held: memory does not bound it)
    pages_ahead: int = 2             # listed pages a worker holds at most
    split_listing: bool = True       # list ordered sources through many key ranges at once (engine/listing/units.py)
    retries: int = 5                 # further attempts of a failed request (backoff with full jitter)
    request_timeout: float = 60.0    # seconds without an answer before a request is retried
    request_deadline: float = 0.0    # seconds one attempt of a request may take in all (0 = no deadline)
    retry_max_time: float = 600.0    # seconds one request may take over all its attempts (0 = no cap)
    adaptive: bool = True            # lower concurrency on SlowDown (AIMD), raise it again after
    max_rps: float = 0.0             # requests per second, whole run (0 = no cap)
    max_bandwidth: float | str = 0.0  # bytes per second, whole run (0 = no cap)
    # local files written in parts are flushed and dropped from the page cache part by part: under a
    # memory cap (--max-memory sets it) dirty pages count against the same cgroup as the process
    flush_writes: bool = False
    verify: bool = False             # --verify: a HEAD of every object after its write (engine/transfer/verify.py)
    # the properties objects are written with (aws-cli's --metadata, --acl, --copy-props...): engine/transfer/object_props.py
    write_props: WriteProps = field(default_factory=WriteProps)
    checksum_algorithm: str | None = None  # CRC32|CRC32C|CRC64NVME|SHA1|SHA256 on S3 uploads (stores/checksums.py)
    # GLACIER / DEEP_ARCHIVE objects not restored are tried like any other (else skipped and
    # counted: engine/transfer/archived.py)
    force_archived: bool = False

    # what may be replaced at DST (--no-clobber, --update: engine/transfer/guards.py), what a copy or mv
    # only plans (--dry-run; sync's is SyncOptions.dry_run) and when a run stops by itself
    # (--max-transfer bytes, --max-duration seconds; 0: no cap: engine/run/caps.py)
    no_clobber: bool = False         # never replace what DST holds: conditional writes (If-None-Match: *)
    update: bool = False             # skip a key whose DST copy is newer than the source's
    dry_run: bool = False            # copy / mv: list, print what would be copied, estimate; write nothing
    max_transfer: Size = size_field(0)  # bytes: start no new object once this many were copied
    max_duration: float = 0.0        # seconds: start no new object after this long
    # copy / mv --backup-dir URL and --suffix (sync's are SyncOptions'): what DST holds under a key about
    # to be overwritten is first copied there (engine/transfer/backup.py), one HEAD per object to find it
    backup_dir: str | None = None
    backup_suffix: str = ""

    def __post_init__(self) -> None:
        """Sizes may be given as numbers or strings ("8MiB"); anything out of range is a UsageError
        here, when the options are built, never a hang or a traceback later in a worker."""
        from ..errors import UsageError
        from ..config.sizes import parse_size

        for name in _SIZES:
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, parse_size(value, name))
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UsageError(f"{name} must be a size in bytes or a string such as '8MiB', not {value!r}")
            else:
                object.__setattr__(self, name, int(value))
        for name, low, high in _RANGES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low or \
                    (high is not None and value > high):
                bounds = f"{low}..{high}" if high is not None else f">= {low}"
                raise UsageError(f"{name} must be {bounds}, not {value!r}")
        if self.part_size < 5 * MiB:
            raise UsageError("part_size must be at least 5MiB (the S3 minimum)")
        if self.auto_part_size is None:
            object.__setattr__(self, "auto_part_size", self.part_size == DEFAULT_PART_SIZE)
        if self.backup_suffix and self.backup_dir is None:
            raise UsageError("backup_suffix goes with backup_dir")
        if self.checksum_algorithm is not None:
            from ..stores.checksums import parse_algorithm, require

            object.__setattr__(self, "checksum_algorithm", parse_algorithm(self.checksum_algorithm))
            require(self.checksum_algorithm)

    def resolved_workers(self) -> int:
        return self.workers if self.workers > 0 else max(1, os.cpu_count() or 1)

    def concurrency_ceiling(self) -> int:
        """The most transfers a worker may have in flight: `max_concurrency`, or by default
        AUTO_MAX_CONCURRENCY when adaptive (never below `concurrency`)."""
        if self.max_concurrency > 0:
            return max(self.concurrency, self.max_concurrency)
        return max(self.concurrency, AUTO_MAX_CONCURRENCY) if self.adaptive else self.concurrency

    def part_concurrency_ceiling(self) -> int:
        """The most parts of one object in flight: `max_part_concurrency`, or by default
        AUTO_MAX_PART_CONCURRENCY (never below `part_concurrency`)."""
        if self.max_part_concurrency > 0:
            return max(self.part_concurrency, self.max_part_concurrency)
        return max(self.part_concurrency, AUTO_MAX_PART_CONCURRENCY)

    def store_options(self) -> StoreOptions:
        workers = self.resolved_workers()
        connections = self.concurrency_ceiling() + self.part_concurrency_ceiling()
        resilience = ResilienceOptions(retries=self.retries, concurrency=connections, adaptive=self.adaptive,
                                       max_rps=self.max_rps, max_bandwidth=float(self.max_bandwidth), workers=workers,
                                       request_deadline=self.request_deadline, retry_max_time=self.retry_max_time)
        return StoreOptions(max_connections=connections, copy_threshold=self.copy_threshold,
                            copy_part_size=self.copy_part_size, copy_concurrency=self.copy_concurrency,
                            timeout=self.request_timeout,
                            resilience=resilience, flush_writes=self.flush_writes,
                            request_payer=self.write_props.set.request_payer,
                            checksum_algorithm=self.checksum_algorithm)


_SIZES = ("multipart_threshold", "part_size", "max_bytes_in_flight", "copy_threshold", "copy_part_size",
          "max_bandwidth", "max_transfer")
_RANGES = (("workers", 0, 4096), ("concurrency", 1, 100_000), ("max_concurrency", 0, 100_000), ("page_size", 1, 1000),
           ("part_concurrency", 1, 10_000), ("max_part_concurrency", 0, 10_000),
           ("pages_ahead", 1, 1000), ("retries", 0, 1000), ("request_timeout", 0.1, None), ("max_rps", 0, None),
           ("request_deadline", 0, None), ("retry_max_time", 0, None),
           ("max_bandwidth", 0, None), ("max_bytes_in_flight", 1, None), ("multipart_threshold", 0, None),
           ("copy_threshold", 0, None), ("copy_part_size", 5 * MiB, None), ("copy_concurrency", 1, 10_000),
           ("max_transfer", 0, None), ("max_duration", 0, None))


@dataclass(frozen=True, slots=True)
class KeyMap:
    """Source key -> destination key: strip the source prefix, add the destination prefix.

    In single-object mode (`exact_dst` set) the one key maps to exactly that name.
    """

    src_prefix: str
    dst_prefix: str
    exact_dst: str | None = None

    def __call__(self, key: str) -> str:
        if self.exact_dst is not None:
            return self.exact_dst
        return self.dst_prefix + key[len(self.src_prefix):]


@dataclass(frozen=True, slots=True)
class Found:
    """What the planner's request that found one object said of it (`info`), the object itself when
    that request was a GET that read it whole (`first`), what the head of a GET refused for the
    object's length said of its properties and checksum (`head`: a download in parts asks no HEAD
    for them), and what it cost (its retries and requests, by operation and status class), so the
    run's summary counts them as the worker's own."""

    info: ObjectInfo
    first: GetResult | None
    retries: int
    requests: dict[tuple[str, str], int]
    head: ObjectHead | None = None

    @staticmethod
    def of(info: ObjectInfo, first: GetResult | None, store: object, head: ObjectHead | None = None) -> "Found":
        """`store`'s counts so far: the planner opened it for this request alone."""
        stats = getattr(store, "stats", None)
        retries = stats.retries if stats is not None else 0
        return Found(info, first, retries, dict(counted_by(store) or {}), head)


@dataclass(frozen=True, slots=True)
class Plan:
    """A copy from src (listing under src.prefix) to dst, keys mapped by keymap."""

    src: Location
    dst: Location
    keymap: KeyMap
    options: TransferOptions = field(default_factory=TransferOptions)
    single_key: str | None = None   # copy exactly this key (SRC named one object)
    filters: Filters = field(default_factory=Filters)
    sync: "SyncOptions | None" = None  # set for `sync`: compare with DST, maybe delete
    manifest: str | None = None      # keys come from this file, not a listing (engine/listing/manifest.py)
    move: bool = False               # `mv`: each source object is deleted once its copy has landed
    manifest_format: str = "lines"   # lines | csv
    manifest_name: str | None = None  # what the user named it ("-" for stdin): the journal's identity
    report_objects: bool = False     # workers report each object copied or deleted (--json -v)
    backup: Location | None = None   # --backup-dir (sync's, or copy's and mv's), resolved (engine/transfer/backup.py)
    # what the planner's one request said of single_key (size, ETag, time, and the object itself when
    # it was a GET that read it whole): the worker lists and reads nothing again
    found: "Found | None" = field(default=None, repr=False, compare=False)

    @property
    def single_info(self) -> ObjectInfo | None:
        return self.found.info if self.found is not None else None

    @property
    def single_read(self) -> GetResult | None:
        return self.found.first if self.found is not None else None

    @property
    def single_head(self) -> ObjectHead | None:
        return self.found.head if self.found is not None else None


def sharing_cores(options: TransferOptions, src: Location, dst: Location) -> TransferOptions:
    """`options` for a run whose server (either side's) runs on this machine: by default (no
    --workers) half the cores get a worker, and each starts with as many more transfers in flight
    (without -c) as the run would have started with on one worker a core. orchestrate.run asks it
    for a run on this machine's workers, not a cluster's (whose tasks run on other cores).

    Why: each small object costs the server about the CPU it costs the client (versitygw ~150 us a
    GET, s3bulk ~130 us), so with one worker a core the workers and the server take turns on the
    same cores: a second worker process adds its own event loop, connections and hand-offs, not
    speed. 20,000 x 100 B from versitygw on 2 cores (bench/README "Small downloads: a server on the
    same cores"): 2 workers 3.19-3.23 s at 2.77-2.84 s client / 3.12-3.20 s server CPU; 1 worker
    with 128 in flight 2.80-2.92 s at 2.36-2.49 s / 2.77-2.89 s."""
    if options.workers or not (src.served_here or dst.served_here):
        return options
    cores = options.resolved_workers()
    workers = max(1, cores // 2)
    if workers == cores:
        return options
    # with -c N the count is fixed (max_concurrency = N): as asked, per worker
    concurrency = options.concurrency if options.max_concurrency else options.concurrency * cores // workers
    return dataclasses.replace(options, workers=workers, concurrency=concurrency)
