"""The Python API: the same operations as the command line, without any terminal output."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Generator, Iterator, Sequence, TypeVar, cast

from .engine.plan import TransferOptions
from .filters import Filters
from .model import ObjectInfo, Summary, WorkUnit
from .urls import Location, S3Options, parse_location


FilterRules = Sequence[tuple[str, str]]  # ("include" | "exclude", glob), in order; the last match wins
T = TypeVar("T")


def copy(src: str, dst: str, *, options: TransferOptions | None = None,
         src_s3: S3Options | None = None, dst_s3: S3Options | None = None,
         on_event: Callable[[str, Any], None] | None = None, max_memory: int | str | None = None,
         start: WorkUnit | None = None, should_stop: Callable[[], bool] | None = None,
         journal: str | None = None, resume: bool = False, files_from: str | None = None,
         files_from_format: str = "auto", include: Sequence[str] = (), exclude: Sequence[str] = (),
         filters: FilterRules | None = None, cluster: Any = None, move: bool = False) -> Summary:
    """Copy SRC to DST (see `s3bulk copy --help` for the URL forms). Raises S3BulkError when
    nothing could start (bad URL, bad option: UsageError, missing bucket, ...); per-object failures
    are in the Summary.

    options: TransferOptions (sizes as numbers or strings such as "8MiB"; checked when built).
    max_memory: stay under this much RSS, bytes or "128MiB" (workers, transfers and parts are derived).
    start / should_stop: continue from a unit an earlier run returned as `summary.resume`; stop
    taking new work once should_stop() is true (the summary then says where to resume).
    journal / resume: keep a resume journal in this file (none by default in the API; the command
    line keeps one by default); resume=True continues the interrupted run it records (UsageError
    when there is none, or it belongs to another run). A complete run removes its journal.
    files_from: copy the keys this manifest names instead of listing SRC (see `--files-from`).
    include / exclude / filters: as `--include` / `--exclude` (filters keeps their order).
    move: delete each source object once its copy has landed (`s3bulk mv`); a copy that failed or
    was interrupted never deletes its source.
    cluster: run the work units as tasks on a Dask cluster: a scheduler address (tcp://host:8786),
    "local" / "local:N" (a LocalCluster of N worker processes), or a distributed.Client (left open).
    Needs `pip install 's3bulk[dask]'` (UsageError otherwise).
    on_event(kind, payload): "progress" (engine.pool.Progress: counters, listing_done, elapsed),
    "failure" (model.Failure), "stopping"; for sync(dry_run=True) also "dryrun"
    (engine.events.DryRunAction) per key.
    Ctrl-C (in the main thread) stops gracefully: the summary comes back with interrupted=True.
    Inside a running event loop (Jupyter, an async app) use `acopy`."""
    return _run("mv" if move else "copy", src, dst, None, options=options, src_s3=src_s3, dst_s3=dst_s3, on_event=on_event,
                max_memory=max_memory, start=start, should_stop=should_stop, journal=journal, resume=resume,
                files_from=files_from, files_from_format=files_from_format,
                filters=_filters(include, exclude, filters), cluster=cluster, move=move)


def sync(src: str, dst: str, *, delete: bool = False, dry_run: bool = False, compare: str = "default",
         hash_cache: str | None = None, options: TransferOptions | None = None,
         src_s3: S3Options | None = None, dst_s3: S3Options | None = None,
         on_event: Callable[[str, Any], None] | None = None, max_memory: int | str | None = None,
         journal: str | None = None, resume: bool = False, include: Sequence[str] = (),
         exclude: Sequence[str] = (), filters: FilterRules | None = None, cluster: Any = None) -> Summary:
    """Make DST hold what SRC holds, as `s3bulk sync`: copy what is missing or different, skip
    what is equal, and with delete=True remove DST keys SRC lacks (not those filtered out).
    compare: "default" (size, or SRC newer), "size-only", "exact-timestamps" or "checksum".
    dry_run prints what would be done (one line each, on stdout; on_event gets each as
    ("dryrun", engine.events.DryRunAction)) and changes nothing.
    The other arguments are as for `copy`."""
    from .engine.sync import SyncOptions
    from .errors import UsageError

    if compare not in ("default", "size-only", "exact-timestamps", "checksum"):
        raise UsageError(f"compare must be default, size-only, exact-timestamps or checksum, not {compare!r}")
    if resume and dry_run:
        raise UsageError("resume needs the journal, which a dry run does not keep")
    rules = _filters(include, exclude, filters)
    sync_options = SyncOptions(delete=delete, dry_run=dry_run, compare=compare,  # type: ignore[arg-type]
                               hash_cache=hash_cache)
    if dry_run:  # the would-be actions as lines on stdout, as ever; on_event sees them too ("dryrun")
        import sys

        from .engine.events import printing_lines

        on_event = printing_lines(on_event, sys.stdout)
    return _run("sync", src, dst, sync_options, options=options, src_s3=src_s3, dst_s3=dst_s3,
                on_event=on_event, max_memory=max_memory, journal=None if dry_run else journal, resume=resume,
                filters=rules, cluster=cluster)


def move(src: str, dst: str, **kwargs: Any) -> Summary:
    """`s3bulk mv`: `copy` (every argument as for it) with move=True."""
    return copy(src, dst, move=True, **kwargs)


def check(src: str, dst: str, *, checksum: bool = False, one_way: bool = False, json_lines: bool = False,
          hash_cache: str | None = None, options: TransferOptions | None = None,
          src_s3: S3Options | None = None, dst_s3: S3Options | None = None,
          on_event: Callable[[str, Any], None] | None = None, include: Sequence[str] = (),
          exclude: Sequence[str] = (), filters: FilterRules | None = None) -> "CheckResult":
    """`s3bulk check`: compare SRC with DST as `sync` would, changing nothing (a sync dry run that
    names each difference). By size, or with checksum=True by content too; one_way=True leaves out
    keys only in DST. Each difference is printed on stdout as the command line prints it (one line,
    or a JSON `difference` event with json_lines=True; on_event gets each as ("difference",
    engine.events.Difference)), as it comes, so memory stays flat however many there are; the counts
    come back in a CheckResult."""
    import sys

    from .engine.events import printing_lines
    from .engine.sync import SyncOptions

    rules = _filters(include, exclude, filters)
    opts = SyncOptions(delete=not one_way, dry_run=True, compare="checksum" if checksum else "size-only",
                       hash_cache=hash_cache, check=True)
    on_event = _json_lines(on_event, sys.stdout) if json_lines else printing_lines(on_event, sys.stdout)
    summary = _run("check", src, dst, opts, options=options, src_s3=src_s3, dst_s3=dst_s3, on_event=on_event,
                   max_memory=None, journal=None, resume=False, filters=rules)
    return CheckResult(summary)


def _json_lines(on_event: Callable[[str, Any], None] | None, out: Any) -> Callable[[str, Any], None]:
    """An event sink that prints each dry-run / check event as a JSON line (schema v1) on `out`,
    then passes every event on to `on_event`."""
    import json

    from .engine.events import Difference, DryRunAction

    def sink(kind: str, payload: Any) -> None:
        if kind in (DryRunAction.event, Difference.event):
            out.write(json.dumps({"v": 1, **payload.json_fields()}, ensure_ascii=False) + "\n")
        elif kind == "progress":
            out.flush()
        if on_event is not None:
            on_event(kind, payload)

    return sink


class CheckResult:
    """What `check` found: `identical` (no difference and no failure), the counts of keys
    `identical_objects`, `only_in_src_or_differs`, `only_in_dst`, and the run's Summary."""

    __slots__ = ("summary",)

    def __init__(self, summary: Summary) -> None:
        self.summary = summary

    @property
    def identical_objects(self) -> int:
        return self.summary.counters.skipped

    @property
    def only_in_src_or_differs(self) -> int:
        return self.summary.counters.done

    @property
    def only_in_dst(self) -> int:
        return self.summary.counters.deleted

    @property
    def identical(self) -> bool:
        c = self.summary.counters
        return not (c.done or c.deleted or c.failed) and not self.summary.fatal

    def __repr__(self) -> str:
        return (f"CheckResult(identical={self.identical}, identical_objects={self.identical_objects}, "
                f"only_in_src_or_differs={self.only_in_src_or_differs}, only_in_dst={self.only_in_dst})")


async def acopy(src: str, dst: str, **kwargs: Any) -> Summary:
    """`copy` for use inside a running event loop: the run goes on in a thread of its own (its
    workers are processes or that thread's own event loop), so the caller's loop stays free."""
    return await asyncio.to_thread(lambda: copy(src, dst, **kwargs))


async def async_sync(src: str, dst: str, **kwargs: Any) -> Summary:
    """`sync` for use inside a running event loop (see `acopy`)."""
    return await asyncio.to_thread(lambda: sync(src, dst, **kwargs))


def _filters(include: Sequence[str], exclude: Sequence[str], rules: FilterRules | None) -> Filters:
    from .errors import UsageError

    if isinstance(include, str) or isinstance(exclude, str):
        raise UsageError("include and exclude take lists of globs")
    out = [(True, g) for g in include] + [(False, g) for g in exclude]
    for kind, glob in rules or ():
        if kind not in ("include", "exclude"):
            raise UsageError(f"filters are ('include' | 'exclude', glob) pairs, not {kind!r}")
        out.append((kind == "include", glob))
    return Filters(tuple(out))


def _run(command: str, src: str, dst: str, sync_options: Any, *, options: TransferOptions | None,
         src_s3: S3Options | None, dst_s3: S3Options | None, on_event: Callable[[str, Any], None] | None,
         max_memory: int | str | None, journal: str | None, resume: bool, filters: Filters,
         start: WorkUnit | None = None, should_stop: Callable[[], bool] | None = None,
         files_from: str | None = None, files_from_format: str = "auto", default_journal: bool = False,
         around_run: Callable[[], Any] | None = None, cluster: Any = None, move: bool = False,
         report_objects: bool = False, journal_dir: str | None = None) -> Summary:
    """The one orchestration path under the CLI, the API, the Lambda handler and the cluster
    driver: options fitted to a memory budget, the manifest (stdin spooled), the plan, the journal
    (`default_journal`: the per-run default path when `journal` is None, as the CLI keeps one),
    the run. `journal_dir`: where default journals live (stale ones there are pruned: journal.py
    prune_stale). `report_objects`: on_event also sees "copied" and "deleted" per object (--json -v).
    `around_run()` is a context entered just around the run itself (the CLI's display
    and signal handling). Raises S3BulkError for anything that stops the run from starting."""
    import contextlib
    import os

    from .engine.planner import build_plan
    from .engine.pool import run_plan
    from .errors import NotFound, UsageError

    options = options or TransferOptions()
    if cluster is not None:
        from .engine.cluster import import_distributed

        import_distributed()  # one clear error before any work
    if max_memory is not None:
        from .engine.budget import fit_to_memory
        from .sizes import parse_size

        max_rss = parse_size(max_memory, "max_memory") if isinstance(max_memory, str) else int(max_memory)
        options = fit_to_memory(options, max_rss, src, dst)
    dry_run = bool(sync_options is not None and sync_options.dry_run)
    if resume and (dry_run or (journal is None and not default_journal)):
        raise UsageError("--resume needs the journal (not with --no-journal or --dry-run; "
                         "in the API: journal=PATH)")
    manifest, manifest_name = _spool_manifest(files_from, files_from_format, src_s3)
    spooled = manifest if manifest != files_from else None
    if spooled:
        files_from_format = "lines" if files_from == "-" else "csv"
    try:
        try:
            plan = asyncio.run(build_plan(src, dst, src_s3=src_s3, dst_s3=dst_s3, options=options, filters=filters,
                                          sync=sync_options, files_from=manifest,
                                          files_from_format=files_from_format,
                                          files_from_name=manifest_name, move=move))
        except NotFound as exc:
            if not (move and resume and _names_nothing(exc)):
                raise
            # `mv ... --resume` run again after it completed: the sources are gone, which is done
            if on_event is not None:
                on_event("notice", f"nothing left to move under {src}")
            return Summary()
        if report_objects:
            import dataclasses

            plan = dataclasses.replace(plan, report_objects=True)
        run_journal = None
        if not dry_run and (journal is not None or default_journal):
            from .engine.journal import Journal, default_path, prune_stale

            path = os.path.abspath(os.path.expanduser(journal)) if journal else \
                default_path(plan, command, journal_dir)
            run_journal = Journal.open(path, plan, command, resume=resume)
            if not journal:
                prune_stale(os.path.dirname(path), keep=path)
            if run_journal.nothing_to_resume and on_event is not None:
                on_event("notice", f"nothing to resume (no journal at {path}): starting from the beginning")
        with around_run() if around_run is not None else contextlib.nullcontext():
            summary = run_plan(plan, on_event, start=start, should_stop=should_stop, journal=run_journal,
                               cluster=cluster)
    finally:
        if spooled:
            os.unlink(spooled)
    summary.dry_run = dry_run
    return summary


def _names_nothing(exc: Exception) -> bool:
    """Whether a NotFound says an S3 prefix holds nothing (not that the bucket is missing, nor a
    local directory: a typo there must not pass for a finished run)."""
    return getattr(exc, "message", "").startswith("no such key or prefix")


def _spool_manifest(files_from: str | None, fmt: str, s3: S3Options | None) -> tuple[str | None, str | None]:
    """(the file the run reads its keys from, the name its journal knows the manifest by): stdin
    and S3 Inventory reports are spooled into a local file first (engine/manifest.py, inventory.py)."""
    import os

    if files_from is None:
        return None, None
    if files_from == "-":
        from .engine.manifest import spool_stdin

        return spool_stdin(), "-"
    from .engine.inventory import is_inventory, spool_local, spool_s3

    if not is_inventory(files_from, fmt):
        return files_from, None
    if files_from.lower().startswith("s3://"):
        return asyncio.run(spool_s3(files_from, s3)), files_from
    return spool_local(files_from), os.path.abspath(files_from)


LS_SPILL_BYTES = 1 << 30  # ordered `ls`: pages listed ahead of the output, on disk at most (engine/spill.py)


async def alist_pages(url: str, *, s3: S3Options | None = None, page_size: int = 1000,
                      concurrency: int = 16, ordered: bool = True) -> AsyncGenerator[list[ObjectInfo], None]:
    """Every object URL names, a page at a time, in key order. URL is read as `copy` reads SRC:
    s3://BUCKET/NAME is the object NAME if there is one, else everything under NAME/ (NotFound when
    neither exists). The key space is split into ranges listed `concurrency` at a time
    (engine/listing.py); 1 lists through a single chain. Pages listed ahead of the output wait in
    temporary files under $TMPDIR (engine/spill.py; at most LS_SPILL_BYTES, removed as they are
    yielded and when the listing ends), so memory stays flat. `ordered=False` yields pages as they
    arrive (each in key order within itself): faster, nothing held."""
    from .engine.listing import list_in_order

    def pages(store: Any, prefix: str, starts: list[WorkUnit] | None,
              sample: Any) -> AsyncGenerator[list[ObjectInfo], None]:
        return list_in_order(store, prefix, page_size=page_size, concurrency=concurrency,
                             max_streams=max(64, 2 * concurrency), ordered=ordered, starts=starts, sample=sample,
                             spill_bytes=LS_SPILL_BYTES)

    listed = _listed(url, s3, concurrency, lambda one: one, pages)
    try:
        async for entries in listed:
            yield entries
    finally:
        await listed.aclose()  # its listings end now, not when collected (after the loop is closed)


async def alist_rendered(url: str, render: Callable[[list[ObjectInfo]], str], *, s3: S3Options | None = None,
                         concurrency: int = 16, ordered: bool = True) -> AsyncGenerator[str, None]:
    """`alist_pages`, each page turned into text by `render` as soon as it is listed (the CLI's
    `ls`): a page listed ahead of the output then waits as its text, and one spilled to disk is
    written and read back as UTF-8, not as objects."""
    from .engine.listing import render_in_order

    def texts(store: Any, prefix: str, starts: list[WorkUnit] | None, sample: Any) -> AsyncGenerator[str, None]:
        return render_in_order(store, prefix, render, concurrency=concurrency, max_streams=max(64, 2 * concurrency),
                               ordered=ordered, starts=starts, sample=sample, spill_bytes=LS_SPILL_BYTES)

    listed = _listed(url, s3, concurrency, render, texts)
    try:
        async for text in listed:
            yield text
    finally:
        await listed.aclose()


async def _listed(url: str, s3: S3Options | None, concurrency: int, one: Callable[[list[ObjectInfo]], Any],
                  listing: Callable[[Any, str, list[WorkUnit] | None, Any], AsyncGenerator[Any, None]]
                  ) -> AsyncGenerator[Any, None]:
    """What `ls` of URL lists: `one([object])` when URL names one object, else `listing(store,
    prefix, start units from hints, boundary sample)`; the sample is saved when it lists to the end."""
    from .engine import hints
    from .engine.planner import resolve_source
    from .stores import open_store

    src, single = await resolve_source(url, s3)
    store = await open_store(src)
    try:
        if single is not None:
            yield one([await store.head(single)])
            return
        sample = starts = None
        if getattr(store, "ordered", False) and concurrency > 1 and hints.enabled():
            sample, starts = hints.BoundarySample(), hints.start_units(src, concurrency)
        items = listing(store, src.prefix, starts, sample)
        try:
            async for item in items:
                yield item
        finally:
            await items.aclose()
        if sample is not None:  # listed to the end: where its pages ended, for the next listing
            hints.save(src, sample)
    finally:
        await store.close()


async def alist(url: str, *, s3: S3Options | None = None, page_size: int = 1000,
                concurrency: int = 16, ordered: bool = True) -> AsyncIterator[ObjectInfo]:
    """Every object URL names, in key order unless `ordered=False` (see `alist_pages`)."""
    async for entries in alist_pages(url, s3=s3, page_size=page_size, concurrency=concurrency, ordered=ordered):
        for entry in entries:
            yield entry


def ls_pages(url: str, *, s3: S3Options | None = None, page_size: int = 1000,
             concurrency: int = 16, ordered: bool = True) -> Iterator[list[ObjectInfo]]:
    """Synchronous form of `alist_pages`: runs its own event loop, one step per page."""
    return _stepped(alist_pages(url, s3=s3, page_size=page_size, concurrency=concurrency, ordered=ordered))


def ls_rendered(url: str, render: Callable[[list[ObjectInfo]], str], *, s3: S3Options | None = None,
                concurrency: int = 16, ordered: bool = True) -> Generator[str, None, None]:
    """Synchronous form of `alist_rendered`: runs its own event loop, one step per page."""
    return _stepped(alist_rendered(url, render, s3=s3, concurrency=concurrency, ordered=ordered))


def _stepped(agen: AsyncGenerator[T, None]) -> Generator[T, None, None]:
    """An async generator driven from synchronous code by an event loop of its own, one item per
    step; closing the generator (or a consumer that stops early) closes the async one in that loop."""
    loop = asyncio.new_event_loop()
    step: asyncio.Future[T] | None = None
    try:
        while True:
            step = asyncio.ensure_future(agen.__anext__(), loop=loop)
            try:
                yield loop.run_until_complete(step)
            except StopAsyncIteration:
                return
    finally:
        if step is not None and not step.done():  # interrupted (Ctrl-C) in the middle of a step
            step.cancel()
            try:
                _settle(loop, step)
            except (asyncio.CancelledError, Exception):
                pass  # the generator ended with it; aclose() below is then a no-op
        _settle(loop, asyncio.ensure_future(agen.aclose(), loop=loop))
        loop.close()


def _settle(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any]) -> Any:
    """loop.run_until_complete(fut), also after Ctrl-C interrupted an earlier run of the loop between
    its step's end and the callback that stops the loop: that stop, still queued, ends the next run
    early ('Event loop stopped before Future completed'); the loop is simply run again."""
    while True:
        try:
            return loop.run_until_complete(fut)
        except RuntimeError:
            if fut.done():
                raise


