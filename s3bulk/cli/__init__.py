"""The command line: parse options, build a plan, run the engine, render its events.

Exit codes: 0 every object copied; 1 some objects failed; 2 bad usage (URL,
option); 3 the run could not start or had to stop (bucket missing, credentials,
endpoint down, a worker died); 130 interrupted.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import shlex
import sys
from datetime import datetime, timezone
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperArgument, TyperCommand

from ..errors import S3BulkError, UsageError
from ..urls import S3Options
from ..sizes import parse_size
from . import props as P

app = typer.Typer(add_completion=True, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]},
                  help="Copy and mirror very large numbers of objects between S3-compatible stores "
                       "and local disk, fast and in bounded memory.")



class _Command(TyperCommand):
    """Arguments shown as plain `SRC DST` in the usage line: typer writes `{SRC}`, which reads like
    syntax to type."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument):
                def plain(ctx: Any, *, usage: bool = False, _make: Any = param.make_metavar) -> str:
                    var = str(_make(ctx=ctx, usage=usage))
                    return var[1:-1] if var.startswith("{") and var.endswith("}") else var
                param.make_metavar = plain  # type: ignore[method-assign]


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"s3bulk {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", help="print the version and exit", is_eager=True,
                                                callback=_version)] = False) -> None:
    """Copy and mirror very large numbers of objects between S3-compatible stores and local disk,
    fast and in bounded memory."""


EXIT_FAILED, EXIT_USAGE, EXIT_FATAL, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 2, 3, 130, 143

_S3_HELP = "S3 connection (both sides unless a --src-/--dst- option overrides it)"


def _s3_options(endpoint_url: Optional[str], profile: Optional[str], region: Optional[str],
                no_sign_request: bool, path_style: bool) -> S3Options:
    if endpoint_url is not None and not endpoint_url.startswith(("http://", "https://")):
        raise UsageError(f"invalid --endpoint-url {endpoint_url!r}: expected http://HOST[:PORT] or https://...")
    return S3Options(endpoint_url=endpoint_url or None, profile=profile or None, region=region or None,
                     no_sign_request=no_sign_request, path_style=path_style)


# Options shared by copy and sync, declared once.
O = typer.Option
Workers = Annotated[int, O("--workers", "-w", metavar="N", help="worker processes (0 = one per core)", min=0)]
Concurrency = Annotated[Optional[int], O("--concurrency", "-c", metavar="N", min=1, show_default=False,
                                          help="transfers in flight per worker, exactly N [default: 64, raised up to 512 while requests are slow and the CPU is not]")]
