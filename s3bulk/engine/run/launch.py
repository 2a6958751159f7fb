"""Starting a run: the journal's resume state, the workers (processes, one in-process thread, or a
Runner's, such as a Dask cluster's: handles.py), then the coordinator's loop (coordinator.py) over them.

`run_plan` is the engine's entry point (orchestrate.run calls it). Only work units and aggregated
counters cross process boundaries; what a Ctrl-C or SIGTERM does is coordinator.py's to say.
"""

from __future__ import annotations

import contextlib
import gc
import os
import queue
import signal
import threading
import time
from typing import Any, Callable, Iterator

from ...errors import S3BulkError
from ...model import Summary, WorkUnit
from .coordinator import DRAIN_SECONDS, MAX_FAILURES_KEPT, Coordinator, Crew, Signals, quietly
from ..events import Progress, Subscriber
from ..plan import Plan
from .handles import Runner

__all__ = ["DRAIN_SECONDS", "MAX_FAILURES_KEPT", "Progress", "run_plan"]


def run_plan(plan: Plan, subscriber: Subscriber | None = None, *, in_process: bool | None = None,
             start: WorkUnit | None = None, should_stop: Callable[[], bool] | None = None,
             journal: Any = None, runner: Runner | None = None) -> Summary:
    """Run a plan to the end and return its summary. `subscriber` receives the run's events (engine/events.py): Progress about four
    times a second, each Failure as it comes, Stopping when a first Ctrl-C or SIGTERM begins a
    graceful stop, and in a dry run a DryRunAction or, for `check`, a Difference per key.

    `start` continues an earlier run from the unit it stopped at. When `should_stop()` turns true
    the run takes no new units, lets those in flight finish, and returns with `summary.resume`
    set to the unit a later run should start from (None when everything was done).

    `journal` (an open Journal, engine/journal/units.py) records finished units and open uploads; when it was opened
    to resume, the run starts from the units it has not finished and skips the rest.

    `runner` (handles.py; a Dask cluster's, s3bulk/cluster) runs the units as tasks there instead of
    in worker processes; everything else is the same."""
    emit = (subscriber or Subscriber()).notify
    if runner is not None:
        try:
            plan = runner.prepare(plan)  # e.g. workers = the cluster's task slots
        except BaseException:
            runner.close()
            if journal is not None:  # nothing ran: a new journal goes, a resumed one stays
                journal.finish(complete=not journal.resumed)
            raise
    opts = plan.options
    workers = opts.resolved_workers()
    if in_process is None:
        in_process = workers == 1
    body_bytes = max(1, opts.max_bytes_in_flight // workers)  # each worker's budget for bodies in flight
    summary = Summary(workers=workers)
    started = time.monotonic()
    starts = [start or WorkUnit()]
    resume_info = None
    if journal is not None:
        from ..leftover_uploads import abort_uploads
        from .worker import ResumeInfo

        summary.journal = journal.path
        if journal.stale_uploads:  # a replaced journal's uploads: nobody will finish them now
            quietly(abort_uploads, plan.dst, opts, journal.stale_uploads)
            journal.stale_uploads = []
        from ..journal.units import object_log_dir

        log_dir: str | None = object_log_dir(journal.path)
        try:
            os.makedirs(object_log_dir(journal.path), exist_ok=True)
        except OSError:
            log_dir = None  # resume then works page by page only
        if journal.resumed:
            starts = journal.resume_units()
            summary.resumed_skipped, summary.resumed_skipped_bytes = journal.done_totals()
            resume_info = ResumeInfo(journal.skip_pages(), dict(journal.uploads), log_dir, journal.done_keys,
                                     journaled=True, resumed=True, keep_uploads=True)
        else:
            resume_info = ResumeInfo(log_dir=log_dir, journaled=True, keep_uploads=True)

    signals = Signals()  # from here on, Ctrl-C and SIGTERM are counted, not raised
    handles, units_q, events_q = _start_workers(plan, workers, in_process, runner, body_bytes, resume_info, signals)
    close = runner.close if runner is not None else None
    try:
        crew = Crew(handles, units_q, events_q, signals, in_process, close)
        coordinator = Coordinator(plan, summary, crew, starts, emit=emit, started=started, journal=journal,
                                  should_stop=should_stop)
    except BaseException:  # a bug: stop the workers just started, or the process hangs on them
        for handle in handles:
            handle.terminate()
            try:
                units_q.put_nowait(None)  # a unit getter blocked on the queue returns
            except Exception:
                pass
        signals.restore()
        if close is not None:
            close()
        raise
    return coordinator.run()


def _start_workers(plan: Plan, workers: int, in_process: bool, runner: Runner | None, body_bytes: int,
                   resume_info: Any, signals: Signals) -> tuple[list[Any], Any, Any]:
    """The workers' handles (each looks like a multiprocessing.Process), the queue they take units
    from and the queue they report on: the runner's (a Dask cluster's), one in-process thread, or
    `workers` processes."""
    units_q: Any
    events_q: Any
    handles: list[Any]
    if runner is not None:
        units_q = queue.Queue(maxsize=workers * 4 + 4)
        events_q = queue.Queue(maxsize=1024)
        handles = list(runner.start(plan, units_q, events_q, body_bytes, resume_info))
    elif in_process:
        from .loop_queue import LoopQueue
        from .worker import ThreadHandle

        units_q = LoopQueue(maxsize=workers * 4 + 4)  # awaited by the worker's loop, no thread
        events_q = queue.Queue(maxsize=1024)
        handles = [ThreadHandle(plan, 0, units_q, events_q, body_bytes, resume_info)]
    else:
        import multiprocessing as mp

        from .worker import worker_process

        ctx: Any = mp.get_context(_start_method())  # typeshed's BaseContext lacks Process
        handles = []
        # Workers ignore SIGINT once started; until then (imports take a second) a Ctrl-C reaching
        # the process group would kill them mid-import, and so would an early SIGUSR1 (graceful
        # stop). Blocked here, both stay blocked in them until worker_process has its handlers.
        masked = threading.current_thread() is threading.main_thread()
        if masked:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGUSR1})
        try:
            units_q = ctx.Queue(maxsize=workers * 4 + 4)
            events_q = ctx.Queue(maxsize=1024)
            with _shared_after_fork(ctx, plan):
                for wid in range(workers):
                    p = ctx.Process(target=worker_process,
                                    args=(plan, wid, units_q, events_q, body_bytes, os.getpid(), resume_info),
                                    name=f"s3bulk-worker-{wid}", daemon=True)
                    p.start()
                    handles.append(p)
        except OSError as exc:  # e.g. /dev/shm full or missing: the queues' semaphores live there
            signals.restore()
            for p in handles:
                p.kill()
            raise S3BulkError(f"cannot start worker processes ({exc.strerror or exc}); "
                              "--workers 1 runs without them") from exc
        finally:
            if masked:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGUSR1})
    return handles, units_q, events_q


