"""The command line's options: each declared once, gathered after parsing into frozen groups.

Declared once: every option shared by two commands is an `Annotated` alias here (its flags,
metavar, help, range and help panel). Typer reads a command's parameters from its signature, so a
command still lists the aliases it takes, with their defaults, one short line each; nothing else
about an option is written twice.

Gathered once: `command(declaration, body)` makes the typer command whose parameters are those of
`declaration` and whose body gets every value by name in one mapping; each group (`S3Endpoints`,
`NetworkOptions`, `JournalOptions`, ...) takes its fields from that mapping by name
(`RunOptions.of(params)`). No parameter list is repeated to pass values on, and no locals().

A group whose options a command does not declare is None (check moves no bytes: it has no part
sizes and no network options); the engine's own defaults then apply, which are the defaults
declared here. Fields that default to "not given" (None, False) take that value when a command
lacks them (check takes four of the object-property options, not the others).
"""

from __future__ import annotations

import functools
import os
from typing import Annotated, Any, Callable, Optional

import typer

# the groups, typer-free in groups.py, are imported from here by the commands
from .groups import (FilterOptions, GuardOptions, JournalOptions, ManifestOptions, NetworkOptions, OutputOptions,  # noqa: F401
                     ParallelOptions, Params, RunOptions, S3Connection, S3Endpoints, S3SideOptions, SizeOptions,
                     VersionsOptions, gather, gather_declared, max_memory, transfer_options)

# --- declarations --------------------------------------------------------------------------------

O = typer.Option
S3_PANEL = "S3 connection (both sides unless a --src-/--dst- option overrides it)"
NETWORK_PANEL = "Retries and rate"
VERSIONS_PANEL = "Versions"

# SRC and DST as sync and check read them (copy's take more: cli/commands/copy.py)
SyncSrc = Annotated[str, typer.Argument(metavar="SRC", help="s3://BUCKET[/PREFIX], http://HOST:PORT/, or a local directory")]
SyncDst = Annotated[str, typer.Argument(metavar="DST", help="s3://BUCKET[/PREFIX] or a local directory")]

# how much runs at once, and in what sizes
Workers = Annotated[int, O("--workers", "-w", metavar="N", help="worker processes (0 = one per core; half the cores for a server on this machine)", min=0)]
Concurrency = Annotated[Optional[int], O("--concurrency", "-c", metavar="N", min=1, show_default=False,
                                          help="transfers in flight per worker; without it 64 to begin with, raised by itself up to 512 while requests are slow and the CPU has room; a given N stays N")]
PartSize = Annotated[str, O(metavar="SIZE", help="part size for multipart transfers (raised to fit 10,000 parts)")]
AutoPartSize = Annotated[str, O(metavar="SIZE", help="part size for multipart transfers, used as given (raised to fit 10,000 parts); auto: each object is cut into about 32 parts (downloads 1-32 MiB, uploads 5-8 MiB) and an upload's parts in flight grow from 8 up to 32 while the link gives more (a download into a file starts with 32)")]
Threshold = Annotated[str, O(metavar="SIZE", help="objects above this move in parts")]
MaxBuffer = Annotated[str, O("--max-buffer", metavar="SIZE", help="object bytes held in memory at once, all workers")]
PageSize = Annotated[int, O(metavar="N", help="keys per listing request", min=1, max=1000)]
MaxMemory = Annotated[Optional[str], O("--max-memory", metavar="SIZE", help="stay under this much memory in all (e.g. 128MiB); workers, transfers and part sizes follow from it")]
CopyThreshold = Annotated[str, O(hidden=True, help="server-side: CopyObject up to here, UploadPartCopy above")]
CopyPartSize = Annotated[str, O(hidden=True)]
CopyConcurrency = Annotated[int, O(hidden=True, min=1, help="server-side: parts of one UploadPartCopy in flight")]
ExpectedSize = Annotated[Optional[str], O("--expected-size", metavar="SIZE", help="with SRC '-': about how big the stream from stdin will be, so the part size lets 10,000 parts hold it")]
ForceArchived = Annotated[bool, O("--force-archived", help="try objects in GLACIER or DEEP_ARCHIVE that are not restored (by default they are skipped and counted: S3 refuses to read them)")]
Verify = Annotated[bool, O("--verify", help="read back every object written, by a HEAD after its write: one the destination does not have, or not whole, or not with the ETag and checksum its write was answered with, is written once more, then failed (without it, only the first object each worker writes to S3 is checked)")]
ChecksumAlgorithm = Annotated[Optional[str], O("--checksum-algorithm", metavar="ALGORITHM", help="S3 uploads carry this checksum, checked by the server on every PUT and part and kept with the object: CRC32, CRC32C, CRC64NVME (full-object), SHA1 or SHA256 (CRC32C/CRC64NVME need pip install 's3bulk[crc]')")]