PartSize = Annotated[str, O(metavar="SIZE", help="part size for multipart transfers (raised to fit 10,000 parts)")]
Threshold = Annotated[str, O(metavar="SIZE", help="objects above this move in parts")]
MaxBuffer = Annotated[str, O("--max-buffer", metavar="SIZE", help="object bytes held in memory at once, all workers")]
PageSize = Annotated[int, O(metavar="N", help="keys per listing request", min=1, max=1000)]
MaxMemory = Annotated[Optional[str], O("--max-memory", metavar="SIZE", help="stay under this much memory in all (e.g. 128MiB); workers, transfers and part sizes follow from it")]
Include = Annotated[Optional[list[str]], O("--include", metavar="GLOB", help="glob of keys to include (with --exclude: the last match wins)")]
Exclude = Annotated[Optional[list[str]], O("--exclude", metavar="GLOB", help="glob of keys to leave out (matched against the key relative to SRC/DST)")]
Endpoint = Annotated[Optional[str], O(metavar="URL", help="S3 endpoint URL (default: AWS, or AWS_ENDPOINT_URL[_S3])", rich_help_panel=_S3_HELP)]
Profile = Annotated[Optional[str], O(metavar="NAME", help="AWS profile from the config/credentials files", rich_help_panel=_S3_HELP)]
Region = Annotated[Optional[str], O(metavar="REGION", help="AWS region", rich_help_panel=_S3_HELP)]
NoSign = Annotated[bool, O("--no-sign-request", help="send unsigned requests (public buckets)", rich_help_panel=_S3_HELP)]
PathStyle = Annotated[bool, O("--path-style", help="path-style addressing (http://host/bucket/key)", rich_help_panel=_S3_HELP)]
SrcEndpoint = Annotated[Optional[str], O(metavar="URL", help="endpoint URL for SRC only", rich_help_panel=_S3_HELP)]
SrcProfile = Annotated[Optional[str], O(metavar="NAME", help="profile for SRC only", rich_help_panel=_S3_HELP)]
SrcRegion = Annotated[Optional[str], O(metavar="REGION", help="region for SRC only", rich_help_panel=_S3_HELP)]
SrcNoSign = Annotated[Optional[bool], O("--src-no-sign-request/--src-sign-request", help="unsigned requests for SRC only", rich_help_panel=_S3_HELP)]
DstEndpoint = Annotated[Optional[str], O(metavar="URL", help="endpoint URL for DST only", rich_help_panel=_S3_HELP)]
DstProfile = Annotated[Optional[str], O(metavar="NAME", help="profile for DST only", rich_help_panel=_S3_HELP)]
DstRegion = Annotated[Optional[str], O(metavar="REGION", help="region for DST only", rich_help_panel=_S3_HELP)]
DstNoSign = Annotated[Optional[bool], O("--dst-no-sign-request/--dst-sign-request", help="unsigned requests for DST only", rich_help_panel=_S3_HELP)]
Json = Annotated[bool, O("--json", help="newline-delimited JSON events and summary on stdout")]
Quiet = Annotated[bool, O("--quiet", "-q", help="no progress and no summary; errors only")]
Verbose = Annotated[bool, O("--verbose", "-v", help="a line per object copied or deleted (with --json: `copied` and `deleted` events), and CPU time and peak memory in the summary (always in --json)")]
ShowProgress = Annotated[Optional[bool], O("--progress/--no-progress", help="live display (default: when stderr is a terminal)")]
CopyThreshold = Annotated[str, O(hidden=True, help="server-side: CopyObject up to here, UploadPartCopy above")]
Resume = Annotated[bool, O("--resume", help="continue an interrupted run from its journal: skip what it finished, continue or abort its open multipart uploads")]
JournalPath = Annotated[Optional[str], O("--journal", metavar="PATH", help="the resume journal file (default <journal dir>/<hash of SRC, DST, command>.sqlite); removed when a run completes")]
JournalDir = Annotated[Optional[str], O("--journal-dir", metavar="DIR", help="keep the default journals in DIR instead of $XDG_STATE_HOME/s3bulk/journals; journals there untouched for 30 days are removed")]
NoJournal = Annotated[bool, O("--no-journal", help="keep no resume journal")]
CopyPartSize = Annotated[str, O(hidden=True)]
FilesFrom = Annotated[Optional[str], O("--files-from", metavar="FILE", help="copy the keys this file names (one per line, relative to SRC; '-' reads stdin; an S3 Inventory manifest.json, local or s3://) instead of listing SRC; keys SRC lacks are reported and the run exits 1")]
Cluster = Annotated[Optional[str], O("--cluster", metavar="ADDRESS", help="run the work units as tasks on a Dask cluster: its scheduler (tcp://host:8786) or local[:N] (N worker processes here); needs pip install 's3bulk[dask]'")]
FilesFromFormat = Annotated[str, O("--files-from-format", metavar="FORMAT", help="auto (csv when the name ends .csv, inventory for manifest.json), lines, csv (S3 Batch Operations rows bucket,key with URL-encoded keys), or inventory (an S3 Inventory manifest.json, CSV format)")]
_NET_HELP = "Retries and rate"
Retries = Annotated[int, O("--retries", metavar="N", help="further attempts of a failed request (throttling, 5xx, dropped connection, timeout, short body), with exponential backoff and full jitter", min=0, rich_help_panel=_NET_HELP)]
RequestTimeout = Annotated[float, O("--request-timeout", metavar="SECONDS", help="seconds of silence (no byte received, no request byte taken) before a request is retried; a transfer that keeps moving is never cut off", min=0.1, rich_help_panel=_NET_HELP)]
RequestDeadline = Annotated[float, O("--request-deadline", metavar="SECONDS", help="seconds one attempt of a request may take from start to whole answer, however steadily it moves, before it is retried (0 = no deadline, the default)", min=0, rich_help_panel=_NET_HELP)]
RetryMaxTime = Annotated[float, O("--retry-max-time", metavar="SECONDS", help="seconds one request may take over all its attempts and waits: no retry starts after that, the object fails saying so (0 = no cap)", min=0, rich_help_panel=_NET_HELP)]
MaxRps = Annotated[float, O("--max-rps", metavar="N", help="requests per second, whole run (0 = no cap)", min=0, rich_help_panel=_NET_HELP)]
MaxBandwidth = Annotated[str, O("--max-bandwidth", metavar="SIZE", help="bytes per second, whole run, e.g. 50MiB (0 = no cap)", rich_help_panel=_NET_HELP)]
ChecksumAlgorithm = Annotated[Optional[str], O("--checksum-algorithm", metavar="ALGORITHM", help="S3 uploads carry this checksum, checked by the server on every PUT and part and kept with the object: CRC32, CRC32C, CRC64NVME (full-object), SHA1 or SHA256 (CRC32C/CRC64NVME need pip install 's3bulk[crc]')")]
_VERSIONS_HELP = "Versions"
VersionId = Annotated[Optional[str], O("--version-id", metavar="ID", help="copy this version of the one key SRC names", rich_help_panel=_VERSIONS_HELP)]
AllVersions = Annotated[bool, O("--all-versions", help="copy every version under SRC, oldest first per key, so a versioned DST gets the same history", rich_help_panel=_VERSIONS_HELP)]
AsOf = Annotated[Optional[str], O("--as-of", metavar="TIME", help="copy each key under SRC as it was at TIME (ISO 8601, UTC unless a zone is given, or epoch seconds): its newest version not after it", rich_help_panel=_VERSIONS_HELP)]
IncludeDeleteMarkers = Annotated[bool, O("--include-delete-markers", help="with --all-versions: replay delete markers as deletes at DST", rich_help_panel=_VERSIONS_HELP)]
Adaptive = Annotated[bool, O("--adaptive/--no-adaptive", help="halve requests in flight on SlowDown, raise them again as answers succeed (AIMD, shared by all workers)", rich_help_panel=_NET_HELP)]
ExpectedSize = Annotated[Optional[str], O("--expected-size", metavar="SIZE", help="with SRC '-': about how big the stream from stdin will be, so the part size lets 10,000 parts hold it")]


