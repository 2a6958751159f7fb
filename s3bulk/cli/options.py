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
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Annotated, Any, Callable, Mapping, Optional, TypeVar

import typer

from ..errors import UsageError
from ..config.sizes import parse_size
from ..config.urls import S3Options
from .props import PropsOptions

if TYPE_CHECKING:  # the engine is imported when a command runs, not for every command's start-up
    from _typeshed import DataclassInstance

    from ..engine.plan import TransferOptions
    from ..config.filters import Filters

# --- declarations --------------------------------------------------------------------------------

O = typer.Option
S3_PANEL = "S3 connection (both sides unless a --src-/--dst- option overrides it)"
NETWORK_PANEL = "Retries and rate"
VERSIONS_PANEL = "Versions"

# SRC and DST as sync and check read them (copy's take more: cli/commands/copy.py)
SyncSrc = Annotated[str, typer.Argument(metavar="SRC", help="s3://BUCKET[/PREFIX], http://HOST:PORT/, or a local directory")]
SyncDst = Annotated[str, typer.Argument(metavar="DST", help="s3://BUCKET[/PREFIX] or a local directory")]

# how much runs at once, and in what sizes
Workers = Annotated[int, O("--workers", "-w", metavar="N", help="worker processes (0 = one per core)", min=0)]
Concurrency = Annotated[Optional[int], O("--concurrency", "-c", metavar="N", min=1, show_default=False,
                                          help="transfers in flight per worker, exactly N [default: 64, raised up to 512 while requests are slow and the CPU is not]")]
PartSize = Annotated[str, O(metavar="SIZE", help="part size for multipart transfers (raised to fit 10,000 parts)")]
AutoPartSize = Annotated[str, O(metavar="SIZE", help="part size for multipart transfers, used as given (raised to fit 10,000 parts); auto: each object is cut into about 32 parts (downloads 1-32 MiB, uploads 5-8 MiB) and its parts in flight grow from 8 up to 32 while the link gives more")]
Threshold = Annotated[str, O(metavar="SIZE", help="objects above this move in parts")]
MaxBuffer = Annotated[str, O("--max-buffer", metavar="SIZE", help="object bytes held in memory at once, all workers")]
PageSize = Annotated[int, O(metavar="N", help="keys per listing request", min=1, max=1000)]
MaxMemory = Annotated[Optional[str], O("--max-memory", metavar="SIZE", help="stay under this much memory in all (e.g. 128MiB); workers, transfers and part sizes follow from it")]
CopyThreshold = Annotated[str, O(hidden=True, help="server-side: CopyObject up to here, UploadPartCopy above")]
CopyPartSize = Annotated[str, O(hidden=True)]
ExpectedSize = Annotated[Optional[str], O("--expected-size", metavar="SIZE", help="with SRC '-': about how big the stream from stdin will be, so the part size lets 10,000 parts hold it")]
ChecksumAlgorithm = Annotated[Optional[str], O("--checksum-algorithm", metavar="ALGORITHM", help="S3 uploads carry this checksum, checked by the server on every PUT and part and kept with the object: CRC32, CRC32C, CRC64NVME (full-object), SHA1 or SHA256 (CRC32C/CRC64NVME need pip install 's3bulk[crc]')")]

# which keys
Include = Annotated[Optional[list[str]], O("--include", metavar="GLOB", help="glob of keys to include (with --exclude: the last match wins)")]
Exclude = Annotated[Optional[list[str]], O("--exclude", metavar="GLOB", help="glob of keys to leave out (matched against the key relative to SRC/DST)")]
FilesFrom = Annotated[Optional[str], O("--files-from", metavar="FILE", help="copy the keys this file names (one per line, relative to SRC; '-' reads stdin; an S3 Inventory manifest.json, local or s3://) instead of listing SRC; keys SRC lacks are reported and the run exits 1")]
FilesFromFormat = Annotated[str, O("--files-from-format", metavar="FORMAT", help="auto (csv when the name ends .csv, inventory for manifest.json), lines, csv (S3 Batch Operations rows bucket,key with URL-encoded keys), or inventory (an S3 Inventory manifest.json, CSV format)")]
Cluster = Annotated[Optional[str], O("--cluster", metavar="ADDRESS", help="run the work units as tasks on a Dask cluster: its scheduler (tcp://host:8786) or local[:N] (N worker processes here); needs pip install 's3bulk[dask]'")]
Metrics = Annotated[Optional[str], O("--metrics", metavar="HOST:PORT", help="serve Prometheus metrics at http://HOST:PORT/metrics while the run lasts (:PORT listens on 127.0.0.1; port 0 picks a free one, named on stderr)")]
MetricsLinger = Annotated[float, O("--metrics-linger", metavar="SECONDS", min=0, help="with --metrics: after the run, keep serving until one scrape has read the final counts, at most this long")]
HashCache = Annotated[Optional[str], O(metavar="FILE", help="file for cached local hashes (default ~/.cache/s3bulk/hashes.sqlite)")]

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
Report = Annotated[Optional[str], O("--report", metavar="FILE", help="write one row per object to FILE as the run goes (.csv with a header, or .jsonl): outcome, source, destination, size, ETag, error; with --resume the same FILE is continued, so it names every object of the job")]