def ls(url: str, *, s3: S3Options | None = None, page_size: int = 1000,
       concurrency: int = 16, ordered: bool = True) -> Iterator[ObjectInfo]:
    """Synchronous form of `alist`."""
    for entries in ls_pages(url, s3=s3, page_size=page_size, concurrency=concurrency, ordered=ordered):
        yield from entries


def du_groups(url: str, *, s3: S3Options | None = None, depth: int = 0, concurrency: int = 16,
              classes: dict[str, list[int]] | None = None) -> Iterator[tuple[str | None, int, int]]:
    """(prefix, objects, bytes) for each prefix `depth` levels below URL, in key order, then
    (None, objects, bytes) for everything. Keys arrive in order, so a prefix is complete when the
    next one starts: one running total at a time, whatever the number of prefixes. `classes`, when
    given, is filled with storage class -> [objects, bytes] (S3 sources; listed as S3 says them)
    by the time the total comes."""
    from .engine.planner import resolve_source

    loop = asyncio.new_event_loop()
    try:
        src, single = loop.run_until_complete(resolve_source(url, s3))
    finally:
        loop.close()
    cut = 0 if single is not None else len(src.prefix)
    total_o = total_b = 0
    group: str | None = None
    group_o = group_b = 0
    for page in ls_pages(url, s3=s3, concurrency=concurrency):
        for obj in page:
            size = obj.size or 0
            total_o += 1
            total_b += size
            if classes is not None and obj.storage_class is not None:
                row = classes.get(obj.storage_class)
                if row is None:
                    row = classes[obj.storage_class] = [0, 0]
                row[0] += 1
                row[1] += size
            if depth:
                rel = obj.key[cut:]
                parts = rel.split("/", depth)
                name = "/".join(parts[:depth]) + ("/" if len(parts) > depth else "")
                if name != group:
                    if group is not None:
                        yield group, group_o, group_b
                    group, group_o, group_b = name, 0, 0
                group_o += 1
                group_b += size
    if group is not None:
        yield group, group_o, group_b
    yield None, total_o, total_b


