"""The run of copy, sync, mv and check: their option groups through the one orchestration path
(engine/run/orchestrate.py), its events to the renderer (a Subscriber), its end to an exit code (no
typer here: cli/quick.py runs a one-object copy through it without the parser). Everything but parsing and
rendering lives in the API; a pipe ('-') goes to cli/pipes.py, versions to cli/versions.py."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import TYPE_CHECKING, Callable, ContextManager, Iterator, NoReturn, Optional

from ..errors import S3BulkError, UsageError
from . import shell
from .groups import RunOptions, transfer_options
from .shell import exit_with
from .signals import StopSignals

if TYPE_CHECKING:
    from ..config.urls import S3Options
    from ..engine.job import Command
    from ..engine.plan import SyncOptions, TransferOptions
    from ..model import Summary
    from .render import Renderer

RENDERER: Optional[Renderer] = None  # the run's renderer, once run_transfer made one
RUN_COMMANDS = ("copy", "sync", "mv", "check")


def run_transfer(command: Command, run: RunOptions, sync_options: Optional[SyncOptions] = None) -> None:
    """Parse, run and render a copy, move, sync or check; exits with the documented code."""
    src, dst, output = run.src, run.dst, run.output
    _refuse_with_pipes(run)
    if "-" in (src, dst) or run.expected_size is not None:  # one object from stdin or to stdout
        from .pipes import copy_pipe

        src_s3, dst_s3 = run.props.customer_keys(src, dst, *run.s3.resolve())  # SSE-C keys objects are read with
        copy_pipe(command, run, src_s3=src_s3, dst_s3=dst_s3)
        return
    from ..engine.run.orchestrate import run as orchestrate
    from .render import make_renderer

    runner = None
    if run.cluster is not None:  # the Dask driver is imported only for a cluster run
        from ..cluster.driver import runner_for

        runner = runner_for(run.cluster)  # without the extra: one line saying how to install it, exit 2
    sides = run.props.customer_keys(src, dst, *run.s3.resolve())  # SSE-C keys objects are read with
    renderer = make_renderer(command, src, dst, json_mode=output.json_out, quiet=output.quiet,
                             progress=output.progress, verbose=output.verbose)
    global RENDERER
    RENDERER = renderer
    first_signal = StopSignals()  # which signal stopped the run, for the exit code
    metrics = None
    try:
        run.journal.check()
        options = transfer_options(run)
        if run.metrics is not None:  # listening before the run: a port in use stops it here
            from .metrics import serve_metrics

            metrics = serve_metrics(run.metrics, command, quiet=output.quiet)
        if run.versions.given:
            return _copy_versions(command, run, sides, options)
        job = run.job(command, sync_options, sides, options, report_objects=output.verbose and not output.quiet)
        summary = orchestrate(job, subscriber=metrics.relay(renderer) if metrics is not None else renderer,
                              around_run=_around_run(renderer, first_signal), runner=runner)
    except S3BulkError as exc:
        if metrics is not None:
            metrics.close()
        renderer.error(str(exc), exc.exit_code)
        raise exit_with(exc.exit_code)
    renderer.finish(summary)
    if summary.counters.archived and not output.quiet:
        from .render import plural

        print(f"s3bulk: {plural(summary.counters.archived, 'archived object')} skipped (GLACIER or DEEP_ARCHIVE, "
              f"not restored): restore them first, or --force-archived to try them", file=sys.stderr, flush=True)
    if metrics is not None:  # after the summary is out: a scraper may wait for it before the last scrape
        metrics.close(run.metrics_linger)
    _exit_for(command, run, summary, first_signal)


def _refuse_with_pipes(run: RunOptions) -> None:
    """The options that go with copies of objects under SRC, refused with a pipe ('-') or versions."""
    src, dst = run.src, run.dst
    if run.output.report is not None and ("-" in (src, dst) or run.versions.given):
        raise UsageError("--report goes with copies of objects under SRC, not with a pipe ('-') or versions")
    if run.metrics is not None and ("-" in (src, dst) or run.expected_size is not None or run.versions.given):
        raise UsageError("--metrics goes with runs of many objects: not with a pipe ('-') or the versions options")
    if run.guards.given and ("-" in (src, dst) or run.expected_size is not None or run.versions.given):
        raise UsageError("--no-clobber, --update, --dry-run, --backup-dir, --max-transfer and --max-duration go "
                         "with copies of objects under SRC, not with a pipe ('-') or versions")


def _around_run(renderer: Renderer, first_signal: StopSignals) -> Callable[[], ContextManager[None]]:
    """The context the run itself goes in: the live display, and the signals counted."""

    @contextlib.contextmanager
    def around_run() -> Iterator[None]:
        # run_plan counts Ctrl-Cs while it runs and then puts back the handler it found: make that
        # one ignore them, so a Ctrl-C pressed as the run ends cannot cut off the summary or the
        # resume line
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with renderer, first_signal:
            yield

    return around_run


def _copy_versions(command: str, run: RunOptions, sides: tuple[S3Options, S3Options],
                   options: TransferOptions) -> None:
    """copy --version-id, --all-versions or --as-of (cli/versions.py)."""
    if command != "copy":
        raise UsageError("--version-id, --all-versions and --as-of go with copy")
    from .versions import copy_versions

    versions, journal, output = run.versions, run.journal, run.output
    return copy_versions(run.src, run.dst, version_id=versions.version_id, all_versions=versions.all_versions,
                         include_delete_markers=versions.include_delete_markers, src_s3=sides[0],
                         dst_s3=sides[1], options=options, filters=run.filters.filters(shell.ARGV),
                         json_out=output.json_out, quiet=output.quiet, verbose=output.verbose,
                         as_of=versions.as_of, resume=journal.resume, journal=journal.journal,
                         no_journal=journal.no_journal, journal_dir=journal.journal_dir, argv=shell.ARGV)


def _exit_for(command: str, run: RunOptions, summary: Summary, first_signal: StopSignals) -> None:
    """The exit code of a run that ended (0 by returning): stopped, fatal, failed, or a check
    that found differences."""
    if summary.interrupted:
        _stopped(command, run.src, run.dst, summary, first_signal)
    if summary.fatal:
        raise exit_with(summary.fatal_code or shell.EXIT_FATAL)
    if summary.counters.failed:
        raise exit_with(shell.EXIT_FAILED)
    if summary.check:
        c = summary.counters
        if not run.output.quiet:
            n = summary.check_counts()
            print(f"s3bulk check: {n['differ']:,} differ, {n['only_in_src']:,} only in SRC, "
                  f"{n['only_in_dst']:,} only in DST, {n['same']:,} the same", file=sys.stderr)
        if c.done or c.deleted:
            raise exit_with(shell.EXIT_FAILED)


def _stopped(command: str, src: str, dst: str, summary: Summary, first_signal: StopSignals) -> NoReturn:
    """A run stopped before its end, by a cap or a signal: one line saying how far it got and
    how to go on, and the exit code of what stopped it."""
    c = summary.counters
    if summary.journal:
        argv = [a for a in (shell.ARGV or [command, src, dst]) if a != "--resume"]
        import shlex

        how = "resume with: " + shlex.join(["s3bulk", *argv, "--resume"])
    else:
        how = "no journal was kept, so a new run starts over"
    from .render import plural

    if summary.capped and not first_signal.seen():  # --max-transfer / --max-duration (engine/run/caps.py)
        from ..config.sizes import human_bytes

        print(f"s3bulk: stopped: --{summary.capped} reached; {plural(c.done, 'object')} "
              f"({human_bytes(c.done_bytes)}) copied in this run ({c.listed:,} listed); {how}",
              file=sys.stderr, flush=True)
        raise exit_with(shell.CAP_EXITS[summary.capped])
    print(f"s3bulk: interrupted: {plural(c.done, 'object')} copied in this run ({c.listed:,} listed); {how}",
          file=sys.stderr, flush=True)
    # as a shell reports a process ended by the signal: 128 + 15 for SIGTERM, 128 + 2 for Ctrl-C
    raise exit_with(shell.EXIT_TERMINATED if first_signal.signum == signal.SIGTERM
                    else shell.EXIT_INTERRUPTED)


def json_error(message: str, code: int) -> bool:
    """With --json, an error that ends the run is also a JSON `start` (if not yet written), `error`
    and `summary`, so a script can rely on the stream's first and last lines; True when written
    (the renderer then printed the stderr line too)."""
    from .render import JsonRenderer

    argv = shell.ARGV
    renderer = RENDERER
    if not isinstance(renderer, JsonRenderer):
        if "--json" not in argv or not argv or argv[0] not in RUN_COMMANDS:
            return False
        renderer = JsonRenderer(argv[0], None, None)  # the command line could not be read
    if renderer.summarized:
        return False
    renderer.error(message, code)
    return True