@contextlib.contextmanager
def _shared_after_fork(ctx: Any, plan: Plan) -> Iterator[None]:
    """Start workers so that they keep sharing the coordinator's memory pages (the process tree's PSS).

    A forked worker shares every page of the coordinator until either writes to it. The worker
    engine's modules (event loop, stores, HTTP client, transfer) are imported here first, once, so
    the workers do not each import them into pages of their own. Then gc.freeze() moves every object
    that exists into the permanent generation: the workers' garbage collections never walk them (a
    walk writes to each object's header, which copies its page into the worker). The coordinator
    unfreezes its own objects once the workers are started, so nothing of it stays uncollectable."""
    if ctx.get_start_method() != "fork":
        yield
        return
    _preload_worker_modules(plan)
    gc.collect()  # what is garbage now would otherwise be frozen, in every worker
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _preload_worker_modules(plan: Plan) -> None:
    """Import what every worker would import first thing (its event loop, the stores of this plan),
    so forked workers share one copy instead of each holding its own."""
    import importlib

    from ...stores import STORE_MODULES

    try:
        import uvloop  # noqa: F401
    except ImportError:
        pass
    for location in (plan.src, plan.dst):
        name = STORE_MODULES.get(location.kind)
        if name:
            importlib.import_module(name)


def _start_method() -> str:
    """fork on Linux: a worker starts with botocore imported and the S3 model parsed by the planner
    (spawn made every worker pay ~0.8 s of CPU for that: 20,000-object download 7.1 -> 5.2 CPU s).
    Workers set their own signal handlers first thing and end with os._exit, so nothing of the
    coordinator (its journal's SQLite handle, its renderer) is used in them. spawn elsewhere;
    S3BULK_START_METHOD=spawn|forkserver overrides."""
    import sys

    chosen = os.environ.get("S3BULK_START_METHOD")
    if chosen in ("fork", "spawn", "forkserver"):
        return chosen
    return "fork" if sys.platform == "linux" else "spawn"
