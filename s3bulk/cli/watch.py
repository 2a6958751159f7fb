"""The run of `sync --watch`: the option groups to the watcher (engine/watch/watcher.py), its
events to the renderer, a stop by SIGINT or SIGTERM to one line and exit 0.

Unlike a single run, the watch owns SIGINT and SIGTERM for its whole life: between two syncs a
signal ends it at once; during one, the run drains as any run does (its own handler), then the
watch ends. Either way no change is acknowledged that has not landed."""

from __future__ import annotations

import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

import typer

from ..errors import S3BulkError, UsageError
from . import shell
from .options import RunOptions, transfer_options
from .signals import StopSignals

if TYPE_CHECKING:
    from ..engine.plan import SyncOptions
    from ..model import Summary
    from ..engine.watch.watcher import WatchOptions


def run_watch(run: RunOptions, sync_options: SyncOptions, watching: WatchOptions) -> None:
    """Watch until stopped; exits 0 after a stop by signal, with the run's code after a fatal error."""
    from . import run as cli_run
    from ..engine.watch.watcher import watch
    from .render import make_renderer

    output = run.output
    renderer = make_renderer("sync", run.src, run.dst, json_mode=output.json_out, quiet=output.quiet,
                             progress=output.progress, verbose=output.verbose)
    cli_run.RENDERER = renderer
    caught: list[int] = []
    old: dict[int, Any] = {}

    def on_signal(signum: int, frame: Any) -> None:
        caught.append(signum)

    signals = StopSignals(caught)
    metrics = None
    try:
        _refuse_with_watch(run)
        run.journal.check()
        sides = run.props.customer_keys(run.src, run.dst, *run.s3.resolve())
        options = transfer_options(run)
        if run.metrics is not None:  # listening before the first sync: a port in use stops it here
            from .metrics import serve_metrics

            metrics = serve_metrics(run.metrics, "sync", quiet=output.quiet)
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                old[sig] = signal.signal(sig, on_signal)
        with renderer, signals:
            # the job of every sync of the watch (it refuses --files-from above, so reads no manifest)
            job = run.replaced(manifest=None).job("sync", sync_options, sides, options,
                                                  report_objects=not output.quiet)
            summary = watch(job, subscriber=metrics.relay(renderer) if metrics is not None else renderer,
                            should_stop=signals.seen, watch_options=watching, full_sync_stops=False)
    except S3BulkError as exc:
        if metrics is not None:
            metrics.close()
        renderer.error(str(exc), exc.exit_code)
        raise typer.Exit(exc.exit_code)
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)
    stopped = summary.interrupted
    summary.interrupted = False  # a watch ends by being stopped: that is its normal end
    renderer.finish(summary)
    if metrics is not None:
        metrics.close(run.metrics_linger)
    if summary.fatal:
        raise typer.Exit(summary.fatal_code or shell.EXIT_FATAL)
    if stopped and not output.quiet:
        _tell_stopped(summary, signals, caught)
    # a stop is the watch's normal end: exit 0, whatever failed (and was told) on the way; a
    # service manager restarting on failure must not see every stop as one


def _refuse_with_watch(run: RunOptions) -> None:
    """The options a watch cannot go with, refused in one line each."""
    if "-" in (run.src, run.dst) or run.cluster is not None:
        raise UsageError("--watch needs a SRC and DST that are not '-', and runs without --cluster")
    if run.output.report is not None:
        raise UsageError("--watch cannot be used with --report (--json tells each object the watch copies or "
                         "deletes)")
    if run.versions.given:
        raise UsageError("--watch cannot be used with --version-id, --all-versions or --as-of")
    if run.manifest is not None and run.manifest.files_from is not None:
        raise UsageError("--watch cannot be used with --files-from (it watches the whole SRC)")


def _tell_stopped(summary: Summary, signals: StopSignals, caught: list[int]) -> None:
    """The watch's last line on stderr: what stopped it, and what it did while watching."""
    from .render import plural

    signals.seen()
    by: int | None = caught[0] if caught else None
    why = f" by {signal.Signals(by).name}" if by else ""
    c = summary.counters
    print(f"s3bulk: watch stopped{why}: {plural(c.done, 'object')} copied, {plural(c.deleted, 'object')} "
          "deleted while watching; DST holds what SRC held at the last sync", file=sys.stderr, flush=True)