@app.command(cls=_Command)
def copy(
    src: str = typer.Argument(..., metavar="SRC", help="s3://BUCKET[/PREFIX], s3://BUCKET/KEY, http://HOST:PORT/, or a local directory or file"),
    dst: str = typer.Argument(..., metavar="DST", help="s3://BUCKET[/PREFIX] or a local directory (or file name for one object)"),
    workers: Workers = 0, concurrency: Concurrency = None, part_size: PartSize = "8MiB",
    multipart_threshold: Threshold = "16MiB", max_buffer: MaxBuffer = "256MiB", page_size: PageSize = 1000,
    max_memory: MaxMemory = None, include: Include = None, exclude: Exclude = None,
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
    src_endpoint_url: SrcEndpoint = None, src_profile: SrcProfile = None, src_region: SrcRegion = None,
    src_no_sign_request: SrcNoSign = None,
    dst_endpoint_url: DstEndpoint = None, dst_profile: DstProfile = None, dst_region: DstRegion = None,
    dst_no_sign_request: DstNoSign = None,
    json_out: Json = False, quiet: Quiet = False, verbose: Verbose = False, progress: ShowProgress = None,
    copy_threshold: CopyThreshold = "5GiB", copy_part_size: CopyPartSize = "512MiB",
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
    checksum_algorithm: ChecksumAlgorithm = None,
    version_id: VersionId = None, all_versions: AllVersions = False, include_delete_markers: IncludeDeleteMarkers = False,
    as_of: AsOf = None,
) -> None:
    """Copy every object under SRC to DST, mirroring the key layout (or one object).

    SRC '-' reads stdin into one object; DST '-' writes one object to stdout (see `s3bulk cat`)."""
    _execute("copy", **locals())


def _mv(**kwargs: Any) -> None:
    _execute("mv", move=True, **kwargs)


# `mv` takes exactly copy's arguments (typer reads them from the signature)
_mv.__signature__ = inspect.signature(copy, eval_str=True)  # type: ignore[attr-defined]
app.command("mv", cls=_Command, help="Move SRC to DST: copy as `copy` does, deleting each source object once its "
            "copy has landed (a failed or interrupted copy never deletes its source).")(_mv)


@app.command(cls=_Command)
def sync(
    src: str = typer.Argument(..., metavar="SRC", help="s3://BUCKET[/PREFIX], http://HOST:PORT/, or a local directory"),
    dst: str = typer.Argument(..., metavar="DST", help="s3://BUCKET[/PREFIX] or a local directory"),
    delete: bool = typer.Option(False, "--delete", help="remove DST keys that SRC does not have (not those excluded)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what would be copied and deleted; change nothing"),
    size_only: bool = typer.Option(False, "--size-only", help="copy only when sizes differ"),
    exact_timestamps: bool = typer.Option(False, "--exact-timestamps", help="copy when modification times differ at all (to local disk; to S3 as the default)"),
    checksum: bool = typer.Option(False, "--checksum", help="compare content (ETag/MD5; local hashes cached) instead of times"),
    hash_cache: Optional[str] = typer.Option(None, metavar="FILE", help="file for cached local hashes (default ~/.cache/s3bulk/hashes.sqlite)"),
    workers: Workers = 0, concurrency: Concurrency = None, part_size: PartSize = "8MiB",
    multipart_threshold: Threshold = "16MiB", max_buffer: MaxBuffer = "256MiB", page_size: PageSize = 1000,
    max_memory: MaxMemory = None, include: Include = None, exclude: Exclude = None,
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
    src_endpoint_url: SrcEndpoint = None, src_profile: SrcProfile = None, src_region: SrcRegion = None,
    src_no_sign_request: SrcNoSign = None,
    dst_endpoint_url: DstEndpoint = None, dst_profile: DstProfile = None, dst_region: DstRegion = None,
    dst_no_sign_request: DstNoSign = None,
    json_out: Json = False, quiet: Quiet = False, verbose: Verbose = False, progress: ShowProgress = None,
    copy_threshold: CopyThreshold = "5GiB", copy_part_size: CopyPartSize = "512MiB",
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
    checksum_algorithm: ChecksumAlgorithm = None,
) -> None:
    """Make DST hold what SRC holds: copy what is missing or different, optionally delete the rest.

    Default comparison, as aws s3 sync: sizes differ, or SRC is newer than DST."""
    common = dict(locals())
    for name in ("delete", "dry_run", "size_only", "exact_timestamps", "checksum", "hash_cache"):
        del common[name]
    from ..engine.sync import Compare, SyncOptions

    if sum((size_only, exact_timestamps, checksum)) > 1:
        raise UsageError("choose one of --size-only, --exact-timestamps, --checksum")
    compare: Compare = "size-only" if size_only else "exact-timestamps" if exact_timestamps else \
        "checksum" if checksum else "default"
    options = SyncOptions(delete=delete, dry_run=dry_run, compare=compare, hash_cache=hash_cache)
    _execute("sync", sync_options=options, **common)


