"""`s3bulk sync SRC DST`: make DST hold what SRC holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ...errors import UsageError
from .. import props as P
from ..options import (Adaptive, ChecksumAlgorithm, Cluster, Concurrency, CopyConcurrency, CopyPartSize,
                       CopyThreshold, DstEndpoint, DstNoSign, DstProfile, DstRegion, Endpoint, Exclude, FilesFrom, FilesFromFormat, HashCache,
                       Include, Json, JournalDir, JournalPath, MaxBandwidth, MaxBuffer, MaxMemory, MaxRps,
                       NoJournal, NoSign, PageSize, Params, AutoPartSize, PathStyle, Profile, Quiet, Region, Report,
                       RequestDeadline, RequestTimeout, Resume, Retries, RetryMaxTime, RunOptions, ShowProgress,
                       SrcEndpoint, SrcNoSign, SrcProfile, SrcRegion, SyncDst, SyncSrc, Threshold, Verbose,
                       Workers, command, gather)
from ..options import (ExcludeFrom, ExcludeIfPresent, FilterFrom, IncludeFrom, MaxAge, MaxDepth, MaxSize,  # filters
                       MinAge, MinSize)
from ..options import Metrics, MetricsLinger  # --metrics (cli/metrics.py)
from ..options import ForceArchived

from ..options import MaxDuration, MaxTransfer, NoClobber, Update  # GuardOptions (cli/groups.py)
from ..options import Verify  # --verify (engine/transfer/verify.py)
from ..options import BackupDir, MaxDelete, MaxDeleteSize, Suffix  # guarded deletes (engine/run/deletes.py)
from ..options import LogRequests, LogRequestsHeaders  # --log-requests (http/requestlog.py)

if TYPE_CHECKING:
    from ...engine.plan import SyncOptions
    from ...engine.watch.watcher import WatchOptions

O = typer.Option
Delete = Annotated[bool, O("--delete", help="remove DST keys that SRC does not have (not those excluded)")]
DryRun = Annotated[bool, O("--dry-run", help="print what would be copied and deleted, and the requests and bytes it would take; change nothing")]
SizeOnly = Annotated[bool, O("--size-only", help="copy only when sizes differ")]
ExactTimestamps = Annotated[bool, O("--exact-timestamps", help="copy when modification times differ at all (to local disk; to S3 as the default)")]
Checksum = Annotated[bool, O("--checksum", help="compare content (ETag/MD5; local hashes cached) instead of times")]
DeleteDuring = Annotated[bool, O("--delete-during", help="with --delete: delete each unit's extra DST keys as soon as its copies are done (none where one failed), not at the end of the run once every copy succeeded (the default)")]
AllowEmptySource = Annotated[bool, O("--allow-empty-source", help="with --delete: let a SRC that lists nothing empty DST (else refused, exit 2: an unmounted directory looks exactly like this)")]
Watch = Annotated[bool, O("--watch", help="after the sync, keep DST equal to SRC as SRC changes, until SIGINT or SIGTERM (exit 0): a local SRC from filesystem events, an S3 SRC from --watch-queue or by listing again every --watch-interval")]
WatchQueue = Annotated[Optional[str], O("--watch-queue", metavar="URL", help="with --watch: the SQS queue receiving SRC's bucket's event notifications (S3 or EventBridge format); its endpoint follows SRC's S3 settings")]
WatchInterval = Annotated[str, O("--watch-interval", metavar="DURATION", help="with --watch, a SRC without events (S3 without --watch-queue): sync in full this often (90, 30s, 5m)")]
ReconcileEvery = Annotated[str, O("--reconcile-every", metavar="DURATION", help="with --watch: a full sync this often, catching any change the events missed (6h, 30m; 0: never)")]


@dataclass(frozen=True)
class WatchChoice:
    """--watch and how it learns of changes."""

    watch: bool = False
    watch_queue: Optional[str] = None
    watch_interval: str = "60s"
    reconcile_every: str = "6h"

    def watch_options(self) -> Optional[WatchOptions]:
        """The watcher's options, or None without --watch (a UsageError for its options alone)."""
        from ...config.sizes import parse_duration
        from ...engine.watch.watcher import WatchOptions

        if not self.watch:
            if self.watch_queue is not None or self.watch_interval != "60s" or self.reconcile_every != "6h":
                raise UsageError("--watch-queue, --watch-interval and --reconcile-every go with --watch")
            return None
        if self.watch_queue is not None and not self.watch_queue.startswith(("http://", "https://")):
            raise UsageError(f"invalid --watch-queue {self.watch_queue!r}: expected the queue's URL, https://...")
        return WatchOptions(queue_url=self.watch_queue,
                            interval=parse_duration(self.watch_interval, "--watch-interval"),
                            reconcile_every=parse_duration(self.reconcile_every, "--reconcile-every"))