# which keys
FILTERS_PANEL = "Filters (a key is kept only when every filter given keeps it)"
Include = Annotated[Optional[list[str]], O("--include", metavar="GLOB", rich_help_panel=FILTERS_PANEL, help="glob of keys to include (with --exclude: the last match wins)")]
Exclude = Annotated[Optional[list[str]], O("--exclude", metavar="GLOB", rich_help_panel=FILTERS_PANEL, help="glob of keys to leave out, matched against each key relative to the prefix given (`*` matches across /)")]
IncludeFrom = Annotated[Optional[list[str]], O("--include-from", metavar="FILE", rich_help_panel=FILTERS_PANEL, help="only keys matching one of the globs in FILE (one a line, # comments), e.g. --include-from keep.txt")]
ExcludeFrom = Annotated[Optional[list[str]], O("--exclude-from", metavar="FILE", rich_help_panel=FILTERS_PANEL, help="leave out keys matching any glob in FILE (one a line, # comments), e.g. --exclude-from skip.txt")]
FilterFrom = Annotated[Optional[list[str]], O("--filter-from", metavar="FILE", rich_help_panel=FILTERS_PANEL, help="rclone's rules, '+ GLOB' keeps and '- GLOB' leaves out, the first line that matches decides (no match: kept), e.g. --filter-from rules.txt")]
MaxDepth = Annotated[Optional[int], O("--max-depth", metavar="N", min=1, rich_help_panel=FILTERS_PANEL, help="only keys at most N '/'-levels below SRC (1: directly under it), e.g. --max-depth 1")]
ExcludeIfPresent = Annotated[Optional[str], O("--exclude-if-present", metavar="NAME", rich_help_panel=FILTERS_PANEL, help="local SRC: leave out every directory holding a file NAME, and all below it, e.g. --exclude-if-present .nobackup")]
MinSize = Annotated[Optional[str], O("--min-size", metavar="SIZE", rich_help_panel=FILTERS_PANEL, help="only objects of at least SIZE, e.g. --min-size 10M")]
MaxSize = Annotated[Optional[str], O("--max-size", metavar="SIZE", rich_help_panel=FILTERS_PANEL, help="only objects of at most SIZE, e.g. --max-size 1.5GiB")]
MinAge = Annotated[Optional[str], O("--min-age", metavar="AGE", rich_help_panel=FILTERS_PANEL, help="only objects last modified at least AGE ago (90m, 7d, 2w) or at/before a time (2026-11-01), e.g. --min-age 30d")]
MaxAge = Annotated[Optional[str], O("--max-age", metavar="AGE", rich_help_panel=FILTERS_PANEL, help="only objects last modified within AGE (90m, 7d, 2w) or at/after a time (2026-11-01T12:00:00Z), e.g. --max-age 1d")]
FilesFrom = Annotated[Optional[str], O("--files-from", metavar="FILE", help="copy the keys this file names (one per line, relative to SRC; '-' reads stdin; an S3 Inventory manifest.json, local or s3://) instead of listing SRC; keys SRC lacks are reported and the run exits 1")]
FilesFromFormat = Annotated[str, O("--files-from-format", metavar="FORMAT", help="auto (csv when the name ends .csv, inventory for manifest.json), lines, csv (S3 Batch Operations rows bucket,key with URL-encoded keys), or inventory (an S3 Inventory manifest.json, CSV format)")]
Cluster = Annotated[Optional[str], O("--cluster", metavar="ADDRESS", help="run the work units as tasks on a Dask cluster: its scheduler (tcp://host:8786) or local[:N] (N worker processes here); needs pip install 's3bulk[dask]'")]
Metrics = Annotated[Optional[str], O("--metrics", metavar="HOST:PORT", help="serve Prometheus metrics at http://HOST:PORT/metrics while the run lasts (:PORT listens on 127.0.0.1; port 0 picks a free one, named on stderr)")]
MetricsLinger = Annotated[float, O("--metrics-linger", metavar="SECONDS", min=0, help="with --metrics: after the run, keep serving until one scrape has read the final counts, at most this long")]
HashCache = Annotated[Optional[str], O(metavar="FILE", help="file for cached local hashes (default $XDG_CACHE_HOME/s3bulk/hashes.sqlite, ~/.cache/s3bulk/hashes.sqlite when XDG_CACHE_HOME is not set)")]