# the resume journal
Resume = Annotated[bool, O("--resume", help="continue an interrupted run from its journal: skip what it finished, continue or abort its open multipart uploads")]
JournalPath = Annotated[Optional[str], O("--journal", metavar="PATH", help="the resume journal file (default <journal dir>/<hash of SRC, DST, command>.sqlite); removed when a run completes")]
JournalDir = Annotated[Optional[str], O("--journal-dir", metavar="DIR", help="keep the default journals in DIR instead of $XDG_STATE_HOME/s3bulk/journals; journals there untouched for 30 days are removed")]
NoJournal = Annotated[bool, O("--no-journal", help="keep no resume journal")]

# retries and rate
Retries = Annotated[int, O("--retries", metavar="N", help="further attempts of a failed request (throttling, 5xx, dropped connection, timeout, short body), with exponential backoff and full jitter", min=0, rich_help_panel=NETWORK_PANEL)]
RequestTimeout = Annotated[float, O("--request-timeout", metavar="SECONDS", help="seconds of silence (no byte received, no request byte taken) before a request is retried; a transfer that keeps moving is never cut off", min=0.1, rich_help_panel=NETWORK_PANEL)]
RequestDeadline = Annotated[float, O("--request-deadline", metavar="SECONDS", help="seconds one attempt of a request may take from start to whole answer, however steadily it moves, before it is retried (0 = no deadline, the default)", min=0, rich_help_panel=NETWORK_PANEL)]
RetryMaxTime = Annotated[float, O("--retry-max-time", metavar="SECONDS", help="seconds one request may take over all its attempts and waits: no retry starts after that, the object fails saying so (0 = no cap)", min=0, rich_help_panel=NETWORK_PANEL)]
MaxRps = Annotated[float, O("--max-rps", metavar="N", help="requests per second, whole run (0 = no cap)", min=0, rich_help_panel=NETWORK_PANEL)]
MaxBandwidth = Annotated[str, O("--max-bandwidth", metavar="SIZE", help="bytes per second, whole run, e.g. 50MiB (0 = no cap)", rich_help_panel=NETWORK_PANEL)]
Adaptive = Annotated[bool, O("--adaptive/--no-adaptive", help="halve requests in flight on SlowDown, raise them again as answers succeed (AIMD, shared by all workers)", rich_help_panel=NETWORK_PANEL)]

# versions (copy and mv)
VersionId = Annotated[Optional[str], O("--version-id", metavar="ID", help="copy this version of the one key SRC names", rich_help_panel=VERSIONS_PANEL)]
AllVersions = Annotated[bool, O("--all-versions", help="copy every version under SRC, oldest first per key, so a versioned DST gets the same history", rich_help_panel=VERSIONS_PANEL)]
AsOf = Annotated[Optional[str], O("--as-of", metavar="TIME", help="copy each key under SRC as it was at TIME (ISO 8601, UTC unless a zone is given, or epoch seconds): its newest version not after it", rich_help_panel=VERSIONS_PANEL)]
IncludeDeleteMarkers = Annotated[bool, O("--include-delete-markers", help="with --all-versions: replay delete markers as deletes at DST", rich_help_panel=VERSIONS_PANEL)]


# --- from typer's values to groups -----------------------------------------------------------------

Params = Mapping[str, Any]
"""A command's parameter values by name, as typer passed them."""

G = TypeVar("G", bound="DataclassInstance")


def command(declaration: Callable[..., None], body: Callable[[Params], None]) -> Callable[..., None]:
    """The typer command whose parameters are `declaration`'s (typer reads its signature and
    docstring, through functools.wraps) and whose work is `body`, given every value by name.
    Two commands may share one declaration (copy and mv)."""

    @functools.wraps(declaration)
    def invoke(**params: Any) -> None:
        body(params)

    return invoke


def gather(cls: type[G], params: Params) -> G:
    """The group `cls` from a command's values, each field by its name; a field the command does
    not declare keeps its default (a group without defaults must be declared whole)."""
    return cls(**{f.name: params[f.name] for f in fields(cls) if f.name in params})


