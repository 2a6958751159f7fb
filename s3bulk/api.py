"""The Python API: the same operations as the command line, without any terminal output."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Callable, Iterator

from .engine.plan import TransferOptions
from .model import ObjectInfo, Summary, WorkUnit
from .urls import Location, S3Options, parse_location


def copy(src: str, dst: str, *, options: TransferOptions | None = None,
         src_s3: S3Options | None = None, dst_s3: S3Options | None = None,
         on_event: Callable[[str, Any], None] | None = None, max_memory: int | None = None,
         start: WorkUnit | None = None, should_stop: Callable[[], bool] | None = None,
         journal: str | None = None, resume: bool = False, files_from: str | None = None,
         files_from_format: str = "auto", cluster: Any = None) -> Summary:
    """Copy SRC to DST (see `s3bulk copy --help` for the URL forms). Raises S3BulkError when
    nothing could start (bad URL, missing bucket, ...); per-object failures are in the Summary.

    max_memory: stay under this many bytes of RSS (workers, transfers and parts are derived from it).
    start / should_stop: continue from a unit an earlier run returned as `summary.resume`; stop
    taking new work once should_stop() is true (the summary then says where to resume).
    journal / resume: keep a resume journal in this file (none by default in the API; the command
    line keeps one by default); resume=True continues the interrupted run it records (UsageError
    when there is none, or it belongs to another run). A complete run removes its journal.
    files_from: copy the keys this manifest names instead of listing SRC (see `--files-from`).
    cluster: run the work units as tasks on a Dask cluster: a scheduler address (tcp://host:8786),
    "local" / "local:N" (a LocalCluster of N worker processes), or a distributed.Client (left open).
    Needs `pip install 's3bulk[dask]'` (UsageError otherwise).
    Ctrl-C (in the main thread) stops gracefully: the summary comes back with interrupted=True."""
    from .engine.planner import build_plan
    from .engine.pool import run_plan

    options = options or TransferOptions()
    if cluster is not None:
        from .engine.cluster import import_distributed

        import_distributed()  # one clear error before any work
    if max_memory is not None:
        from .engine.budget import fit_to_budget

        options = fit_to_budget(options, max_memory, src, dst)
    plan = asyncio.run(build_plan(src, dst, src_s3=src_s3, dst_s3=dst_s3, options=options,
                                  files_from=files_from, files_from_format=files_from_format))
    run_journal = None
    if journal is not None:
        from .engine.journal import Journal

        run_journal = Journal.open(journal, plan, "copy", resume=resume)
    elif resume:
        from .errors import UsageError

        raise UsageError("resume=True needs journal= (the file the interrupted run kept)")
    return run_plan(plan, on_event, start=start, should_stop=should_stop, journal=run_journal,
                    cluster=cluster)


async def alist(url: str, *, s3: S3Options | None = None, page_size: int = 1000,
                concurrency: int = 16) -> AsyncIterator[ObjectInfo]:
    """Every object under URL (a literal key prefix), in key order. The key space is split into
    ranges listed `concurrency` at a time (engine/listing.py); 1 lists through a single chain."""
    from .engine.listing import list_in_order
    from .stores import open_store

    loc = parse_location(url, s3)
    prefix = loc.prefix
    if loc.kind == "local":
        import os

        if os.path.isfile(loc.bucket):
            loc, prefix = Location("local", os.path.dirname(loc.bucket), "", loc.raw), os.path.basename(loc.bucket)
    store = await open_store(loc)
    try:
        async for entries in list_in_order(store, prefix, page_size=page_size, concurrency=concurrency):
            for entry in entries:
                yield entry
    finally:
        await store.close()


def ls(url: str, *, s3: S3Options | None = None) -> Iterator[ObjectInfo]:
    """Synchronous form of `alist`: runs its own event loop, a page at a time."""
    loop = asyncio.new_event_loop()
    agen = alist(url, s3=s3).__aiter__()
    try:
        while True:
            try:
                yield loop.run_until_complete(agen.__anext__())
            except StopAsyncIteration:
                return
    finally:
        loop.run_until_complete(agen.aclose())
        loop.close()