@dataclass(frozen=True)
class SyncChoice:
    """What sync compares and whether it deletes or only prints."""

    delete: bool
    dry_run: bool
    size_only: bool
    exact_timestamps: bool
    checksum: bool
    hash_cache: Optional[str]
    delete_during: bool = False
    allow_empty_source: bool = False
    max_delete: Optional[str] = None
    max_delete_size: Optional[str] = None
    backup_dir: Optional[str] = None
    suffix: str = ""

    def sync_options(self) -> SyncOptions:
        from ...engine.plan import Compare, SyncOptions

        if sum((self.size_only, self.exact_timestamps, self.checksum)) > 1:
            raise UsageError("choose one of --size-only, --exact-timestamps, --checksum")
        compare: Compare = "size-only" if self.size_only else "exact-timestamps" if self.exact_timestamps else \
            "checksum" if self.checksum else "default"
        from ...config.sizes import parse_size
        from ...config.delete_caps import parse_max_delete

        guards = (self.delete_during, self.allow_empty_source, self.max_delete, self.max_delete_size)
        if not self.delete and any(g not in (False, None) for g in guards):
            raise UsageError("--delete-during, --allow-empty-source, --max-delete and --max-delete-size go with --delete")
        if self.delete_during and (self.max_delete is not None or self.max_delete_size is not None):
            raise UsageError("--max-delete and --max-delete-size need the deletes at the end of the run "
                             "(the default), not --delete-during")
        if self.suffix and not self.backup_dir:
            raise UsageError("--suffix goes with --backup-dir")
        return SyncOptions(delete=self.delete, dry_run=self.dry_run, compare=compare, hash_cache=self.hash_cache,
                           delete_during=self.delete_during, allow_empty_source=self.allow_empty_source,
                           max_delete=parse_max_delete(self.max_delete),
                           max_delete_size=None if self.max_delete_size is None else
                           parse_size(self.max_delete_size, "--max-delete-size"),
                           backup_dir=self.backup_dir, suffix=self.suffix)


def parameters(
    src: SyncSrc, dst: SyncDst,
    delete: Delete = False, dry_run: DryRun = False, size_only: SizeOnly = False,
    delete_during: DeleteDuring = False, allow_empty_source: AllowEmptySource = False,
    max_delete: MaxDelete = None, max_delete_size: MaxDeleteSize = None, backup_dir: BackupDir = None,
    suffix: Suffix = "",
    exact_timestamps: ExactTimestamps = False, checksum: Checksum = False, hash_cache: HashCache = None,
    watch: Watch = False, watch_queue: WatchQueue = None, watch_interval: WatchInterval = "60s",
    reconcile_every: ReconcileEvery = "6h",
    workers: Workers = 0, concurrency: Concurrency = None, part_size: AutoPartSize = "auto",
    multipart_threshold: Threshold = "16MiB", max_buffer: MaxBuffer = "256MiB", page_size: PageSize = 1000,
    max_memory: MaxMemory = None, include: Include = None, exclude: Exclude = None,
    include_from: IncludeFrom = None, exclude_from: ExcludeFrom = None, filter_from: FilterFrom = None,
    max_depth: MaxDepth = None, exclude_if_present: ExcludeIfPresent = None,
    min_size: MinSize = None, max_size: MaxSize = None, min_age: MinAge = None, max_age: MaxAge = None,
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
    src_endpoint_url: SrcEndpoint = None, src_profile: SrcProfile = None, src_region: SrcRegion = None,
    src_no_sign_request: SrcNoSign = None,
    dst_endpoint_url: DstEndpoint = None, dst_profile: DstProfile = None, dst_region: DstRegion = None,
    dst_no_sign_request: DstNoSign = None,
    json_out: Json = False, quiet: Quiet = False, verbose: Verbose = False, progress: ShowProgress = None,
    report: Report = None,
    copy_threshold: CopyThreshold = "5GiB", copy_part_size: CopyPartSize = "512MiB",
    copy_concurrency: CopyConcurrency = 8,
    resume: Resume = False, journal: JournalPath = None, journal_dir: JournalDir = None,
    no_journal: NoJournal = False,
    retries: Retries = 5, request_timeout: RequestTimeout = 60.0, request_deadline: RequestDeadline = 0.0,
    retry_max_time: RetryMaxTime = 600.0, max_rps: MaxRps = 0.0,
    max_bandwidth: MaxBandwidth = "0", adaptive: Adaptive = True,
    files_from: FilesFrom = None, files_from_format: FilesFromFormat = "auto", cluster: Cluster = None,
    content_type: P.ContentType = None, no_guess_mime_type: P.NoGuess = False, metadata: P.Metadata = None,
    cache_control: P.CacheControl = None, content_disposition: P.ContentDisposition = None,
    content_encoding: P.ContentEncoding = None, content_language: P.ContentLanguage = None,
    expires: P.Expires = None, storage_class: P.StorageClass = None, acl: P.Acl = None, tagging: P.Tagging = None,
    sse: P.Sse = None, sse_kms_key_id: P.SseKmsKeyId = None, sse_c: P.SseC = None, sse_c_key: P.SseCKey = None,
    sse_c_copy_source: P.SseCCopySource = None, sse_c_copy_source_key: P.SseCCopySourceKey = None,
    request_payer: P.RequestPayer = None, copy_props: P.CopyProps = "default",
    metadata_directive: P.MetadataDirective = None, preserve_xattrs: P.PreserveXattrs = False,
    checksum_algorithm: ChecksumAlgorithm = None, verify: Verify = False,
    force_archived: ForceArchived = False,  # archived objects (engine/transfer/archived.py)
    metrics: Metrics = None, metrics_linger: MetricsLinger = 0.0,
    no_clobber: NoClobber = False, update: Update = False,
    max_transfer: MaxTransfer = None, max_duration: MaxDuration = None,
    log_requests: LogRequests = None, log_requests_headers: LogRequestsHeaders = False,
) -> None:
    """Make DST hold what SRC holds: copy what is missing or different, optionally delete the rest.

    Default comparison, as aws s3 sync: sizes differ, or SRC is newer than DST."""
    # The declaration of sync's parameters: their values reach _sync, by name.