def gather_declared(cls: type[G], params: Params) -> G | None:
    """The group, or None when the command declares none of its options (the engine's defaults)."""
    return gather(cls, params) if any(f.name in params for f in fields(cls)) else None


@dataclass(frozen=True)
class S3Connection:
    """--endpoint-url, --profile, --region, --no-sign-request, --path-style: both sides'."""

    endpoint_url: Optional[str] = None
    profile: Optional[str] = None
    region: Optional[str] = None
    no_sign_request: bool = False
    path_style: bool = False

    def options(self) -> S3Options:
        """The engine's S3Options; a malformed endpoint is a UsageError."""
        if self.endpoint_url is not None and not self.endpoint_url.startswith(("http://", "https://")):
            raise UsageError(f"invalid --endpoint-url {self.endpoint_url!r}: expected http://HOST[:PORT] or https://...")
        return S3Options(endpoint_url=self.endpoint_url or None, profile=self.profile or None,
                         region=self.region or None, no_sign_request=self.no_sign_request,
                         path_style=self.path_style)


@dataclass(frozen=True)
class S3SideOptions:
    """One side's overrides (--src-endpoint-url, --dst-profile, ...); None: as both sides'."""

    endpoint_url: Optional[str] = None
    profile: Optional[str] = None
    region: Optional[str] = None
    no_sign_request: Optional[bool] = None

    @classmethod
    def of(cls, side: str, params: Params) -> S3SideOptions:
        """`side` is "src" or "dst": the values of its --src-*/--dst-* options."""
        return cls(**{f.name: params[f"{side}_{f.name}"] for f in fields(cls)})

    def over(self, base: S3Options) -> S3Options:
        return S3Connection(self.endpoint_url if self.endpoint_url is not None else base.endpoint_url,
                            self.profile if self.profile is not None else base.profile,
                            self.region if self.region is not None else base.region,
                            self.no_sign_request if self.no_sign_request is not None else base.no_sign_request,
                            base.path_style).options()


@dataclass(frozen=True)
class S3Endpoints:
    """Each side's S3 options: both sides' connection, then each side's overrides."""

    both: S3Connection
    src: S3SideOptions
    dst: S3SideOptions

    @classmethod
    def of(cls, params: Params) -> S3Endpoints:
        return cls(gather(S3Connection, params), S3SideOptions.of("src", params), S3SideOptions.of("dst", params))

    def resolve(self) -> tuple[S3Options, S3Options]:
        """SRC's and DST's S3Options (checked in this order: both, SRC, DST)."""
        base = self.both.options()
        return self.src.over(base), self.dst.over(base)


@dataclass(frozen=True)
class ParallelOptions:
    """-w, -c, --page-size: how much runs at once."""

    workers: int
    concurrency: Optional[int]
    page_size: int


@dataclass(frozen=True)
class SizeOptions:
    """Part sizes, thresholds and the memory the objects in flight may hold (as typed: parsed by
    transfer_options, so a bad size is reported by the run's renderer)."""

    part_size: str
    multipart_threshold: str
    max_buffer: str
    max_memory: Optional[str]
    copy_threshold: str
    copy_part_size: str


@dataclass(frozen=True)
class NetworkOptions:
    """Retries, time limits and rate caps."""

    retries: int
    request_timeout: float
    request_deadline: float
    retry_max_time: float
    max_rps: float
    max_bandwidth: str
    adaptive: bool


@dataclass(frozen=True)
class JournalOptions:
    """The resume journal: where it is kept, whether to resume from it, or none at all."""

    resume: bool = False
    journal: Optional[str] = None
    journal_dir: Optional[str] = None
    no_journal: bool = False

    def check(self) -> None:
        if self.journal is not None and self.journal_dir is not None:
            raise UsageError("give --journal PATH or --journal-dir DIR, not both")


@dataclass(frozen=True)
class OutputOptions:
    """--json, -q, -v, --progress."""

    json_out: bool = False
    quiet: bool = False
    verbose: bool = False
    progress: Optional[bool] = None
    report: Optional[str] = None


@dataclass(frozen=True)
class FilterOptions:
    """--include and --exclude."""

    include: Optional[list[str]] = None
    exclude: Optional[list[str]] = None

    @property
    def given(self) -> bool:
        return bool(self.include or self.exclude)

    def filters(self, argv: list[str]) -> Filters:
        """Filters in the order they were given: typer collects --include and --exclude into
        separate lists, so the order comes from the command line itself, `argv` (or
        include-then-exclude without one)."""
        from ..config.filters import Filters

        if not self.include and not self.exclude:
            return Filters()
        rules: list[tuple[bool, str]] = []
        it = iter(argv)
        for arg in it:
            for flag, keep in (("--include", True), ("--exclude", False)):
                if arg == flag:
                    rules.append((keep, next(it, "")))
                elif arg.startswith(flag + "="):
                    rules.append((keep, arg[len(flag) + 1:]))
        if sorted(g for k, g in rules if k) != sorted(self.include or []) or \
                sorted(g for k, g in rules if not k) != sorted(self.exclude or []):
            rules = [(True, g) for g in self.include or []] + [(False, g) for g in self.exclude or []]
        return Filters(tuple(rules))


