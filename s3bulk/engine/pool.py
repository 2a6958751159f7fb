"""The coordinator: hands work units to a pool of worker processes and adds up what they report.

Only work units and aggregated counters cross process boundaries. The coordinator
holds the frontier of the listing (for a single listing chain, one unit) and a
count of units not yet finished; the run is over when that count reaches zero.

It alone writes the resume journal (journal.py): units finished, multipart uploads open.

Ctrl-C (SIGINT) or SIGTERM once: a graceful stop. Workers get SIGUSR1 and take no new
objects; transfers in flight finish (a multipart upload finishes its parts in flight and stays
open for the resume); units not finished come back; the journal is written; the summary says
`interrupted`. Twice (or after DRAIN_SECONDS): workers are terminated at once. Either way the
journal holds only units whose every object was copied.
"""

from __future__ import annotations

import contextlib
import gc
import os
import queue
import signal
import threading
import resource
import time
from collections import deque
from typing import Any, Callable, Iterator

from ..errors import S3BulkError
from ..memory import peak_rss_bytes
from ..model import Counters, Failure, Summary, WorkUnit
from .plan import Plan
from .units import join_units

MAX_FAILURES_KEPT = 1000
DRAIN_SECONDS = 30.0  # a graceful stop that takes longer than this becomes an immediate one
EventSink = Callable[[str, Any], None]


class Progress:
    """A snapshot for renderers: counts so far and whether the listing has finished."""

    __slots__ = ("counters", "listing_done", "elapsed", "workers")

    def __init__(self, counters: Counters, listing_done: bool, elapsed: float, workers: int) -> None:
        self.counters, self.listing_done, self.elapsed, self.workers = counters, listing_done, elapsed, workers