@app.command(cls=_Command)
def check(
    src: str = typer.Argument(..., metavar="SRC", help="s3://BUCKET[/PREFIX], http://HOST:PORT/, or a local directory"),
    dst: str = typer.Argument(..., metavar="DST", help="s3://BUCKET[/PREFIX] or a local directory"),
    checksum: bool = typer.Option(False, "--checksum", help="compare content (ETag/MD5; local hashes cached), not only sizes"),
    one_way: bool = typer.Option(False, "--one-way", help="do not report keys only in DST"),
    hash_cache: Optional[str] = typer.Option(None, metavar="FILE", help="file for cached local hashes (default ~/.cache/s3bulk/hashes.sqlite)"),
    workers: Workers = 0, concurrency: Concurrency = None, page_size: PageSize = 1000,
    include: Include = None, exclude: Exclude = None,
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
    src_endpoint_url: SrcEndpoint = None, src_profile: SrcProfile = None, src_region: SrcRegion = None,
    src_no_sign_request: SrcNoSign = None,
    dst_endpoint_url: DstEndpoint = None, dst_profile: DstProfile = None, dst_region: DstRegion = None,
    dst_no_sign_request: DstNoSign = None,
    json_out: Json = False, quiet: Quiet = False, verbose: Verbose = False, progress: ShowProgress = None,
    sse_c_copy_source: P.SseCCopySource = None, sse_c_copy_source_key: P.SseCCopySourceKey = None,
    sse_c: P.SseC = None, sse_c_key: P.SseCKey = None,
) -> None:
    """Compare SRC with DST as sync would, changing nothing: print each key only in SRC, only in
    DST, or that differs (by size, or with --checksum by content); exit 0 when identical, 1 when not."""
    from ..engine.sync import SyncOptions

    options = SyncOptions(delete=not one_way, dry_run=True, compare="checksum" if checksum else "size-only",
                          hash_cache=hash_cache, check=True)
    _execute("check", src=src, dst=dst, workers=workers, concurrency=concurrency, part_size="8MiB",
             multipart_threshold="16MiB", max_buffer="256MiB", page_size=page_size, max_memory=None,
             include=include, exclude=exclude, endpoint_url=endpoint_url, profile=profile, region=region,
             no_sign_request=no_sign_request, path_style=path_style, src_endpoint_url=src_endpoint_url,
             src_profile=src_profile, src_region=src_region, src_no_sign_request=src_no_sign_request,
             dst_endpoint_url=dst_endpoint_url, dst_profile=dst_profile, dst_region=dst_region,
             dst_no_sign_request=dst_no_sign_request, json_out=json_out, quiet=quiet, verbose=verbose,
             progress=progress, copy_threshold="5GiB", copy_part_size="512MiB", no_journal=True,
             sync_options=options, sse_c_copy_source=sse_c_copy_source,  # SSE-C keys to read SRC and DST
             sse_c_copy_source_key=sse_c_copy_source_key, sse_c=sse_c, sse_c_key=sse_c_key)


def _filters(argv: list[str], include: Optional[list[str]], exclude: Optional[list[str]]):
    """Filters in the order they were given: typer collects --include and --exclude into separate
    lists, so the order comes from the command line itself (or include-then-exclude without one)."""
    from ..filters import Filters

    if not include and not exclude:
        return Filters()
    rules: list[tuple[bool, str]] = []
    it = iter(argv)
    for arg in it:
        for flag, keep in (("--include", True), ("--exclude", False)):
            if arg == flag:
                rules.append((keep, next(it, "")))
            elif arg.startswith(flag + "="):
                rules.append((keep, arg[len(flag) + 1:]))
    if sorted(g for k, g in rules if k) != sorted(include or []) or \
            sorted(g for k, g in rules if not k) != sorted(exclude or []):
        rules = [(True, g) for g in include or []] + [(False, g) for g in exclude or []]
    return Filters(tuple(rules))


