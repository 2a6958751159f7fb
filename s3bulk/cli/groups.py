"""The option groups of the command line, built from a command's values by name: what every
command runs from once its options are parsed. No typer here: a one-object `copy` whose command
line cli/quick.py reads without typer runs from the same groups (options.py declares the options
for typer and re-exports these).

Gathered once: each group (`S3Endpoints`, `NetworkOptions`, `JournalOptions`, ...) takes its
fields from a command's values by name (`RunOptions.of(params)`). A group whose options a command
does not declare is None (check moves no bytes: it has no part sizes and no network options); the
engine's own defaults then apply, which are the defaults declared in options.py. Fields that
default to "not given" (None, False) take that value when a command lacks them. The groups are
Records (config/record.py), not dataclasses: the 14 classes' generated methods were compiled at
every start-up, ~10 ms of a one-object copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, TypeVar

from ..config.record import Record
from ..errors import UsageError
from ..config.property_options import customer_keys, write_props
from ..config.sizes import parse_size
from ..config.urls import S3Options

if TYPE_CHECKING:  # the engine is imported when a command runs, not for every command's start-up
    from ..engine.job import Command, Job, JournalChoice
    from ..engine.plan import SyncOptions, TransferOptions
    from ..config.filters import Filters
    from ..model import WriteProps

Params = Mapping[str, Any]
"""A command's parameter values by name, as typer passed them."""

G = TypeVar("G")


class PropsOptions(Record):
    """The object-property options as given; each defaults to "not given" (check takes only the
    four SSE-C ones, to read both sides)."""

    content_type: Optional[str] = None
    no_guess_mime_type: bool = False
    metadata: Optional[str] = None
    cache_control: Optional[str] = None
    content_disposition: Optional[str] = None
    content_encoding: Optional[str] = None
    content_language: Optional[str] = None
    expires: Optional[str] = None
    storage_class: Optional[str] = None
    acl: Optional[str] = None
    tagging: Optional[str] = None
    sse: Optional[str] = None
    sse_kms_key_id: Optional[str] = None
    sse_c: Optional[str] = None
    sse_c_key: Optional[str] = None
    sse_c_copy_source: Optional[str] = None
    sse_c_copy_source_key: Optional[str] = None
    request_payer: Optional[str] = None
    copy_props: str = "default"
    metadata_directive: Optional[str] = None
    preserve_xattrs: bool = False

    def customer_keys(self, src: str, dst: str, src_s3: S3Options, dst_s3: S3Options) -> tuple[S3Options, S3Options]:
        """Each side's S3Options with the SSE-C key its objects are read with (config/property_options.py)."""
        return customer_keys(src, dst, src_s3, dst_s3, self.as_dict())

    def write_props(self) -> WriteProps:
        """The properties objects are written with, each value checked (a UsageError names it)."""
        given = self.as_dict()
        del given["sse_c_copy_source"], given["sse_c_copy_source_key"]  # how SRC is read, not written
        return write_props(**given)


def _field_names(cls: type) -> tuple[str, ...]:
    """A group's fields: a Record's slots, or a dataclass's fields (the commands' own choices)."""
    if issubclass(cls, Record):
        names: tuple[str, ...] = cls.__slots__
        return names
    from dataclasses import fields

    return tuple(f.name for f in fields(cls))  # type: ignore[arg-type]


def gather(cls: type[G], params: Params) -> G:
    """The group `cls` from a command's values, each field by its name; a field the command does
    not declare keeps its default (a group without defaults must be declared whole)."""
    return cls(**{name: params[name] for name in _field_names(cls) if name in params})


def gather_declared(cls: type[G], params: Params) -> G | None:
    """The group, or None when the command declares none of its options (the engine's defaults)."""
    return gather(cls, params) if any(name in params for name in _field_names(cls)) else None


class S3Connection(Record):
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


class S3SideOptions(Record):
    """One side's overrides (--src-endpoint-url, --dst-profile, ...); None: as both sides'."""

    endpoint_url: Optional[str] = None
    profile: Optional[str] = None
    region: Optional[str] = None
    no_sign_request: Optional[bool] = None

    @classmethod
    def of(cls, side: str, params: Params) -> S3SideOptions:
        """`side` is "src" or "dst": the values of its --src-*/--dst-* options."""
        return cls(**{name: params[f"{side}_{name}"] for name in _field_names(cls)})

    def over(self, base: S3Options) -> S3Options:
        return S3Connection(self.endpoint_url if self.endpoint_url is not None else base.endpoint_url,
                            self.profile if self.profile is not None else base.profile,
                            self.region if self.region is not None else base.region,
                            self.no_sign_request if self.no_sign_request is not None else base.no_sign_request,
                            base.path_style).options()