class DuResult:
    """What `du` counted: `objects` and `bytes` under the URL, with depth > 0 `groups`, a list of
    (prefix, objects, bytes) in key order, and `classes`, storage class -> (objects, bytes) for an S3
    source."""

    __slots__ = ("objects", "bytes", "groups", "classes")

    def __init__(self, objects: int, nbytes: int, groups: list[tuple[str, int, int]],
                 classes: dict[str, tuple[int, int]] | None = None) -> None:
        self.objects = objects
        self.bytes = nbytes
        self.groups = groups
        self.classes = classes or {}

    def __repr__(self) -> str:
        return f"DuResult(objects={self.objects}, bytes={self.bytes}, groups={len(self.groups)})"


def du(url: str, *, s3: S3Options | None = None, depth: int = 0, concurrency: int = 16) -> DuResult:
    """`s3bulk du`: the objects and bytes under URL (read as `copy` reads SRC), from the parallel
    listing; with depth=N also per prefix N '/'-separated levels below URL (kept in a list: use
    `du_groups` to stream them when there are very many)."""
    groups: list[tuple[str, int, int]] = []
    classes: dict[str, list[int]] = {}
    for prefix, objects, nbytes in du_groups(url, s3=s3, depth=depth, concurrency=concurrency, classes=classes):
        if prefix is None:
            return DuResult(objects, nbytes, groups, {k: (v[0], v[1]) for k, v in sorted(classes.items())})
        groups.append((prefix, objects, nbytes))
    raise AssertionError("du_groups ends with the total")


