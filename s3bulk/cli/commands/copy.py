"""`s3bulk copy SRC DST`: copy every object under SRC to DST (or one object, or a pipe)."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import props as P
from ..options import (Adaptive, AllVersions, AsOf, ChecksumAlgorithm, Cluster, Concurrency, CopyConcurrency,
                       CopyPartSize, CopyThreshold, DstEndpoint, DstNoSign, DstProfile, DstRegion, Endpoint, Exclude,
                       ExpectedSize, FilesFrom, FilesFromFormat, Include, IncludeDeleteMarkers, Json, JournalDir,
                       JournalPath, MaxBandwidth, MaxBuffer, MaxMemory, MaxRps, NoJournal, NoSign, PageSize,
                       Params, AutoPartSize, PathStyle, Profile, Quiet, Region, Report, RequestDeadline, RequestTimeout,
                       Resume, Retries, RetryMaxTime, RunOptions, ShowProgress, SrcEndpoint, SrcNoSign, SrcProfile,
                       SrcRegion, Threshold, Verbose, Verify, VersionId, Workers, command)
from ..options import (ExcludeFrom, ExcludeIfPresent, FilterFrom, IncludeFrom, MaxAge, MaxDepth, MaxSize,  # filters
                       MinAge, MinSize)
from ..options import Metrics, MetricsLinger  # --metrics (cli/metrics.py)
from ..options import ForceArchived

from ..options import MaxDuration, MaxTransfer, NoClobber, Update  # GuardOptions (cli/groups.py)
from ..options import CopyDryRun
from ..options import CopyBackupDir, CopySuffix  # --backup-dir: overwrites kept (engine/transfer/backup.py)
from ..options import LogRequests, LogRequestsHeaders  # --log-requests (http/requestlog.py)

CopySrc = Annotated[str, typer.Argument(metavar="SRC", help="s3://BUCKET[/PREFIX], s3://BUCKET/KEY, http://HOST:PORT/, or a local directory or file")]
CopyDst = Annotated[str, typer.Argument(metavar="DST", help="s3://BUCKET[/PREFIX] or a local directory (or file name for one object)")]


def parameters(
    src: CopySrc, dst: CopyDst,
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
    expected_size: ExpectedSize = None,
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
    version_id: VersionId = None, all_versions: AllVersions = False, include_delete_markers: IncludeDeleteMarkers = False,
    as_of: AsOf = None,
    metrics: Metrics = None, metrics_linger: MetricsLinger = 0.0,
    no_clobber: NoClobber = False, update: Update = False, copy_dry_run: CopyDryRun = False,
    max_transfer: MaxTransfer = None, max_duration: MaxDuration = None,
    copy_backup_dir: CopyBackupDir = None, copy_suffix: CopySuffix = "",
    log_requests: LogRequests = None, log_requests_headers: LogRequestsHeaders = False,
) -> None:
    """Copy every object under SRC to DST, mirroring the key layout (or one object).

    SRC '-' reads stdin into one object; DST '-' writes one object to stdout (see `s3bulk cat`)."""
    # The declaration of copy's parameters (mv's too): their values reach _copy, by name.


def _copy(params: Params) -> None:
    from ..run import run_transfer

    run_transfer("copy", RunOptions.of(params))


copy = command(parameters, _copy)

EXAMPLES = (
    ("Copy every object under a prefix to a local directory",
     "s3bulk copy s3://bucket/photos/ ./photos/"),
    ("Upload a local directory under a prefix",
     "s3bulk copy ./photos/ s3://bucket/photos/"),
    ("Copy one object to a local file",
     "s3bulk copy s3://bucket/photos/cat.jpg ./cat.jpg"),
    ("Copy from another S3-compatible store to AWS",
     "s3bulk copy s3://src/data/ s3://dst/data/ --src-endpoint-url http://minio:9000"),
    ("Copy only the .jpg objects, in at most 64 MiB of memory",
     "s3bulk copy s3://b/photos/ jpg/ --exclude '*' --include '*.jpg' --max-memory 64M"),
    ("Copy only the objects of at most 100 MB changed in the last week",
     "s3bulk copy s3://bucket/logs/ ./logs/ --max-size 100M --max-age 7d"),
    ("Continue an interrupted copy from its journal",
     "s3bulk copy s3://bucket/photos/ ./photos/ --resume"),
    ("Keep a row per object (outcome, size, ETag, error); a --resume continues the same report",
     "s3bulk copy s3://bucket/photos/ s3://backup/photos/ --report photos.csv"),
    ("Upload stdin as one object",
     "tar c ./photos | s3bulk copy - s3://bucket/photos.tar"),
    ("Copy the keys a file names, one per line",
     "s3bulk copy s3://bucket/ ./some/ --files-from keys.txt"),
    ("Copy every version under a prefix, oldest first, to a versioned bucket",
     "s3bulk copy s3://bucket/docs/ s3://backup/docs/ --all-versions"),
    ("Copy each key as it was at a moment in the past",
     "s3bulk copy s3://bucket/docs/ ./docs/ --as-of 2026-11-01T00:00:00Z"),
    ("Let Prometheus on another machine scrape the copy's metrics, the final counts included",
     "s3bulk copy s3://bucket/logs/ ./logs/ --metrics 0.0.0.0:9100 --metrics-linger 60"),
    ("Never replace an object DST already has, even one written while the copy runs",
     "s3bulk copy ./photos/ s3://bucket/photos/ --no-clobber"),
    ("Print what a copy would do and the requests and bytes it would take, changing nothing",
     "s3bulk copy s3://bucket/photos/ s3://backup/photos/ --dry-run"),
    ("Copy at most 100 GiB (exit 8) or for 8 hours (exit 10); the same with --resume goes on",
     "s3bulk copy s3://bucket/d/ s3://bak/d/ --max-transfer 100GiB --max-duration 8h"),
)