@dataclass(frozen=True)
class ManifestOptions:
    """--files-from and its format: the keys to copy, instead of listing SRC."""

    files_from: Optional[str]
    files_from_format: str


@dataclass(frozen=True)
class VersionsOptions:
    """--version-id, --all-versions, --include-delete-markers, --as-of (copy and mv)."""

    version_id: Optional[str] = None
    all_versions: bool = False
    include_delete_markers: bool = False
    as_of: Optional[str] = None

    @property
    def given(self) -> bool:
        return self.version_id is not None or self.all_versions or self.include_delete_markers or \
            self.as_of is not None


@dataclass(frozen=True)
class RunOptions:
    """Everything copy, sync, mv and check take besides their own comparison options."""

    src: str
    dst: str
    s3: S3Endpoints
    parallel: ParallelOptions
    sizes: Optional[SizeOptions]
    network: Optional[NetworkOptions]
    journal: JournalOptions
    output: OutputOptions
    filters: FilterOptions
    props: PropsOptions
    manifest: Optional[ManifestOptions]
    versions: VersionsOptions
    cluster: Optional[str] = None
    checksum_algorithm: Optional[str] = None
    expected_size: Optional[str] = None
    metrics: Optional[str] = None      # --metrics HOST:PORT (cli/metrics.py)
    metrics_linger: float = 0.0

    @classmethod
    def of(cls, params: Params) -> RunOptions:
        return cls(src=params["src"], dst=params["dst"], s3=S3Endpoints.of(params),
                   parallel=gather(ParallelOptions, params), sizes=gather_declared(SizeOptions, params),
                   network=gather_declared(NetworkOptions, params), journal=gather(JournalOptions, params),
                   output=gather(OutputOptions, params), filters=gather(FilterOptions, params),
                   props=gather(PropsOptions, params), manifest=gather_declared(ManifestOptions, params),
                   versions=gather(VersionsOptions, params), cluster=params.get("cluster"),
                   checksum_algorithm=params.get("checksum_algorithm"), expected_size=params.get("expected_size"),
                   metrics=params.get("metrics"), metrics_linger=params.get("metrics_linger") or 0.0)


def transfer_options(run: RunOptions) -> TransferOptions:
    """The groups as the engine's TransferOptions: sizes parsed (a bad one is a UsageError naming
    its option), the object properties checked; what the command does not declare keeps the
    engine's default."""
    from ..engine.plan import TransferOptions

    parallel, sizes, network = run.parallel, run.sizes, run.network
    given: dict[str, Any] = {}
    if sizes is not None:
        if sizes.part_size.strip().lower() != "auto":  # given: used as given (engine/transfer/link.py)
            given.update(part_size=parse_size(sizes.part_size, "--part-size"), auto_part_size=False)
        given.update(multipart_threshold=parse_size(sizes.multipart_threshold, "--multipart-threshold"),
                     max_bytes_in_flight=parse_size(sizes.max_buffer, "--max-buffer"),
                     copy_threshold=parse_size(sizes.copy_threshold, "--copy-threshold"),
                     copy_part_size=parse_size(sizes.copy_part_size, "--copy-part-size"))
    if network is not None:
        given.update(retries=network.retries, request_timeout=network.request_timeout,
                     request_deadline=network.request_deadline, retry_max_time=network.retry_max_time,
                     adaptive=network.adaptive, max_rps=network.max_rps,
                     max_bandwidth=parse_size(network.max_bandwidth, "--max-bandwidth"))
    return TransferOptions(
        workers=parallel.workers, page_size=parallel.page_size,
        # -c N: exactly N; without it, 64 that may grow while requests are slow (engine/run/inflight.py)
        concurrency=parallel.concurrency or 64, max_concurrency=parallel.concurrency or 0,
        write_props=run.props.write_props(),  # the object-property options (cli/props.py)
        checksum_algorithm=run.checksum_algorithm, **given)


def max_memory(run: RunOptions) -> int | None:
    """--max-memory in bytes, or None."""
    text = run.sizes.max_memory if run.sizes is not None else None
    return parse_size(text, "--max-memory") if text is not None else None