class RmResult:
    """What `rm` did: keys deleted, and (url, why) for each key that could not be.
    resumed_deleted: keys an interrupted run had deleted (from its journal, with resume=True);
    nothing_left: resume=True found the prefix already empty (a completed run, run again)."""

    __slots__ = ("deleted", "failures", "dry_run", "resumed_deleted", "nothing_left", "journal")

    def __init__(self, dry_run: bool) -> None:
        self.deleted = 0
        self.failures: list[tuple[str, str]] = []
        self.dry_run = dry_run
        self.resumed_deleted = 0
        self.nothing_left = False
        self.journal: str | None = None  # the journal kept for resuming (None once a run completed)

    @property
    def ok(self) -> bool:
        return not self.failures

    def __repr__(self) -> str:
        return f"RmResult(deleted={self.deleted}, failed={len(self.failures)}, dry_run={self.dry_run})"


def rm(url: str, *, s3: S3Options | None = None, include: Sequence[str] = (), exclude: Sequence[str] = (),
       filters: FilterRules | None = None, dry_run: bool = False, all_objects: bool = False,
       on_key: Callable[[str, str | None], None] | None = None, concurrency: int = 8,
       journal: str | None = None, resume: bool = False, default_journal: bool = False,
       on_notice: Callable[[str], None] | None = None, max_rps: float = 0.0, retries: int = 5,
       all_versions: bool = False) -> RmResult:
    """Delete every object URL names (read as `copy` reads SRC: one object, or everything under a
    prefix), listing in parallel and deleting in batches of 1,000 keys (S3 DeleteObjects), `concurrency`
    batches at once. A key the server refuses (an error inside DeleteObjects' 200 answer) is reported,
    not counted as deleted. Emptying a whole bucket needs all_objects=True, so a typo cannot do it.
    on_key(url, None) for each key deleted (or, in a dry run, to be deleted); on_key(url, why) for
    each failure.
    journal / resume: record the deleted key ranges in this file (engine/rmjournal.py; the CLI keeps
    one by default: default_journal=True); resume=True lists only what the interrupted run it
    records had not deleted. With resume=True and no journal the run starts from the beginning, and
    a prefix already empty is no error (the same line run again after it completed): on_notice(line)
    says so. A complete run removes its journal.
    max_rps / retries: as `--max-rps` / `--retries` (requests per second, listing included; retries of
    a throttled or failed request, with AIMD on SlowDown as for copy).
    all_versions: delete every version and delete marker too (versions.py; no journal)."""
    from .errors import UsageError

    if all_versions:
        if resume:
            raise UsageError("--all-versions keeps no journal: run it again instead of --resume")
        return _rm_versions(url, s3, _filters(include, exclude, filters), dry_run, all_objects, on_key)
    if resume and (dry_run or (journal is None and not default_journal)):
        raise UsageError("--resume needs the journal (not with --no-journal or --dry-run; "
                         "in the API: journal=PATH)")
    return asyncio.run(_rm(url, s3, _filters(include, exclude, filters), dry_run, all_objects, on_key, concurrency,
                           None if dry_run else journal, resume, default_journal and not dry_run,
                           on_notice or (lambda line: None), max_rps, retries))