def _execute(command: str, *, src: str, dst: str, workers: int, concurrency: Optional[int], part_size: str,
             multipart_threshold: str, max_buffer: str, page_size: int, max_memory, include, exclude,
             endpoint_url, profile, region, no_sign_request, path_style,
             src_endpoint_url, src_profile, src_region, src_no_sign_request,
             dst_endpoint_url, dst_profile, dst_region, dst_no_sign_request,
             json_out: bool, quiet: bool, progress, copy_threshold: str, copy_part_size: str,
             resume: bool = False, journal: Optional[str] = None, no_journal: bool = False,
             journal_dir: Optional[str] = None,
             retries: int = 5, request_timeout: float = 60.0, request_deadline: float = 0.0,
             retry_max_time: float = 600.0, max_rps: float = 0.0, max_bandwidth: str = "0",
             adaptive: bool = True, verbose: bool = False, sync_options=None, files_from: Optional[str] = None,
             files_from_format: str = "auto", cluster: Optional[str] = None, move: bool = False,
             expected_size: Optional[str] = None, checksum_algorithm: Optional[str] = None,
             version_id: Optional[str] = None, all_versions: bool = False, include_delete_markers: bool = False,
             as_of: Optional[str] = None, **props: Any) -> None:
    """Parse, run through the one orchestration path (api._run) and render a copy or a sync; exits
    with the documented code. Everything but parsing and rendering lives in the API."""
    if "-" in (src, dst) or expected_size is not None:  # one object from stdin or to stdout: cli/pipes.py
        from .pipes import copy_pipe

        base = _s3_options(endpoint_url, profile, region, no_sign_request, path_style)
        src_s3, dst_s3 = P.customer_keys(  # SSE-C keys objects are read with (cli/props.py)
            src, dst, _side(base, src_endpoint_url, src_profile, src_region, src_no_sign_request),
            _side(base, dst_endpoint_url, dst_profile, dst_region, dst_no_sign_request), props)
        copy_pipe(command, src, dst, src_s3=src_s3, dst_s3=dst_s3,
                  json_out=json_out, quiet=quiet, progress=progress, expected_size=expected_size, part_size=part_size,
                  concurrency=concurrency or 64, max_buffer=max_buffer, max_memory=max_memory, retries=retries,
                  request_timeout=request_timeout, max_rps=max_rps, max_bandwidth=max_bandwidth, adaptive=adaptive,
                  refused={"--resume": resume, "--files-from": files_from is not None, "--cluster": cluster is not None,
                           "--include/--exclude": bool(include or exclude), "--journal": journal is not None})
        return
    import contextlib
    import signal
    import threading

    from ..api import _run
    from ..engine.plan import TransferOptions
    from .render import make_renderer

    if cluster is not None:
        from ..engine.cluster import import_distributed

        import_distributed()  # without the extra: one line saying how to install it, exit 2
    base = _s3_options(endpoint_url, profile, region, no_sign_request, path_style)
    src_s3 = _side(base, src_endpoint_url, src_profile, src_region, src_no_sign_request)
    dst_s3 = _side(base, dst_endpoint_url, dst_profile, dst_region, dst_no_sign_request)
    src_s3, dst_s3 = P.customer_keys(src, dst, src_s3, dst_s3, props)  # SSE-C keys objects are read with
    renderer = make_renderer(command, src, dst, json_mode=json_out, quiet=quiet, progress=progress,
                             verbose=verbose)
    global _RENDERER
    _RENDERER = renderer
    first_signal = _FirstSignal()

    def on_event(kind, payload) -> None:
        if kind in ("dryrun", "difference"):
            renderer.planned(payload)
            return
        if kind == "progress":
            sys.stdout.flush()  # the dry run's lines so far (written unflushed)
        if kind == "notice":
            print(f"s3bulk: {payload}", file=sys.stderr, flush=True)
            return
        if kind == "stopping":
            print("s3bulk: stopping: finishing the transfers in flight and writing the journal "
                  "(Ctrl-C again to stop at once)", file=sys.stderr, flush=True)
        renderer.on_event(kind, payload)

    @contextlib.contextmanager
    def around_run():
        # run_plan counts Ctrl-Cs while it runs and then puts back the handler it found: make that
        # one ignore them, so a Ctrl-C pressed as the run ends cannot cut off the summary or the
        # resume line
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with renderer, first_signal:
            yield

    try:
        if journal is not None and journal_dir is not None:
            raise UsageError("give --journal PATH or --journal-dir DIR, not both")
        options = TransferOptions(
            workers=workers, page_size=page_size,
            # -c N: exactly N; without it, 64 that may grow while requests are slow (engine/inflight.py)
            concurrency=concurrency or 64, max_concurrency=concurrency or 0,
            part_size=parse_size(part_size, "--part-size"),
            multipart_threshold=parse_size(multipart_threshold, "--multipart-threshold"),
            max_bytes_in_flight=parse_size(max_buffer, "--max-buffer"),
            copy_threshold=parse_size(copy_threshold, "--copy-threshold"),
            copy_part_size=parse_size(copy_part_size, "--copy-part-size"),
            retries=retries, request_timeout=request_timeout, request_deadline=request_deadline,
            retry_max_time=retry_max_time, adaptive=adaptive, max_rps=max_rps,
            max_bandwidth=parse_size(max_bandwidth, "--max-bandwidth"),
            write_props=P.write_props(**props),  # the object-property options (cli/props.py)
            checksum_algorithm=checksum_algorithm,
        )
        if version_id is not None or all_versions or include_delete_markers or as_of is not None:
            if command != "copy":
                raise UsageError("--version-id, --all-versions and --as-of go with copy")
            from .versions import copy_versions

            return copy_versions(src, dst, version_id=version_id, all_versions=all_versions,
                                 include_delete_markers=include_delete_markers, src_s3=src_s3, dst_s3=dst_s3,
                                 options=options, filters=_filters(_ARGV, include, exclude), json_out=json_out,
                                 quiet=quiet, verbose=verbose, as_of=as_of, resume=resume, journal=journal,
                                 no_journal=no_journal, journal_dir=journal_dir, argv=_ARGV)
        summary = _run(command, src, dst, sync_options, options=options, src_s3=src_s3, dst_s3=dst_s3,
                       on_event=on_event, max_memory=parse_size(max_memory, "--max-memory")
                       if max_memory is not None else None,
                       journal=None if no_journal else journal, default_journal=not no_journal,
                       resume=resume, filters=_filters(_ARGV, include, exclude), files_from=files_from,
                       files_from_format=files_from_format, around_run=around_run, cluster=cluster,
                       move=move, report_objects=verbose and not quiet, journal_dir=journal_dir)
    except S3BulkError as exc:
        renderer.error(str(exc), exc.exit_code)
        raise typer.Exit(exc.exit_code)
    renderer.finish(summary)
    if summary.interrupted:
        c = summary.counters
        if summary.journal:
            argv = [a for a in (_ARGV or [command, src, dst]) if a != "--resume"]
            how = "resume with: " + shlex.join(["s3bulk", *argv, "--resume"])
        else:
            how = "no journal was kept, so a new run starts over"
        from .render import plural

        print(f"s3bulk: interrupted: {plural(c.done, 'object')} copied in this run ({c.listed:,} listed); {how}",
              file=sys.stderr, flush=True)
        # as a shell reports a process ended by the signal: 128 + 15 for SIGTERM, 128 + 2 for Ctrl-C
        raise typer.Exit(EXIT_TERMINATED if first_signal.signum == signal.SIGTERM else EXIT_INTERRUPTED)
    if summary.fatal:
        raise typer.Exit(summary.fatal_code or EXIT_FATAL)
    if summary.counters.failed:
        raise typer.Exit(EXIT_FAILED)
    if sync_options is not None and sync_options.check:
        c = summary.counters
        if not quiet:
            from .render import plural

            print(f"s3bulk check: {plural(c.skipped, 'object')} identical, {plural(c.done, 'key')} only in SRC "
                  f"or different, {plural(c.deleted, 'key')} only in DST", file=sys.stderr)
        if c.done or c.deleted:
            raise typer.Exit(EXIT_FAILED)