class S3Endpoints(Record):
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


class ParallelOptions(Record):
    """-w, -c, --page-size: how much runs at once."""

    workers: int
    concurrency: Optional[int]
    page_size: int


class SizeOptions(Record):
    """Part sizes, thresholds and the memory the objects in flight may hold (as typed: parsed by
    transfer_options, so a bad size is reported by the run's renderer)."""

    part_size: str
    multipart_threshold: str
    max_buffer: str
    max_memory: Optional[str]
    copy_threshold: str
    copy_part_size: str
    copy_concurrency: int = 8


class NetworkOptions(Record):
    """Retries, time limits and rate caps."""

    retries: int
    request_timeout: float
    request_deadline: float
    retry_max_time: float
    max_rps: float
    max_bandwidth: str
    adaptive: bool


class JournalOptions(Record):
    """The resume journal: where it is kept, whether to resume from it, or none at all."""

    resume: bool = False
    journal: Optional[str] = None
    journal_dir: Optional[str] = None
    no_journal: bool = False

    def check(self) -> None:
        if self.journal is not None and self.journal_dir is not None:
            raise UsageError("give --journal PATH or --journal-dir DIR, not both")

    def choice(self) -> JournalChoice:
        """The engine's JournalChoice: a journal kept by default (at --journal, or the per-run
        default path in --journal-dir), unless --no-journal."""
        from ..engine.job import JournalChoice

        return JournalChoice(path=None if self.no_journal else self.journal, default=not self.no_journal,
                             directory=self.journal_dir, resume=self.resume)


class OutputOptions(Record):
    """--json, -q, -v, --progress."""

    json_out: bool = False
    quiet: bool = False
    verbose: bool = False
    progress: Optional[bool] = None
    report: Optional[str] = None


class FilterOptions(Record):
    """--include and --exclude, the rule files, --max-depth, --exclude-if-present, the size and
    age limits (config/filters.py says how they combine)."""

    include: Optional[list[str]] = None
    exclude: Optional[list[str]] = None
    include_from: Optional[list[str]] = None
    exclude_from: Optional[list[str]] = None
    filter_from: Optional[list[str]] = None
    max_depth: Optional[int] = None
    exclude_if_present: Optional[str] = None
    min_size: Optional[str] = None
    max_size: Optional[str] = None
    min_age: Optional[str] = None
    max_age: Optional[str] = None

    @property
    def given(self) -> bool:
        return any(v is not None and v != [] for v in self.as_dict().values())

    def filters(self, argv: list[str]) -> Filters:
        """The filters (rule files read now; a bad value is a UsageError naming its option).
        --include and --exclude keep the order they were given: typer collects them into separate
        lists, so the order comes from the command line itself, `argv` (or include-then-exclude
        without one)."""
        from ..config.filters import Filters
        from ..config.filter_options import build_filters

        if not self.given:
            return Filters()
        return build_filters(self._rules(argv), include_from=self.include_from or (),
                             exclude_from=self.exclude_from or (), filter_from=self.filter_from or (),
                             max_depth=self.max_depth, exclude_if_present=self.exclude_if_present,
                             min_size=self.min_size, max_size=self.max_size, min_age=self.min_age,
                             max_age=self.max_age)

    def _rules(self, argv: list[str]) -> list[tuple[bool, str]]:
        if not self.include and not self.exclude:
            return []
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
        return rules


class ManifestOptions(Record):
    """--files-from and its format: the keys to copy, instead of listing SRC."""

    files_from: Optional[str]
    files_from_format: str

    def user_format(self) -> str:
        """--files-from-format as given, if it is one offered to users (the engine also reads an
        internal format, that of `sync --watch`'s narrowed syncs, which the command line must not
        reach); a UsageError otherwise."""
        if self.files_from_format == "auto":  # the default, one of FORMATS: no need to import the reader
            return "auto"
        from ..engine.listing.manifest import FORMATS

        if self.files_from_format not in FORMATS:
            raise UsageError(f"--files-from-format must be one of {', '.join(FORMATS)}")
        return self.files_from_format


class VersionsOptions(Record):
    """--version-id, --all-versions, --include-delete-markers, --as-of (copy and mv)."""

    version_id: Optional[str] = None
    all_versions: bool = False
    include_delete_markers: bool = False
    as_of: Optional[str] = None

    @property
    def given(self) -> bool:
        return self.version_id is not None or self.all_versions or self.include_delete_markers or \
            self.as_of is not None