def _rm_versions(url: str, s3: S3Options | None, rules: Filters, dry_run: bool, all_objects: bool,
                 on_key: Callable[[str, str | None], None] | None) -> RmResult:
    """rm(all_versions=True): every version and delete marker for good (versions.py); on_key gets
    each one's URL with ?versionId=."""
    from .versions import rm_versions

    done = asyncio.run(rm_versions(url, s3=s3, filters=rules, dry_run=dry_run, all_objects=all_objects,
                                   on_key=on_key))
    result = RmResult(dry_run)
    result.deleted, result.failures = done.versions + done.markers, done.failures
    return result


def copy_versions(src: str, dst: str, *, version_id: str | None = None, include_delete_markers: bool = False,
                  options: TransferOptions | None = None, src_s3: S3Options | None = None,
                  dst_s3: S3Options | None = None, include: Sequence[str] = (), exclude: Sequence[str] = (),
                  filters: FilterRules | None = None,
                  on_version: Callable[[str, str, str | None], None] | None = None,
                  as_of: float | None = None, journal: str | None = None, resume: bool = False) -> Any:
    """`copy --version-id` (SRC names one key), `copy --all-versions` or `copy --as-of` (epoch
    seconds): see versions.copy_versions. journal=PATH records the versions that land there, and
    resume=True skips those an earlier run with that journal copied (versions_journal.py)."""
    from .versions import copy_versions as run

    rules = _filters(include, exclude, filters)
    run_journal = None
    if journal is not None:
        from .versions_journal import open_for

        run_journal = open_for(src, dst, src_s3, dst_s3, include_delete_markers=include_delete_markers,
                               as_of=as_of, filters=rules, path=journal, resume=resume)
    complete = False
    try:
        result = asyncio.run(run(src, dst, src_s3=src_s3, dst_s3=dst_s3, options=options, version_id=version_id,
                                 include_delete_markers=include_delete_markers, filters=rules,
                                 on_version=on_version, as_of=as_of, journal=run_journal))
        complete = not result.failures and not result.interrupted
    finally:
        if run_journal is not None:
            run_journal.close(complete=complete)
    return result