class _FirstSignal:
    """Which signal stopped the run (SIGINT or SIGTERM), for the exit code.

    The engine counts both alike while it runs (engine/coordinator.py `Signals`, its own handler); the
    signal number still reaches Python's wakeup fd, which is read here once the run is over."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._pipe: tuple[int, int] | None = None
        self._old = -1

    def __enter__(self) -> "_FirstSignal":
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            r, w = os.pipe()
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            self._pipe = (r, w)
            self._old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        return self

    def __exit__(self, *exc: Any) -> None:
        import signal

        if self._pipe is None:
            return
        signal.set_wakeup_fd(self._old, warn_on_full_buffer=False)
        r, w = self._pipe
        try:
            seen = os.read(r, 4096)
        except BlockingIOError:
            seen = b""
        finally:
            os.close(r)
            os.close(w)
        for signum in seen:
            if signum in (signal.SIGINT, signal.SIGTERM):
                self.signum = signum
                break


def _side(base: S3Options, endpoint: Optional[str], profile: Optional[str], region: Optional[str],
          no_sign: Optional[bool]) -> S3Options:
    side = _s3_options(endpoint if endpoint is not None else base.endpoint_url,
                       profile if profile is not None else base.profile,
                       region if region is not None else base.region,
                       no_sign if no_sign is not None else base.no_sign_request, base.path_style)
    return side


@app.command("ls", cls=_Command)
def ls_command(
    url: str = typer.Argument(..., metavar="URL", help="s3://BUCKET[/PREFIX], s3://BUCKET/KEY, http://HOST:PORT/ or a local directory or file; lists recursively"),
    json_out: bool = typer.Option(False, "--json", help="one JSON object per line"),
    unordered: bool = typer.Option(False, "--unordered",
                                   help="print pages as they arrive instead of in key order: faster on big buckets"),
    concurrency: int = typer.Option(64, "--concurrency", "-c", metavar="N", min=1,
                                    help="list requests in flight over split key ranges"),
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
    all_versions: bool = typer.Option(False, "--all-versions", help="every version and delete marker, with its version id and whether it is the latest"),
) -> None:
    """List every object under URL with its size, in key order (unless --unordered).

    URL is read as copy reads SRC: s3://BUCKET/NAME is the object NAME if there is one, else
    everything under NAME/; a URL that matches nothing is an error."""
    from ..api import ls_rendered
    from ..model import ObjectInfo

    s3 = _s3_options(endpoint_url, profile, region, no_sign_request, path_style)
    if all_versions:
        from .versions import ls_versions

        try:
            return ls_versions(url, s3, json_out)
        except BrokenPipeError:
            return _quiet_broken_pipe()
    out = sys.stdout
    count = total = 0
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    stamps: dict[float | None, str] = {None: "-"}  # one strftime per second seen, not per key

    def render(page: list[ObjectInfo]) -> str:
        """A page's lines, made as it is listed (a page listed ahead of the output waits as text)."""
        nonlocal count, total, stamps
        lines = []
        for obj in page:
            count += 1
            total += obj.size or 0
            if json_out:
                lines.append(dumps({"key": obj.key, "size": obj.size, "mtime": obj.mtime, "etag": obj.etag}))
            else:
                when = stamps.get(obj.mtime)
                if when is None:
                    assert obj.mtime is not None  # stamps maps None to "-"
                    if len(stamps) > 4096:
                        stamps = {None: "-"}
                    when = stamps[obj.mtime] = datetime.fromtimestamp(obj.mtime, timezone.utc).strftime(
                        "%Y-%m-%d %H:%M:%S")
                lines.append(f"{when} {obj.size if obj.size is not None else '-':>12} {obj.key}")
        return "\n".join(lines) + "\n" if lines else ""

    texts = ls_rendered(url, render, s3=s3, ordered=not unordered, concurrency=concurrency)
    try:
        for text in texts:
            if text:
                out.write(text)
    except BrokenPipeError:
        _quiet_broken_pipe()
        return
    finally:
        texts.close()  # `| head`, Ctrl-C: listings cancelled and spill files gone before the loop closes
    if not json_out:
        from .render import plural

        print(f"{plural(count, 'object')}, {plural(total, 'byte')}", file=sys.stderr)


