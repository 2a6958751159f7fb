"""`s3bulk check SRC DST`: compare as sync would, changing nothing. It reuses sync's option
groups; it keeps no journal, and moves no bytes, so it has no sizes or network options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from .. import props as P
from ..options import (Concurrency, DstEndpoint, DstNoSign, DstProfile, DstRegion, Endpoint, Exclude, HashCache,
                       Include, JournalOptions, Json, NoSign, PageSize, Params, PathStyle, Profile, Quiet, Region,
                       RunOptions, ShowProgress, SrcEndpoint, SrcNoSign, SrcProfile, SrcRegion, SyncSrc,
                       Verbose, Workers, command, gather)
from ..options import Metrics, MetricsLinger  # --metrics (cli/metrics.py)
from ..options import LogRequests, LogRequestsHeaders  # --log-requests (http/requestlog.py)
from ..options import (ExcludeFrom, ExcludeIfPresent, FilterFrom, IncludeFrom, MaxAge, MaxDepth, MaxSize,  # filters
                       MinAge, MinSize)

if TYPE_CHECKING:
    from ...engine.plan import SyncOptions

O = typer.Option
Checksum = Annotated[bool, O("--checksum", help="compare content (ETag/MD5; local hashes cached), not only sizes")]
OneWay = Annotated[bool, O("--one-way", help="do not report keys only in DST")]
CheckDst = Annotated[Optional[str], typer.Argument(metavar="DST", show_default=False, help="s3://BUCKET[/PREFIX] or a local directory (with --against-report, the one argument is DST)")]
CheckReport = Annotated[Optional[str], O("--report", metavar="FILE", help="write one row per key to FILE (.csv with a header, or .jsonl): same, differs, missing (only in SRC) or extra (only in DST), with source, destination, size and ETag")]
AgainstReport = Annotated[Optional[str], O("--against-report", metavar="FILE", help="check DST against a report of copy, sync or mv (--report) instead of against SRC: every object it says landed must be at DST with its size (and ETag, when both are single-part MD5s); give DST alone")]


@dataclass(frozen=True)
class CheckChoice:
    """What check compares: sync's dry run, by size (or content), both ways unless --one-way."""

    checksum: bool
    one_way: bool
    hash_cache: Optional[str]

    def sync_options(self) -> SyncOptions:
        from ...engine.plan import SyncOptions

        return SyncOptions(delete=not self.one_way, dry_run=True, compare="checksum" if self.checksum else "size-only",
                           hash_cache=self.hash_cache, check=True)


def parameters(
    src: SyncSrc, dst: CheckDst = None,
    checksum: Checksum = False, one_way: OneWay = False, hash_cache: HashCache = None,
    workers: Workers = 0, concurrency: Concurrency = None, page_size: PageSize = 1000,
    include: Include = None, exclude: Exclude = None,
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
    report: CheckReport = None, against_report: AgainstReport = None,
    sse_c_copy_source: P.SseCCopySource = None, sse_c_copy_source_key: P.SseCCopySourceKey = None,  # SSE-C keys
    sse_c: P.SseC = None, sse_c_key: P.SseCKey = None,                                                # to read both
    metrics: Metrics = None, metrics_linger: MetricsLinger = 0.0,
    log_requests: LogRequests = None, log_requests_headers: LogRequestsHeaders = False,
) -> None:
    """Compare SRC with DST as sync would, changing nothing: print each key only in SRC, only in
    DST, or that differs (by size, or with --checksum by content); exit 0 when identical, 1 when not.
    The filters apply to both sides: a key they leave out is compared nowhere (not "only in DST").

    With --against-report FILE, DST alone is checked against a report a copy, sync or mv wrote."""
    # The declaration of check's parameters: their values reach _check, by name.


def _check(params: Params) -> None:
    from ..run import run_transfer

    if params["against_report"] is not None:
        from ..receipt import check_against_report

        return check_against_report(params)
    if params["dst"] is None:
        from ...errors import UsageError

        raise UsageError("check needs SRC and DST (or --against-report FILE and DST)")

    options = gather(CheckChoice, params).sync_options()
    run_transfer("check", RunOptions.of(params).replaced(journal=JournalOptions(no_journal=True)), options)


check = command(parameters, _check)

EXAMPLES = (
    ("Check that a local directory holds what a prefix holds (by size)",
     "s3bulk check s3://bucket/photos/ ./photos/",
     "check        s3://bucket/photos/ -> ./photos/   [identical]\n"
     "same         3 objects, 1.2 MiB\n"
     "differ       0 objects\n"
     "only in SRC  0 objects\n"
     "only in DST  0 objects\n"
     "time         0.56 s\n"
     "s3bulk check: 0 differ, 0 only in SRC, 0 only in DST, 3 the same"),
    ("Compare content too, and ignore keys only in DST",
     "s3bulk check ./photos/ s3://bucket/photos/ --checksum --one-way"),
    ("Compare two buckets, one JSON line per difference",
     "s3bulk check s3://src/data/ s3://dst/data/ --json"),
    ("Keep a row per key (same, differs, missing, extra) in a report",
     "s3bulk check s3://src/data/ s3://dst/data/ --report check.csv"),
    ("Compare only what a sync with the same filters copies",
     "s3bulk check ./site/ s3://bucket/site/ --exclude '*.tmp' --max-size 1GiB"),
    ("Check that everything a copy's report says landed is still at DST, unchanged",
     "s3bulk check --against-report photos.csv s3://backup/photos/"),
)