async def _rm(url: str, s3: S3Options | None, rules: Filters, dry_run: bool, all_objects: bool,
              on_key: Callable[[str, str | None], None] | None, concurrency: int, journal_path: str | None,
              resume: bool, default_journal: bool, notice: Callable[[str], None], max_rps: float = 0.0,
              retries: int = 5) -> RmResult:
    from .engine.listing import list_in_order
    from .engine.planner import resolve_source
    from .errors import NotFound, UsageError
    from .stores import Writer, open_store

    result = RmResult(dry_run)
    keep_journal = journal_path is not None or default_journal
    try:
        src, single = await resolve_source(url, s3)
    except NotFound as exc:
        if not (resume and _names_nothing(exc)):
            raise
        # the same `rm ... --resume` line run again after it completed: nothing is left, which is done
        from .engine.planner import _as_dir
        from .engine.rmjournal import open_rm_journal

        loc = parse_location(url, s3)
        j = open_rm_journal(loc.with_prefix(_as_dir(loc.prefix)), rules, journal_path, resume=True)
        j.finish(complete=True)
        notice(f"nothing left to delete under {url}")
        result.nothing_left = True
        return result
    if src.kind == "http":
        raise UsageError("a list/get server is read-only: nothing can be deleted there")
    if single is None and not src.prefix and not all_objects:
        raise UsageError(f"{url} is a whole bucket: add --all to delete every object in it")
    run_journal = None
    if keep_journal and single is None:
        from .engine.rmjournal import open_rm_journal

        run_journal = open_rm_journal(src, rules, journal_path, resume=resume)
        result.journal = run_journal.path
        if run_journal.nothing_to_resume:
            notice(f"nothing to resume (no journal at {run_journal.path}): starting from the beginning")
        elif run_journal.resumed:
            result.resumed_deleted = run_journal.done_totals()[0]
    from .stores import StoreOptions
    from .stores.resilient import ResilienceOptions

    store = await open_store(src, StoreOptions(resilience=ResilienceOptions(retries=retries, max_rps=max_rps)))
    note = on_key or (lambda u, why: None)
    allowed = rules.compiled().allows if rules else None
    window = asyncio.Semaphore(concurrency)
    tasks: set[asyncio.Task[None]] = set()

    async def delete(batch: list[str], after: str | None, until: str | None) -> None:
        try:
            writer = cast(Writer, store)  # checked below, before the first batch
            failed = dict(await writer.delete_many(batch)) if not dry_run and batch else {}
        finally:
            window.release()
        for key in batch:
            why = failed.get(key)
            if why is None:
                result.deleted += 1
            else:
                result.failures.append((src.url_for(key), why))
            note(src.url_for(key), why)
        if run_journal is not None and not failed:
            # every key of (after, until] is gone: a resume need not list it again
            run_journal.unit_done(WorkUnit(after=after, until=until), None, len(batch), 0)
            run_journal.commit()

    async def launch(batch: list[str], after: str | None, until: str | None) -> None:
        await window.acquire()
        tasks.add(asyncio.ensure_future(delete(batch, after, until)))

    complete = False
    try:
        if not isinstance(store, Writer):
            raise UsageError(f"{url} cannot be written to")
        units = run_journal.resume_units() if run_journal is not None and run_journal.resumed else [WorkUnit()]
        cut = len(src.prefix)
        for unit in units:
            pages = (_one(single, store) if single is not None
                     else list_in_order(store, src.prefix, page_size=1000, concurrency=16, start=unit))
            batch: list[str] = []
            after = unit.after  # the batch being filled covers (after, its last listed key]
            last = after
            async for page in pages:
                for obj in page:
                    last = obj.key
                    if allowed is None or allowed(obj.key[cut:]):
                        batch.append(obj.key)
                    if len(batch) == 1000:
                        await launch(batch, after, last)
                        batch, after = [], last
            if batch or after != unit.until:
                await launch(batch, after, unit.until)
        if tasks:
            await asyncio.gather(*tasks)
        complete = not result.failures
    finally:
        for t in tasks:
            t.cancel()
        await store.close()
        if run_journal is not None:
            run_journal.finish(complete=complete)
            if complete:
                result.journal = None
    return result