@app.command("rm", cls=_Command)
def rm_command(
    url: str = typer.Argument(..., metavar="URL", help="s3://BUCKET/PREFIX/ (everything under it), s3://BUCKET/KEY, or a local directory"),
    all_objects: bool = typer.Option(False, "--all", help="allow URL to be a whole bucket (every object in it)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what would be deleted; delete nothing"),
    include: Include = None, exclude: Exclude = None,
    json_out: bool = typer.Option(False, "--json", help="one JSON object per line"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="one line per deleted key"),
    concurrency: int = typer.Option(8, "--concurrency", "-c", metavar="N", min=1, help="DeleteObjects requests (1,000 keys each) in flight"),
    resume: bool = typer.Option(False, "--resume", help="continue an interrupted rm from its journal: list only what it had not deleted (no journal, or nothing left: runs as usual, exit 0)"),
    journal: JournalPath = None, no_journal: NoJournal = False,
    retries: Retries = 5, max_rps: MaxRps = 0.0,
    all_versions: bool = typer.Option(False, "--all-versions", help="delete every version and delete marker for good (without it a versioned bucket keeps them and gets delete markers, as S3 does)"),
    incomplete_uploads: bool = typer.Option(False, "--incomplete-uploads", help="instead of objects, abort the multipart uploads left open under URL (by a killed run or another tool: no listing shows them, and their parts are billed); with --dry-run, list them"),
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
) -> None:
    """Delete every object under URL (or the one object it names), in batches of 1,000 keys.

    Keys the server refuses inside a DeleteObjects answer are reported one by one (exit 1). The
    deleted key ranges are journaled: an interrupted rm run again with --resume lists only the rest."""
    from ..api import rm
    from .render import plural, printable

    s3 = _s3_options(endpoint_url, profile, region, no_sign_request, path_style)
    if incomplete_uploads:
        from .uploads import rm_incomplete_uploads

        others = next((o for o, given in (("--all-versions", all_versions), ("--resume", resume), ("--include", include),
                                          ("--exclude", exclude)) if given), None)
        return rm_incomplete_uploads(url, s3, all_objects=all_objects, dry_run=dry_run, json_out=json_out,
                                     verbose=verbose, retries=retries, max_rps=max_rps, others=others)
    dumps = json.JSONEncoder(ensure_ascii=False).encode

    def on_key(key_url: str, why: Optional[str]) -> None:
        if why is not None:
            if json_out:
                print(dumps({"event": "failure", "op": "delete", "src": key_url, "error": why, "v": 1}), flush=True)
            else:
                print(printable(f"ERROR delete {key_url}: {why}"), file=sys.stderr, flush=True)
        elif dry_run or verbose:
            if json_out:
                print(dumps({"event": "dryrun" if dry_run else "deleted", "action": "delete", "dst": key_url,
                             "v": 1}), flush=True)
            else:
                print(printable(f"{'(dryrun) ' if dry_run else ''}delete: {key_url}"), flush=True)

    if json_out:  # the stream begins with `start` and ends with `summary`, as copy's does
        print(dumps({"event": "start", "command": "rm", "src": url, "dst": None, "v": 1}), flush=True)
    try:
        result = rm(url, s3=s3, filters=[r for r in (("include" if keep else "exclude", g) for keep, g in
                                                   _filters(_ARGV, include, exclude).rules)],
                    dry_run=dry_run, all_objects=all_objects, on_key=on_key, concurrency=concurrency,
                    journal=None if no_journal else journal, default_journal=not no_journal, resume=resume,
                    on_notice=lambda line: print(f"s3bulk: {line}", file=sys.stderr, flush=True),
                    max_rps=max_rps, retries=retries, all_versions=all_versions)
    except KeyboardInterrupt:
        argv = [a for a in (_ARGV or ["rm", url]) if a != "--resume"]
        how = ("resume with: " + shlex.join(["s3bulk", *argv, "--resume"])) if not no_journal and not dry_run \
            else "no journal was kept, so a new run lists everything again"
        print(f"s3bulk: interrupted; {how}", file=sys.stderr, flush=True)
        raise typer.Exit(EXIT_INTERRUPTED)
    except S3BulkError as exc:
        if json_out:
            print(dumps({"event": "error", "error": str(exc), "v": 1}))
            print(dumps({"event": "summary", "command": "rm", "src": url, "ok": False, "deleted": 0, "failed": 0,
                         "dry_run": dry_run, "resumed_deleted": 0, "fatal": str(exc), "v": 1}))
        print(printable(f"s3bulk: error: {exc}"), file=sys.stderr)
        raise typer.Exit(exc.exit_code)
    except BrokenPipeError:
        _quiet_broken_pipe()
        return
    if json_out:
        print(dumps({"event": "summary", "command": "rm", "src": url, "ok": result.ok, "deleted": result.deleted,
                     "failed": len(result.failures), "dry_run": dry_run,
                     "resumed_deleted": result.resumed_deleted, "fatal": None, "v": 1}))
    else:
        verb = "would delete" if dry_run else "deleted"
        tail = f", {plural(len(result.failures), 'failure')}" if result.failures else ""
        if result.resumed_deleted:
            tail += f" ({result.resumed_deleted:,} deleted before the interruption)"
        if result.journal and result.failures:
            tail += "; after fixing the cause, the same command with --resume retries the rest"
        print(f"{verb} {plural(result.deleted, 'object')}{tail}", file=sys.stderr)
    if result.failures:
        raise typer.Exit(EXIT_FAILED)


@app.command("du", cls=_Command)
def du_command(
    url: str = typer.Argument(..., metavar="URL", help="s3://BUCKET[/PREFIX] or a local directory"),
    depth: int = typer.Option(0, "--depth", metavar="N", min=0, help="also one line per prefix of N '/'-separated levels below URL"),
    json_out: bool = typer.Option(False, "--json", help="one JSON object per line: a 'du' event per prefix, a 'class' event per storage class, then the 'total'"),
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
) -> None:
    """Count the objects and bytes under URL (optionally per prefix), listing in parallel.

    Keys come in order, so each prefix's lines are printed as soon as it ends: memory stays flat
    however many prefixes there are."""
    from ..api import du_groups
    from ..sizes import human_bytes

    s3 = _s3_options(endpoint_url, profile, region, no_sign_request, path_style)
    out = sys.stdout
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    classes: dict[str, list[int]] = {}

    def line(objects: int, nbytes: int, label: str) -> str:
        return (f"{human_bytes(nbytes):>11} {nbytes:>16,} B {objects:>14,} "
                f"{'object ' if objects == 1 else 'objects'}  {label}\n")

    try:
        for prefix, objects, nbytes in du_groups(url, s3=s3, depth=depth, classes=classes):
            if prefix is None:  # before the total: what each storage class holds (S3 sources)
                for name, (c_objects, c_bytes) in sorted(classes.items()):
                    out.write(dumps({"event": "class", "storage_class": name, "objects": c_objects,
                                     "bytes": c_bytes, "v": 1}) + "\n" if json_out
                              else line(c_objects, c_bytes, f"(storage class {name})"))
            if json_out:
                kind = "total" if prefix is None else "du"
                row = {"event": kind, "prefix": prefix, "objects": objects, "bytes": nbytes, "v": 1}
                if prefix is None:
                    del row["prefix"]
                out.write(dumps(row) + "\n")
            else:
                out.write(line(objects, nbytes, "(total)" if prefix is None else prefix))
    except BrokenPipeError:
        _quiet_broken_pipe()