# S3 connection: both sides, then each side's overrides
Endpoint = Annotated[Optional[str], O(metavar="URL", help="S3 endpoint URL (default: AWS, or AWS_ENDPOINT_URL[_S3])", rich_help_panel=S3_PANEL)]
Profile = Annotated[Optional[str], O(metavar="NAME", help="AWS profile from the config/credentials files", rich_help_panel=S3_PANEL)]
Region = Annotated[Optional[str], O(metavar="REGION", help="AWS region", rich_help_panel=S3_PANEL)]
NoSign = Annotated[bool, O("--no-sign-request", help="send unsigned requests (public buckets)", rich_help_panel=S3_PANEL)]
PathStyle = Annotated[bool, O("--path-style", help="path-style addressing (http://host/bucket/key)", rich_help_panel=S3_PANEL)]
SrcEndpoint = Annotated[Optional[str], O(metavar="URL", help="endpoint URL for SRC only", rich_help_panel=S3_PANEL)]
SrcProfile = Annotated[Optional[str], O(metavar="NAME", help="profile for SRC only", rich_help_panel=S3_PANEL)]
SrcRegion = Annotated[Optional[str], O(metavar="REGION", help="region for SRC only", rich_help_panel=S3_PANEL)]
SrcNoSign = Annotated[Optional[bool], O("--src-no-sign-request/--src-sign-request", help="unsigned requests for SRC only", rich_help_panel=S3_PANEL)]
DstEndpoint = Annotated[Optional[str], O(metavar="URL", help="endpoint URL for DST only", rich_help_panel=S3_PANEL)]
DstProfile = Annotated[Optional[str], O(metavar="NAME", help="profile for DST only", rich_help_panel=S3_PANEL)]
DstRegion = Annotated[Optional[str], O(metavar="REGION", help="region for DST only", rich_help_panel=S3_PANEL)]
DstNoSign = Annotated[Optional[bool], O("--dst-no-sign-request/--dst-sign-request", help="unsigned requests for DST only", rich_help_panel=S3_PANEL)]

# output
Json = Annotated[bool, O("--json", help="newline-delimited JSON events and summary on stdout")]
Quiet = Annotated[bool, O("--quiet", "-q", help="no progress and no summary; errors only")]
Verbose = Annotated[bool, O("--verbose", "-v", help="a line per object copied or deleted (with --json: `copied` and `deleted` events), and CPU time and peak memory in the summary (always in --json)")]
ShowProgress = Annotated[Optional[bool], O("--progress/--no-progress", help="live display (default: when stderr is a terminal)")]
Report = Annotated[Optional[str], O("--report", metavar="FILE", help="write one row per object to FILE as the run goes (.csv with a header, or .jsonl): its outcome, where it was (and went), size, ETag and any error; with --resume the same FILE is continued, so it names every object of the job")]