async def _one(key: str, store: Any) -> AsyncIterator[list[ObjectInfo]]:
    yield [await store.head(key)]


def upload_stream(stream: Any, dst: str, *, s3: S3Options | None = None, options: TransferOptions | None = None,
                  max_memory: int | str | None = None, expected_size: int | str | None = None) -> Any:
    """`s3bulk copy - DST`: everything `stream` yields (a binary file object, or a file descriptor)
    becomes the one object DST names; one PUT when it fits a part, else a multipart upload that is
    aborted on any failure or Ctrl-C. Returns engine.pipe.PipeResult (url, bytes, parts)."""
    from .engine.pipe import pipe_options, run_pipe, stream_reader

    opts = pipe_options(options or TransferOptions(), max_memory=_size(max_memory, "max_memory"),
                        expected_size=_size(expected_size, "expected_size"), upload=True, src="-", dst=dst)
    return run_pipe(dst, s3, opts, read=stream_reader(stream))


def download_stream(src: str, stream: Any, *, s3: S3Options | None = None, options: TransferOptions | None = None,
                    max_memory: int | str | None = None) -> Any:
    """`s3bulk copy SRC -`: the one object SRC names, written to `stream` (a binary file object, or
    a file descriptor) in order, its parts fetched in parallel. Returns engine.pipe.PipeResult."""
    from .engine.pipe import pipe_options, run_pipe, stream_writer

    opts = pipe_options(options or TransferOptions(), max_memory=_size(max_memory, "max_memory"),
                        expected_size=None, upload=False, src=src, dst="-")
    return run_pipe(src, s3, opts, write=stream_writer(stream))


def _size(value: int | str | None, what: str) -> int | None:
    from .sizes import parse_size

    return parse_size(value, what) if isinstance(value, str) else value