def _sync(params: Params) -> None:
    from ..run import run_transfer

    options = gather(SyncChoice, params).sync_options()  # checked before anything else
    watching = gather(WatchChoice, params).watch_options()
    if watching is not None:
        from ..watch import run_watch

        if params.get("max_transfer") is not None or params.get("max_duration") is not None:
            raise UsageError("--max-transfer and --max-duration go with a sync that ends, not with --watch")

        run_watch(RunOptions.of(params), options, watching)
        return
    run_transfer("sync", RunOptions.of(params), options)


sync = command(parameters, _sync)

EXAMPLES = (
    ("Make a local directory hold what a prefix holds",
     "s3bulk sync s3://bucket/site/ ./site/"),
    ("Mirror a local directory to a bucket, deleting what it no longer has",
     "s3bulk sync ./site/ s3://bucket/site/ --delete"),
    ("Print what a mirror would copy and delete, and the requests it would send, changing nothing",
     "s3bulk sync ./site/ s3://bucket/site/ --delete --dry-run",
     "(dryrun) copy: /home/me/site/new.html -> s3://bucket/site/new.html\n"
     "(dryrun) delete: s3://bucket/site/about.html\n"
     "sync          ./site/ -> s3://bucket/site/   [done]\n"
     "would copy    1 object, 100 B\n"
     "equal         1 object, 8.8 KiB (skipped)\n"
     "would delete  1 object\n"
     "would send    4 requests (DELETE 1, HEAD 1, LIST 1, PUT 1), moving 100 B\n"
     "time          0.48 s"),
    ("A guarded mirror: delete nothing if over 1% of DST would go; keep what is deleted or overwritten",
     "s3bulk sync ./site/ s3://b/s/ --delete --max-delete 1% --backup-dir s3://b/old/"),
    ("Compare content (ETag/MD5) instead of sizes and times",
     "s3bulk sync s3://bucket/site/ s3://mirror/site/ --checksum"),
    ("Sync only the .html objects",
     "s3bulk sync ./site/ s3://bucket/site/ --exclude '*' --include '*.html'"),
    ("Sync a home directory by rclone-style rules ('+ GLOB' / '- GLOB', first match wins), skipping directories marked .nobackup",
     "s3bulk sync ~/ s3://b/home/ --filter-from rules --exclude-if-present .nobackup"),
    ("A row per object: copied, skipped (unchanged), deleted or failed, as JSON Lines",
     "s3bulk sync ./site/ s3://bucket/site/ --delete --report sync.jsonl"),
    ("Serve Prometheus metrics at http://127.0.0.1:9100/metrics while the sync runs",
     "s3bulk sync s3://bucket/data/ s3://mirror/data/ --metrics :9100"),
    ("Keep a bucket equal to a local directory as files change, until Ctrl-C",
     "s3bulk sync ./site/ s3://bucket/site/ --delete --watch"),
    ("Bring DST up to date but keep what changed there since (a DST copy newer than SRC's)",
     "s3bulk sync s3://bucket/site/ ./site/ --update"),
    ("Mirror a bucket to disk from its event notifications (an SQS queue)",
     "s3bulk sync s3://bucket/d/ ./d/ --delete --watch --watch-queue \"$QUEUE_URL\""),
)