# what DST keeps, what a copy only plans, when a run stops by itself (copy, sync, mv: GuardOptions)
GUARDS_PANEL = "Safety and caps"
NoClobber = Annotated[bool, O("--no-clobber", help="never replace an object or file DST already has: such keys are skipped (counted as kept), even one written by someone else while the run goes (S3 writes carry If-None-Match: *; local files are put in place without replacing)", rich_help_panel=GUARDS_PANEL)]
Update = Annotated[bool, O("--update", "-u", help="skip a key whose DST copy is newer than the source's (its modification time or LastModified is later); copy and mv ask DST with one HEAD per object, sync reads it from its listing", rich_help_panel=GUARDS_PANEL)]
CopyDryRun = Annotated[bool, O("--dry-run", help="print what would be copied (mv: moved), and the requests and bytes it would take; change nothing", rich_help_panel=GUARDS_PANEL)]
CopyBackupDir = Annotated[Optional[str], O("--backup-dir", metavar="URL", help="before an object DST already has is overwritten, first copy it to URL (an S3 prefix or a local directory outside DST and SRC), under the same key relative to DST; one HEAD per object asks what DST has (only with this option); a failed backup leaves DST's object in place (a failure) and, for mv, its source too", rich_help_panel=GUARDS_PANEL)]
CopySuffix = Annotated[str, O("--suffix", metavar="SUF", help="with --backup-dir: append SUF to each backup's key (e.g. .2026-01-31)", rich_help_panel=GUARDS_PANEL)]
MaxTransfer = Annotated[Optional[str], O("--max-transfer", metavar="SIZE", help="stop once this many bytes were copied (e.g. 50GiB): no new object starts, those in flight finish, the journal is kept; exit 8; --resume continues", rich_help_panel=GUARDS_PANEL)]
MaxDuration = Annotated[Optional[str], O("--max-duration", metavar="DURATION", help="stop after this long (90s, 10m, 1h): no new object starts, those in flight finish (cut after 30 s, as a second Ctrl-C would), the journal is kept; exit 10; --resume continues", rich_help_panel=GUARDS_PANEL)]

# the resume journal
Resume = Annotated[bool, O("--resume", help="continue an interrupted run from its journal: skip what it finished, continue or abort its open multipart uploads")]
JournalPath = Annotated[Optional[str], O("--journal", metavar="PATH", help="the resume journal file (default: one in the journal directory, named for the command and its URLs); removed when a run completes")]
JournalDir = Annotated[Optional[str], O("--journal-dir", metavar="DIR", help="keep the default journals in DIR instead of $XDG_STATE_HOME/s3bulk/journals; journals there untouched for 30 days are removed")]
NoJournal = Annotated[bool, O("--no-journal", help="keep no resume journal")]

# retries and rate
Retries = Annotated[int, O("--retries", metavar="N", help="further attempts of a failed request (5xx, dropped connection, timeout, short body), with exponential backoff and full jitter; throttling answers (503 SlowDown, 429) are retried beyond these, backing off up to 20 s, until --retry-max-time (0: no retries at all)", min=0, rich_help_panel=NETWORK_PANEL)]
RequestTimeout = Annotated[float, O("--request-timeout", metavar="SECONDS", help="seconds of silence (no byte received, no request byte taken) before a request is retried; a transfer that keeps moving is never cut off", min=0.1, rich_help_panel=NETWORK_PANEL)]
RequestDeadline = Annotated[float, O("--request-deadline", metavar="SECONDS", help="seconds one attempt of a request may take from start to whole answer, however steadily it moves, before it is retried (0 = no deadline, the default)", min=0, rich_help_panel=NETWORK_PANEL)]
RetryMaxTime = Annotated[float, O("--retry-max-time", metavar="SECONDS", help="seconds one request may take over all its attempts and waits: no retry starts after that, the object fails saying so (0 = no cap)", min=0, rich_help_panel=NETWORK_PANEL)]
MaxRps = Annotated[float, O("--max-rps", metavar="N", help="requests per second, whole run (0 = no cap)", min=0, rich_help_panel=NETWORK_PANEL)]
MaxBandwidth = Annotated[str, O("--max-bandwidth", metavar="SIZE", help="bytes per second, whole run, e.g. 50MiB (0 = no cap)", rich_help_panel=NETWORK_PANEL)]
Adaptive = Annotated[bool, O("--adaptive/--no-adaptive", help="halve requests in flight on SlowDown, raise them again as answers succeed (AIMD, shared by all workers)", rich_help_panel=NETWORK_PANEL)]