def run_plan(plan: Plan, on_event: EventSink | None = None, *, in_process: bool | None = None,
             start: WorkUnit | None = None, should_stop: Callable[[], bool] | None = None,
             journal: Any = None, cluster: Any = None) -> Summary:
    """Run a plan to the end and return its summary. `on_event(kind, payload)` sees
    "progress" (Progress) about four times a second, "failure" (Failure) as they come, and
    "stopping" (None) when a first Ctrl-C or SIGTERM begins a graceful stop.

    `start` continues an earlier run from the unit it stopped at. When `should_stop()` turns true
    the run takes no new units, lets those in flight finish, and returns with `summary.resume`
    set to the unit a later run should start from (None when everything was done).

    `journal` (an open journal.Journal) records finished units and open uploads; when it was opened
    to resume, the run starts from the units it has not finished and skips the rest.

    `cluster` (a Dask scheduler address, "local[:N]" or a distributed.Client) runs the units as
    tasks on that cluster instead of worker processes (cluster.py); everything else is the same."""
    emit = on_event or (lambda kind, payload: None)
    dask: Any = None  # the Dask cluster connection (cluster.Cluster) when --cluster is given
    if cluster is not None:
        from .cluster import Cluster, prepare

        try:
            dask = Cluster.connect(cluster)
            plan = prepare(dask, plan)  # workers = the cluster's task slots
        except BaseException:
            if dask is not None:
                dask.close()
            if journal is not None:  # nothing ran: a new journal goes, a resumed one stays
                journal.finish(complete=not journal.resumed)
            raise
    opts = plan.options
    workers = opts.resolved_workers()
    if in_process is None:
        in_process = workers == 1
    budget = max(1, opts.max_bytes_in_flight // workers)
    summary = Summary(workers=workers)
    started = time.monotonic()
    starts = [start or WorkUnit()]
    resume_info = None
    if journal is not None:
        from .transfer import abort_uploads
        from .worker import ResumeInfo

        summary.journal = journal.path
        if journal.stale_uploads:  # a replaced journal's uploads: nobody will finish them now
            _quietly(abort_uploads, plan.dst, opts, journal.stale_uploads)
            journal.stale_uploads = []
        from .journal import object_log_dir

        log_dir = object_log_dir(journal.path)
        try:
            os.makedirs(log_dir, exist_ok=True)
        except OSError:
            log_dir = None  # resume then works page by page only
        if journal.resumed:
            starts = journal.resume_units()
            summary.resumed_skipped, summary.resumed_skipped_bytes = journal.done_totals()
            resume_info = ResumeInfo(journal.skip_pages(), dict(journal.uploads), log_dir, journal.done_keys)
        else:
            resume_info = ResumeInfo(log_dir=log_dir)

    signals = _Signals()  # from here on, Ctrl-C and SIGTERM are counted, not raised
    if dask is not None:
        from .cluster import ClusterHandle

        units_q = queue.Queue(maxsize=workers * 4 + 4)
        events_q = queue.Queue(maxsize=1024)
        handles = [ClusterHandle(dask, plan, units_q, events_q, budget, resume_info)]
    elif in_process:
        from .worker import ThreadHandle

        units_q: Any = queue.Queue(maxsize=workers * 4 + 4)
        events_q: Any = queue.Queue(maxsize=1024)
        handles: list[Any] = [ThreadHandle(plan, 0, units_q, events_q, budget, resume_info)]
    else:
        import multiprocessing as mp

        from .worker import worker_process

        ctx = mp.get_context(_start_method())
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
                                    args=(plan, wid, units_q, events_q, budget, os.getpid(), resume_info),
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

    # Units that may exist at once: a few times the pages the workers can list at a time, so listing
    # runs through many chains without the coordinator holding (or the store answering) a flood of them.
    # A run that may be asked to stop and hand back one unit to continue from (should_stop, the Lambda
    # handler) lists through one chain.
    max_units = 1 if should_stop is not None else max(16, 8 * workers * opts.pages_ahead)
    frontier: deque[WorkUnit] = deque(starts)
    stopping = False
    draining_since: float | None = None  # set by a first Ctrl-C / SIGTERM
    pending = len(starts)     # units handed out or waiting, not yet done
    unlisted = len(starts)    # units whose page has not been listed yet
    unit_failures = 0
    exited: dict[int, tuple[int, float]] = {}
    last_emit = 0.0

    def snapshot() -> Progress:
        return Progress(summary.counters, unlisted == 0, time.monotonic() - started, workers)

    def handle(msg: tuple) -> None:
        nonlocal pending, unlisted, unit_failures
        kind = msg[0]
        if kind == "progress":
            _, _, delta, failures = msg
            summary.counters.add(delta)
            for f in failures:
                _keep_failure(summary, f)
                emit("failure", f)
        elif kind == "listed":
            pieces = msg[3]
            unlisted -= 1
            if len(pieces) > 1 and pending + len(pieces) - 1 > max_units:
                pieces = [join_units(pieces)]  # enough units already: this one stays a chain for now
            frontier.extend(pieces)
            pending += len(pieces)
            unlisted += len(pieces)
        elif kind == "done":
            pending -= 1
            _, _, unit, rest, objects, nbytes, failed, object_log = msg
            if failed:
                unit_failures += 1  # not journaled: a resume does the unit again (its log keeps the rest)
            elif journal is not None:
                journal.unit_done(unit, rest, objects, nbytes, object_log)
        elif kind == "abandoned":  # a graceful stop: back where it came from, unfinished
            frontier.append(msg[2])
            if msg[3]:
                unlisted += 1
        elif kind == "upload":
            if journal is not None:
                journal.upload_started(*msg[2:])
        elif kind == "upload_end":
            if journal is not None:
                journal.upload_ended(msg[2], msg[3])
        elif kind == "fatal":
            if summary.fatal is None:
                summary.fatal = msg[2]
                summary.fatal_code = msg[3]
        elif kind == "exit":
            exited[msg[1]] = (msg[2], msg[3])

    def drain_events(first_timeout: float) -> None:
        """Handle what the workers sent: wait up to first_timeout for one message, then take what
        else is queued (bounded), and write the journal when due."""
        try:
            handle(events_q.get(timeout=first_timeout))
            for _ in range(256):
                handle(events_q.get_nowait())
        except queue.Empty:
            pass
        if journal is not None:
            journal.maybe_commit()

    forced = False
    try:
        while pending > 0 and summary.fatal is None:
            if signals.count and draining_since is None:
                draining_since = time.monotonic()
                stopping = summary.interrupted = True
                emit("stopping", None)
                for p in handles:
                    _request_stop(p)
                _take_back(units_q, frontier)
                for _ in handles:  # each worker hands back what it takes until it reads its None
                    try:
                        units_q.put(None, timeout=1)
                    except queue.Full:
                        break
            if signals.count >= 2 or (draining_since is not None
                                      and time.monotonic() - draining_since > DRAIN_SECONDS):
                forced = True
                break
            if not stopping and should_stop is not None and should_stop():
                stopping = True
                _take_back(units_q, frontier)  # what no worker has claimed yet
            if stopping and pending == len(frontier):
                break  # nothing in flight any more
            while frontier and not stopping:
                try:
                    units_q.put_nowait(frontier[0])
                    frontier.popleft()
                except queue.Full:
                    break
            drain_events(0.1)
            now = time.monotonic()
            if now - last_emit >= 0.25:
                last_emit = now
                emit("progress", snapshot())
                if _dead_workers(handles, exited):
                    # its last words may still be in the queue: read them before judging
                    until = time.monotonic() + 1.0
                    while time.monotonic() < until and _dead_workers(handles, exited) and pending > 0:
                        drain_events(0.2)
                    dead = _dead_workers(handles, exited)
                    if dead and pending > 0:
                        if draining_since is not None:
                            break  # stopped from outside as well (e.g. SIGTERM to the process group)
                        summary.fatal = dead
        _shutdown(handles, units_q, events_q, handle, exited, force=forced or summary.fatal is not None,
                  now=lambda: signals.count >= 2)
        if stopping and frontier and draining_since is None:
            summary.resume = min(frontier, key=lambda u: u.seq)
    except KeyboardInterrupt:
        summary.interrupted = forced = True
        _shutdown(handles, units_q, events_q, handle, exited, force=True)
    finally:
        if forced and in_process:
            from ..stores.local import remove_open_temps

            remove_open_temps()
        if journal is not None:
            complete = (pending == 0 and unit_failures == 0 and summary.fatal is None
                        and not summary.interrupted)
            if complete and journal.uploads:  # left by an earlier run for objects no longer listed
                from .transfer import abort_uploads

                _quietly(abort_uploads, plan.dst, opts, list(journal.uploads.values()))
            journal.finish(complete=complete)
            if complete:
                summary.journal = None
        signals.restore()  # only now: a further Ctrl-C cannot cut the journal's last commit short
        if dask is not None:
            dask.close()

    summary.resumed_skipped += summary.counters.resumed
    summary.resumed_skipped_bytes += summary.counters.resumed_bytes
    summary.elapsed = time.monotonic() - started
    own = resource.getrusage(resource.RUSAGE_SELF)
    summary.cpu_seconds = own.ru_utime + own.ru_stime + sum(cpu for _, cpu in exited.values())
    summary.peak_rss_bytes = peak_rss_bytes() + sum(rss for rss, _ in exited.values())
    emit("progress", snapshot())
    return summary


class _Signals:
    """Counts SIGINT and SIGTERM while a run is on (main thread only) instead of raising
    KeyboardInterrupt at whatever line the coordinator is on: the loop looks at the count, so the
    journal is never written half-way. Restores the previous handlers."""

    def __init__(self) -> None:
        self.count = 0
        self._old: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.count += 1

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}


