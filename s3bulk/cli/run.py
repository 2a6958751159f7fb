"""The run of copy, sync, mv and check: their option groups through the one orchestration path
(engine/run/orchestrate.py), its events to the renderer (a Subscriber), its end to an exit code (no
typer here: cli/quick.py runs a one-object copy through it without the parser). Everything but parsing and
rendering lives in the API; a pipe ('-') goes to cli/pipes.py, versions to cli/versions.py."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Iterator, Optional

from ..errors import S3BulkError, UsageError
from . import shell
from .groups import RunOptions, max_memory, transfer_options
from .shell import exit_with
from .signals import StopSignals

if TYPE_CHECKING:
    from ..engine.plan import SyncOptions
    from .render import Renderer

RENDERER: Optional[Renderer] = None  # the run's renderer, once run_transfer made one
RUN_COMMANDS = ("copy", "sync", "mv", "check")


def run_transfer(command: str, run: RunOptions, sync_options: Optional[SyncOptions] = None) -> None:
    """Parse, run and render a copy, move, sync or check; exits with the documented code."""
    src, dst, output, journal = run.src, run.dst, run.output, run.journal
    if output.report is not None and ("-" in (src, dst) or run.versions.given):
        raise UsageError("--report goes with copies of objects under SRC, not with a pipe ('-') or versions")
    if run.metrics is not None and ("-" in (src, dst) or run.expected_size is not None or run.versions.given):
        raise UsageError("--metrics goes with runs of many objects: not with a pipe ('-') or the versions options")
    if run.guards.given and ("-" in (src, dst) or run.expected_size is not None or run.versions.given):
        raise UsageError("--no-clobber, --update, --dry-run, --backup-dir, --max-transfer and --max-duration go "
                         "with copies of objects under SRC, not with a pipe ('-') or versions")
    if "-" in (src, dst) or run.expected_size is not None:  # one object from stdin or to stdout
        from .pipes import copy_pipe

        src_s3, dst_s3 = run.props.customer_keys(src, dst, *run.s3.resolve())  # SSE-C keys objects are read with
        copy_pipe(command, run, src_s3=src_s3, dst_s3=dst_s3)
        return
    import contextlib
    import signal
    import threading

    from ..engine.run.orchestrate import run as orchestrate
    from .render import make_renderer

    runner = None
    if run.cluster is not None:  # the Dask driver is imported only for a cluster run
        from ..cluster.driver import runner_for

        runner = runner_for(run.cluster)  # without the extra: one line saying how to install it, exit 2
    src_s3, dst_s3 = run.props.customer_keys(src, dst, *run.s3.resolve())  # SSE-C keys objects are read with
    renderer = make_renderer(command, src, dst, json_mode=output.json_out, quiet=output.quiet,
                             progress=output.progress, verbose=output.verbose)
    global RENDERER
    RENDERER = renderer
    first_signal = StopSignals()  # which signal stopped the run, for the exit code

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

    metrics = None
    try:
        journal.check()
        options = transfer_options(run)
        if run.metrics is not None:  # listening before the run: a port in use stops it here
            from .metrics import serve_metrics

            metrics = serve_metrics(run.metrics, command, quiet=output.quiet)
        if run.versions.given:
            if command != "copy":
                raise UsageError("--version-id, --all-versions and --as-of go with copy")
            from .versions import copy_versions

            versions = run.versions
            return copy_versions(src, dst, version_id=versions.version_id, all_versions=versions.all_versions,
                                 include_delete_markers=versions.include_delete_markers, src_s3=src_s3,
                                 dst_s3=dst_s3, options=options, filters=run.filters.filters(shell.ARGV),
                                 json_out=output.json_out, quiet=output.quiet, verbose=output.verbose,
                                 as_of=versions.as_of, resume=journal.resume, journal=journal.journal,
                                 no_journal=journal.no_journal, journal_dir=journal.journal_dir, argv=shell.ARGV)
        manifest: dict[str, Any] = {} if run.manifest is None else {  # check reads no manifest
            "files_from": run.manifest.files_from, "files_from_format": run.manifest.user_format()}
        summary = orchestrate(command, src, dst, sync_options, options=options, src_s3=src_s3, dst_s3=dst_s3,
                              subscriber=metrics.relay(renderer) if metrics is not None else renderer,
                              max_memory=max_memory(run),
                              journal=None if journal.no_journal else journal.journal,
                              default_journal=not journal.no_journal, resume=journal.resume,
                              filters=run.filters.filters(shell.ARGV), around_run=around_run, runner=runner,
                              move=command == "mv", report_objects=output.verbose and not output.quiet,
                              journal_dir=journal.journal_dir, report=output.report, **manifest)
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
    if summary.interrupted:
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
    if summary.fatal:
        raise exit_with(summary.fatal_code or shell.EXIT_FATAL)
    if summary.counters.failed:
        raise exit_with(shell.EXIT_FAILED)
    if sync_options is not None and sync_options.check:
        c = summary.counters
        if not output.quiet:
            n = summary.check_counts()
            print(f"s3bulk check: {n['differ']:,} differ, {n['only_in_src']:,} only in SRC, "
                  f"{n['only_in_dst']:,} only in DST, {n['same']:,} the same", file=sys.stderr)
        if c.done or c.deleted:
            raise exit_with(shell.EXIT_FAILED)


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