# the request log (http/requestlog.py): started as the option is read, so the workers inherit it
DEBUG_PANEL = "Debugging"


def _log_requests(value: Optional[str]) -> Optional[str]:
    if value:
        from ..http import requestlog

        try:
            requestlog.start(value)
        except OSError as exc:
            raise typer.BadParameter(f"cannot write {value}: {exc.strerror or exc}") from None
    return value


def _log_requests_headers(value: bool) -> bool:
    """--log-requests-headers alone logs to standard error, as rclone's --dump headers does: asking
    for the headers is asking for the log (a --log-requests FILE, read before or after this, wins)."""
    if value:
        from ..http import requestlog

        os.environ[requestlog.HEADERS_ENV] = "1"
        if not os.environ.get(requestlog.ENV):
            os.environ[requestlog.ENV] = "-"
    return value


LogRequests = Annotated[Optional[str], O("--log-requests", metavar="FILE|-", callback=_log_requests, rich_help_panel=DEBUG_PANEL, help="write one line per request to a server and its answer to FILE (appended; '-' is stderr): time, method, URL, status, bytes sent and received, duration, retry number; credentials, tokens, signatures and SSE-C keys redacted; every process of the run writes its own lines")]
LogRequestsHeaders = Annotated[bool, O("--log-requests-headers", callback=_log_requests_headers, rich_help_panel=DEBUG_PANEL, help="each request's and answer's headers too, under its line (secrets redacted); without --log-requests the log goes to stderr")]

# versions (copy and mv)
VersionId = Annotated[Optional[str], O("--version-id", metavar="ID", help="copy this version of the one key SRC names", rich_help_panel=VERSIONS_PANEL)]
AllVersions = Annotated[bool, O("--all-versions", help="copy every version under SRC, oldest first per key, so a versioned DST gets the same history", rich_help_panel=VERSIONS_PANEL)]
AsOf = Annotated[Optional[str], O("--as-of", metavar="TIME", help="copy each key under SRC as it was at TIME (ISO 8601, UTC unless a zone is given, or epoch seconds): its newest version not after it", rich_help_panel=VERSIONS_PANEL)]
IncludeDeleteMarkers = Annotated[bool, O("--include-delete-markers", help="with --all-versions: replay delete markers as deletes at DST", rich_help_panel=VERSIONS_PANEL)]

# guarded deletes (sync and rm: engine/run/deletes.py, engine/transfer/backup.py)
MaxDelete = Annotated[Optional[str], O("--max-delete", metavar="N|P%", help="delete nothing (exit 4) when more than N objects would be deleted, or more than P percent of the objects listed where the deletes happen (sync: DST)")]
MaxDeleteSize = Annotated[Optional[str], O("--max-delete-size", metavar="SIZE", help="delete nothing (exit 4) when the objects to delete add up to more than SIZE (e.g. 10GiB)")]
BackupDir = Annotated[Optional[str], O("--backup-dir", metavar="URL", help="first copy what would be deleted (and, for sync, overwritten) to URL, under the same relative key; server-side on the same S3 endpoint; a failed backup leaves the object in place (a failure)")]
Suffix = Annotated[str, O("--suffix", metavar="SUF", help="with --backup-dir: append SUF to each backup's key (e.g. .2026-01-31)")]

# --- from typer's values to groups (groups.py) ------------------------------------------------------

def command(declaration: Callable[..., None], body: Callable[[Params], None]) -> Callable[..., None]:
    """The typer command whose parameters are `declaration`'s (typer reads its signature and
    docstring, through functools.wraps) and whose work is `body`, given every value by name.
    Two commands may share one declaration (copy and mv)."""

    @functools.wraps(declaration)
    def invoke(**params: Any) -> None:
        body(params)

    return invoke
