"""The coordinator: hands work units to a pool of worker processes and adds up what they report.

Only work units and aggregated counters cross process boundaries. The coordinator
holds the frontier of the listing (for a single listing chain, one unit) and a
count of units not yet finished; the run is over when that count reaches zero.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import resource
import time
from collections import deque
from typing import Any, Callable

from ..errors import S3BulkError
from ..memory import peak_rss_bytes
from ..model import Counters, Failure, Summary, WorkUnit
from .plan import Plan

MAX_FAILURES_KEPT = 1000
EventSink = Callable[[str, Any], None]


class Progress:
    """A snapshot for renderers: counts so far and whether the listing has finished."""

    __slots__ = ("counters", "listing_done", "elapsed", "workers")

    def __init__(self, counters: Counters, listing_done: bool, elapsed: float, workers: int) -> None:
        self.counters, self.listing_done, self.elapsed, self.workers = counters, listing_done, elapsed, workers


def run_plan(plan: Plan, on_event: EventSink | None = None, *, in_process: bool | None = None,
             start: WorkUnit | None = None, should_stop: Callable[[], bool] | None = None) -> Summary:
    """Run a plan to the end and return its summary. `on_event(kind, payload)` sees
    "progress" (Progress) about four times a second and "failure" (Failure) as they come.

    `start` continues an earlier run from the unit it stopped at. When `should_stop()` turns true
    the run takes no new units, lets those in flight finish, and returns with `summary.resume`
    set to the unit a later run should start from (None when everything was done)."""
    emit = on_event or (lambda kind, payload: None)
    opts = plan.options
    workers = opts.resolved_workers()
    if in_process is None:
        in_process = workers == 1
    budget = max(1, opts.max_bytes_in_flight // workers)
    summary = Summary(workers=workers)
    started = time.monotonic()

    if in_process:
        from .worker import ThreadHandle

        units_q: Any = queue.Queue(maxsize=workers * 4 + 4)
        events_q: Any = queue.Queue(maxsize=1024)
        handles: list[Any] = [ThreadHandle(plan, 0, units_q, events_q, budget)]
    else:
        import multiprocessing as mp

        from .worker import worker_process

        ctx = mp.get_context("spawn")
        handles = []
        try:
            units_q = ctx.Queue(maxsize=workers * 4 + 4)
            events_q = ctx.Queue(maxsize=1024)
            for wid in range(workers):
                p = ctx.Process(target=worker_process, args=(plan, wid, units_q, events_q, budget, os.getpid()),
                                name=f"s3bulk-worker-{wid}", daemon=True)
                p.start()
                handles.append(p)
        except OSError as exc:  # e.g. /dev/shm full or missing: the queues' semaphores live there
            for p in handles:
                p.kill()
            raise S3BulkError(f"cannot start worker processes ({exc.strerror or exc}); "
                              "--workers 1 runs without them") from exc

    frontier: deque[WorkUnit] = deque([start or WorkUnit()])
    stopping = False
    pending = 1     # units handed out or waiting, not yet done
    unlisted = 1    # units whose page has not been listed yet
    exited: dict[int, tuple[int, float]] = {}
    last_emit = 0.0

    def snapshot() -> Progress:
        return Progress(summary.counters, unlisted == 0, time.monotonic() - started, workers)

    def handle(msg: tuple) -> None:
        nonlocal pending, unlisted
        kind = msg[0]
        if kind == "progress":
            _, _, delta, failures = msg
            summary.counters.add(delta)
            for f in failures:
                _keep_failure(summary, f)
                emit("failure", f)
        elif kind == "listed":
            rest = msg[3]
            unlisted -= 1
            if rest is not None:
                frontier.append(rest)
                pending += 1
                unlisted += 1
        elif kind == "done":
            pending -= 1
        elif kind == "fatal":
            if summary.fatal is None:
                summary.fatal = msg[2]
        elif kind == "exit":
            exited[msg[1]] = (msg[2], msg[3])

    restore = _sigterm_as_interrupt()
    try:
        while pending > 0 and summary.fatal is None:
            if not stopping and should_stop is not None and should_stop():
                stopping = True
                try:  # take back what no worker has claimed yet
                    while True:
                        unit = units_q.get_nowait()
                        if unit is not None:
                            frontier.append(unit)
                except queue.Empty:
                    pass
            if stopping and pending == len(frontier):
                break  # nothing in flight any more
            while frontier and not stopping:
                try:
                    units_q.put_nowait(frontier[0])
                    frontier.popleft()
                except queue.Full:
                    break
            try:
                handle(events_q.get(timeout=0.1))
            except queue.Empty:
                pass
            now = time.monotonic()
            if now - last_emit >= 0.25:
                last_emit = now
                emit("progress", snapshot())
                if _dead_workers(handles, exited):
                    # its last words may still be in the queue: read them before judging
                    until = time.monotonic() + 1.0
                    try:
                        while time.monotonic() < until:
                            handle(events_q.get(timeout=0.2))
                    except queue.Empty:
                        pass
                    dead = _dead_workers(handles, exited)
                    if dead and pending > 0:
                        summary.fatal = dead
        _shutdown(handles, units_q, events_q, handle, exited, force=summary.fatal is not None)
        if stopping and frontier:
            summary.resume = min(frontier, key=lambda u: u.seq)
    except KeyboardInterrupt:
        summary.interrupted = True
        _shutdown(handles, units_q, events_q, handle, exited, force=True)
        if in_process:
            from ..stores.local import remove_open_temps

            remove_open_temps()
    finally:
        restore()

    summary.elapsed = time.monotonic() - started
    own = resource.getrusage(resource.RUSAGE_SELF)
    summary.cpu_seconds = own.ru_utime + own.ru_stime + sum(cpu for _, cpu in exited.values())
    summary.peak_rss_bytes = peak_rss_bytes() + sum(rss for rss, _ in exited.values())
    emit("progress", snapshot())
    return summary


def _sigterm_as_interrupt() -> Callable[[], None]:
    """SIGTERM stops a run the way Ctrl-C does; returns what puts the old handler back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term)
    return lambda: signal.signal(signal.SIGTERM, old)


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
              exited: dict[int, Any], *, force: bool) -> None:
    """Tell every worker to stop, collect their last counters, and reap them."""
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