class GuardOptions(Record):
    """--no-clobber, --update, copy's and mv's --dry-run (`copy_dry_run`: sync's own is its
    SyncChoice's), --max-transfer, --max-duration (copy, sync, mv); copy's and mv's --backup-dir
    and --suffix (`copy_backup_dir`, `copy_suffix`: sync's are its SyncChoice's)."""

    no_clobber: bool = False
    update: bool = False
    copy_dry_run: bool = False
    max_transfer: Optional[str] = None
    max_duration: Optional[str] = None
    copy_backup_dir: Optional[str] = None
    copy_suffix: str = ""

    @property
    def given(self) -> bool:
        return self.no_clobber or self.update or self.copy_dry_run or self.max_transfer is not None or \
            self.max_duration is not None or self.copy_backup_dir is not None or bool(self.copy_suffix)

    def engine_options(self) -> dict[str, Any]:
        """The TransferOptions fields they set, sizes and durations parsed (a UsageError names the option)."""
        from ..config.sizes import parse_duration

        out: dict[str, Any] = {"no_clobber": self.no_clobber, "update": self.update, "dry_run": self.copy_dry_run}
        if self.copy_suffix and not self.copy_backup_dir:
            raise UsageError("--suffix goes with --backup-dir")
        if self.copy_backup_dir:
            out.update(backup_dir=self.copy_backup_dir, backup_suffix=self.copy_suffix)
        if self.max_transfer is not None:
            out["max_transfer"] = parse_size(self.max_transfer, "--max-transfer")
            if out["max_transfer"] <= 0:
                raise UsageError("--max-transfer must be more than 0 bytes")
        if self.max_duration is not None:
            out["max_duration"] = parse_duration(self.max_duration, "--max-duration")
            if out["max_duration"] <= 0:
                raise UsageError("--max-duration must be longer than 0 seconds")
        return out


class RunOptions(Record):
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
    force_archived: bool = False       # --force-archived (engine/transfer/archived.py)
    guards: GuardOptions = GuardOptions()  # --no-clobber, --update, --dry-run (copy, mv), --max-transfer, --max-duration
    verify: bool = False               # --verify (engine/transfer/verify.py)

    @classmethod
    def of(cls, params: Params) -> RunOptions:
        return cls(src=params["src"], dst=params["dst"], s3=S3Endpoints.of(params),
                   parallel=gather(ParallelOptions, params), sizes=gather_declared(SizeOptions, params),
                   network=gather_declared(NetworkOptions, params), journal=gather(JournalOptions, params),
                   output=gather(OutputOptions, params), filters=gather(FilterOptions, params),
                   props=gather(PropsOptions, params), manifest=gather_declared(ManifestOptions, params),
                   versions=gather(VersionsOptions, params), cluster=params.get("cluster"),
                   checksum_algorithm=params.get("checksum_algorithm"), expected_size=params.get("expected_size"),
                   metrics=params.get("metrics"), metrics_linger=params.get("metrics_linger") or 0.0,
                   force_archived=bool(params.get("force_archived")), guards=gather(GuardOptions, params),
                   verify=bool(params.get("verify")))

    def job(self, command: Command, sync: SyncOptions | None, sides: tuple[S3Options, S3Options],
            options: TransferOptions, *, report_objects: bool) -> Job:
        """The one request the engine runs (engine/job.py), from these groups and what the command
        made of them already: each side's S3Options (`sides`, SSE-C keys in) and the engine's
        TransferOptions. The manifest's format is checked here, the memory budget and the
        filters read (in this order: a UsageError names the first option that is wrong)."""
        from ..engine.job import Job, Manifest
        from . import shell

        manifest = None
        if self.manifest is not None:  # check reads no manifest
            files_from, files_from_format = self.manifest.files_from, self.manifest.user_format()
            manifest = None if files_from is None else Manifest(files_from, files_from_format)
        budget = max_memory(self)
        return Job(command, self.src, self.dst, options=options, sync=sync, src_s3=sides[0], dst_s3=sides[1],
                   filters=self.filters.filters(shell.ARGV), manifest=manifest, journal=self.journal.choice(),
                   max_memory=budget, report=self.output.report, report_objects=report_objects)


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
                     copy_part_size=parse_size(sizes.copy_part_size, "--copy-part-size"),
                     copy_concurrency=sizes.copy_concurrency)
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
        checksum_algorithm=run.checksum_algorithm, force_archived=run.force_archived, verify=run.verify,
        **run.guards.engine_options(), **given)


def max_memory(run: RunOptions) -> int | None:
    """--max-memory in bytes, or None."""
    text = run.sizes.max_memory if run.sizes is not None else None
    return parse_size(text, "--max-memory") if text is not None else None