@app.command(cls=_Command)
def serve(
    directory: Optional[str] = typer.Argument(None, metavar="DIR", help="serve the files under this directory"),
    synthetic: Optional[int] = typer.Option(None, metavar="N", help="serve N generated files instead (no disk)", min=0),
    size: str = typer.Option("100", metavar="SIZE", help="size of each synthetic file"),
    host: str = typer.Option("127.0.0.1", metavar="ADDRESS", help="address to listen on"),
    port: int = typer.Option(8000, metavar="PORT", help="port (0 = any free port; the URL is printed)", min=0, max=65535),
    processes: int = typer.Option(0, metavar="N", help="server processes sharing the port (0 = one per core)", min=0),
    page_size: int = typer.Option(1000, metavar="N", help="names per /list page", min=1),
) -> None:
    """Serve a directory (or synthetic files) over the plain list/get contract: GET /list, GET /get/NAME."""
    from ..server import DirectoryCatalog, SyntheticCatalog, main_announce
    from ..server import serve as run_server

    if (directory is None) == (synthetic is None):
        raise UsageError("give a DIRECTORY or --synthetic N (not both)")
    if directory is not None:
        if not os.path.isdir(directory):
            raise UsageError(f"{directory!r} is not a directory")
        catalog: DirectoryCatalog | SyntheticCatalog = DirectoryCatalog(directory)
    else:
        catalog = SyntheticCatalog(synthetic or 0, parse_size(size, "--size"))
    try:
        run_server(catalog, host=host, port=port, processes=processes, page_size=page_size,
                   announce=main_announce)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _quiet_broken_pipe() -> None:
    """`s3bulk ls ... | head` must not end in a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


_ARGV: list[str] = []
_RENDERER: Any = None  # the run's renderer, once _execute made one
_RUN_COMMANDS = ("copy", "sync", "mv", "check")


def _json_error(message: str, code: int) -> bool:
    """With --json, an error that ends the run is also a JSON `start` (if not yet written), `error`
    and `summary`, so a script can rely on the stream's first and last lines; True when written
    (the renderer then printed the stderr line too)."""
    from .render import JsonRenderer

    renderer = _RENDERER
    if not isinstance(renderer, JsonRenderer):
        if "--json" not in _ARGV or not _ARGV or _ARGV[0] not in _RUN_COMMANDS:
            return False
        renderer = JsonRenderer(_ARGV[0], None, None)  # the command line could not be read
    if renderer.summarized:
        return False
    renderer.error(message, code)
    return True

from . import pipes as _pipes  # noqa: E402,F401  (registers `cat`; it needs `app` and the options above)


def main(argv: Optional[list[str]] = None) -> None:
    """Console entry point: every expected failure becomes one line on stderr and an exit code."""
    global _ARGV
    _ARGV = list(sys.argv[1:] if argv is None else argv)
    try:
        from typer._click.exceptions import NoArgsIsHelpError
    except ImportError:  # another typer: its usage error then says "error:" before the help
        NoArgsIsHelpError = ()  # type: ignore[assignment,misc]
    from typer.exceptions import Abort, Exit, TyperException

    try:
        rv = app(args=argv, standalone_mode=False, prog_name="s3bulk")
        code = rv if isinstance(rv, int) else 0
    except S3BulkError as exc:
        code = exc.exit_code
        if not _json_error(str(exc), code):
            print(f"s3bulk: error: {exc}", file=sys.stderr)
    except Exit as exc:
        code = exc.exit_code
    except Abort:
        print("s3bulk: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("s3bulk: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except NoArgsIsHelpError as exc:  # `s3bulk` alone: the help, which is no error message
        print(exc.format_message(), file=sys.stderr)
        code = exc.exit_code
    except TyperException as exc:
        code = exc.exit_code
        if not _json_error(exc.format_message(), code):
            print(f"s3bulk: error: {exc.format_message()}", file=sys.stderr)
    except Exception as exc:  # a bug: one line unless asked for the traceback
        if os.environ.get("S3BULK_DEBUG"):
            raise
        print(f"s3bulk: internal error: {type(exc).__name__}: {exc} (set S3BULK_DEBUG=1 for details)",
              file=sys.stderr)
        code = EXIT_FATAL
    if argv is None:  # the process's own command line: the process ends here
        _skip_exit_collections()
    sys.exit(code)


def _skip_exit_collections() -> None:
    """The run is over: move every object to the permanent generation, so the garbage collections
    of the interpreter's shutdown do not walk them all again. Those passes (typer, pydantic,
    botocore's objects) took 0.1-0.3 s after the last byte had landed, on every command (issue 17);
    atexit handlers, flushes and thread joins still run as before."""
    import gc

    gc.freeze()