def _request_stop(p: Any) -> None:
    """Ask one worker for a graceful stop (SIGUSR1 to a process; a flag for the in-process one)."""
    if hasattr(p, "request_stop"):
        p.request_stop()
    elif p.pid is not None and p.exitcode is None:
        try:
            os.kill(p.pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass


def _take_back(units_q: Any, frontier: deque) -> None:
    """Units still waiting in the queue (no worker claimed them) go back to the frontier."""
    try:
        while True:
            unit = units_q.get_nowait()
            if unit is not None:
                frontier.append(unit)
    except queue.Empty:
        pass


def _quietly(fn: Callable[..., Any], *args: Any) -> None:
    """Run a best-effort async clean-up (aborting uploads) from the coordinator."""
    import asyncio

    try:
        asyncio.run(fn(*args))
    except Exception:
        pass


@contextlib.contextmanager
def _shared_after_fork(ctx: Any, plan: Plan) -> Iterator[None]:
    """Start workers so that they keep sharing the coordinator's memory pages (tree PSS, issue 17).

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


_STORE_MODULES = {"s3": "s3bulk.stores.s3", "local": "s3bulk.stores.local", "http": "s3bulk.stores.listget",
                  "memory": "s3bulk.stores.memory"}


def _preload_worker_modules(plan: Plan) -> None:
    """Import what every worker would import first thing (its event loop, the stores of this plan),
    so forked workers share one copy instead of each holding its own."""
    import importlib

    try:
        import uvloop  # noqa: F401
    except ImportError:
        pass
    for location in (plan.src, plan.dst):
        name = _STORE_MODULES.get(getattr(location, "kind", ""))
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


def _keep_failure(summary: Summary, failure: Failure) -> None:
    if len(summary.failures) < MAX_FAILURES_KEPT:
        summary.failures.append(failure)
    else:
        summary.failures_dropped += 1


def _dead_workers(handles: list[Any], exited: dict[int, Any]) -> str | None:
    for wid, p in enumerate(handles):
        if p.exitcode is not None and wid not in exited:
            how = f"killed by signal {-p.exitcode}" if p.exitcode < 0 else f"exit code {p.exitcode}"
            return f"worker {wid} died unexpectedly ({how})"
    return None


def _shutdown(handles: list[Any], units_q: Any, events_q: Any, handle: Callable[[tuple], None],
              exited: dict[int, Any], *, force: bool, now: Callable[[], bool] = lambda: False) -> None:
    """Tell every worker to stop, collect their last counters, and reap them. `now()` turning
    true (a second Ctrl-C) while waiting makes it a forced stop."""
    if force:
        for p in handles:
            if p.is_alive():
                p.terminate()
    for _ in handles:  # also frees a thread worker blocked waiting for a unit
        try:
            units_q.put(None, timeout=0 if force else 5)
        except queue.Full:
            break
    deadline = time.monotonic() + (5 if force else 60)
    while len(exited) < len(handles) and time.monotonic() < deadline:
        if not force and now():
            force = True
            deadline = time.monotonic() + 5
            for p in handles:
                if p.is_alive():
                    p.terminate()
        try:
            handle(events_q.get(timeout=0.1))
        except queue.Empty:
            if all(p.exitcode is not None for p in handles):
                # drain what is left, then stop waiting for workers that cannot speak any more
                try:
                    while True:
                        handle(events_q.get_nowait())
                except queue.Empty:
                    break
    for p in handles:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)
