"""The command-line side of pipes: `s3bulk copy - DST`, `s3bulk copy SRC -` and `s3bulk cat URL`
(cli/commands/cat.py).

Kept apart from the bulk copy's rendering because stdout may carry the object's bytes: every
message, the summary and (when stdout carries bytes) the `--json` summary go to stderr. The work
itself is engine/transfer/pipes.py.
"""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any, Optional

import typer

from ..errors import UsageError
from ..config.sizes import human_bytes, parse_size
from ..config.urls import S3Options
from .shell import quiet_broken_pipe

if TYPE_CHECKING:  # the engine is imported when a pipe runs, not for every command's start-up
    from ..engine.plan import TransferOptions
    from .options import RunOptions

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for `cat big | head`


def pipe_transfer_options(*, part_size: str, concurrency: int, max_memory: Optional[str],
                          expected_size: Optional[str], src: str, dst: str, upload: bool,
                          max_buffer: Optional[str] = None, retries: Optional[int] = None,
                          request_timeout: Optional[float] = None, max_rps: Optional[float] = None,
                          max_bandwidth: Optional[str] = None, adaptive: Optional[bool] = None) -> TransferOptions:
    """The command line's sizes and rates as TransferOptions for one pipe (engine/transfer/pipes.py); one a
    command does not take (None: cat has no --max-buffer) keeps the engine's default."""
    from ..engine.transfer.pipes import pipe_options
    from ..engine.plan import TransferOptions

    # a stream of unknown length is cut as it comes: `auto` is the 8 MiB parts (raised to fit 10,000
    # parts of --expected-size), not the per-object sizes of engine/transfer/link.py
    part = 8 * 1024 * 1024 if part_size.strip().lower() == "auto" else parse_size(part_size, "--part-size")
    given: dict[str, Any] = {name: value for name, value in (
        ("retries", retries), ("request_timeout", request_timeout), ("adaptive", adaptive), ("max_rps", max_rps))
        if value is not None}
    if max_buffer is not None:
        given["max_bytes_in_flight"] = parse_size(max_buffer, "--max-buffer")
    if max_bandwidth is not None:
        given["max_bandwidth"] = parse_size(max_bandwidth, "--max-bandwidth")
    options = TransferOptions(workers=1, part_size=part, part_concurrency=concurrency, **given)
    return pipe_options(options, max_memory=parse_size(max_memory, "--max-memory") if max_memory is not None else None,
                        expected_size=parse_size(expected_size, "--expected-size") if expected_size is not None
                        else None, upload=upload, src=src, dst=dst)


def run_pipe(command: str, text: str, s3: S3Options, options: TransferOptions, *, upload: bool, json_out: bool,
             quiet: bool, summary: bool, progress: bool = False, expected_size: int | None = None) -> None:
    """Run one pipe and report it: exit 0, the error's code, 130/143 when interrupted, 141 when
    the reader of stdout went away (silently, as `cat` does). `progress`: a live byte meter on stderr."""
    import contextlib

    from ..engine.transfer.pipes import Interrupted, fd_reader, fd_writer
    from ..engine.transfer.pipes import run_pipe as engine_run_pipe
    from .meter import ByteMeter
    from .render import printable

    started = time.monotonic()
    meter = ByteMeter("uploaded" if upload else "written to stdout", expected_size) if progress else None
    try:
        with meter or contextlib.nullcontext():
            if upload:  # counted when the server has taken a part, not when stdin was read
                result = engine_run_pipe(text, s3, options, read=fd_reader(sys.stdin.fileno()), meter=meter)
            else:
                write = fd_writer(sys.stdout.fileno())
                result = engine_run_pipe(text, s3, options, write=meter.writer(write) if meter else write)
    except Interrupted as exc:
        print(printable(f"s3bulk: interrupted: {exc}"), file=sys.stderr, flush=True)
        raise typer.Exit(exc.exit_code)
    except BrokenPipeError:
        quiet_broken_pipe()
        raise typer.Exit(EXIT_BROKEN_PIPE)
    if json_out:
        from ..engine.run.peak_rss import peak_rss_bytes

        event = {"event": "summary", "command": command, "ok": True, "src": "-" if upload else result.url,
                 "dst": result.url if upload else "-", "bytes": result.bytes, "parts": result.parts,
                 "seconds": round(time.monotonic() - started, 3), "peak_rss_bytes": peak_rss_bytes(), "v": 1}
        # stdout carries the object's bytes on a download: the summary then goes to stderr
        print(json.dumps(event, ensure_ascii=False), file=sys.stderr if not upload else sys.stdout, flush=True)
    elif summary and not quiet:
        how = f"in {result.parts:,} parts" if result.parts else "in one request"
        line = (f"uploaded {human_bytes(result.bytes)} from stdin to {result.url} {how}" if upload else
                f"wrote {human_bytes(result.bytes)} of {result.url} to stdout {how}")
        print(printable(f"s3bulk: {line}"), file=sys.stderr, flush=True)


def copy_pipe(command: str, run: RunOptions, *, src_s3: S3Options, dst_s3: S3Options) -> None:
    """`s3bulk copy - DST` or `s3bulk copy SRC -`; refuses what a pipe cannot do, in one line."""
    src, dst, output = run.src, run.dst, run.output
    if command != "copy":
        raise UsageError(f"'-' (stdin or stdout) works with copy and cat, not {command}")
    if src == "-" and dst == "-":
        raise UsageError("SRC and DST cannot both be '-'")
    if src != "-" and dst != "-":
        raise UsageError("--expected-size applies only when SRC is '-' (stdin)")
    if dst == "-" and run.expected_size is not None:
        raise UsageError("--expected-size applies only when SRC is '-' (stdin)")
    files_from = run.manifest.files_from if run.manifest is not None else None
    refused = {"--resume": run.journal.resume, "--files-from": files_from is not None, "--cluster": run.cluster is not None,
               "a filter (--include, --max-size, ...)": run.filters.given, "--journal": run.journal.journal is not None}
    for option, given in refused.items():
        if given:
            raise UsageError(f"{option} cannot be used with '-' (one object from stdin or to stdout)")
    sizes, network = run.sizes, run.network
    assert sizes is not None and network is not None  # copy declares them
    upload = src == "-"
    # copy's -c counts objects in flight (64 by default); one object moves at most 8 parts at once
    concurrency = min(run.parallel.concurrency or 64, 8)
    options = pipe_transfer_options(
        part_size=sizes.part_size, concurrency=concurrency, max_buffer=sizes.max_buffer, retries=network.retries,
        request_timeout=network.request_timeout, max_rps=network.max_rps, max_bandwidth=network.max_bandwidth,
        adaptive=network.adaptive, max_memory=sizes.max_memory, expected_size=run.expected_size, src=src, dst=dst,
        upload=upload)
    live = (sys.stderr.isatty() if output.progress is None else output.progress) and \
        not (output.json_out or output.quiet)
    expected = run.expected_size
    run_pipe(command, dst if upload else src, dst_s3 if upload else src_s3, options, upload=upload,
             json_out=output.json_out, quiet=output.quiet, summary=True, progress=live,
             expected_size=parse_size(expected, "--expected-size") if expected is not None else None)


__all__ = ["copy_pipe", "run_pipe", "pipe_transfer_options", "EXIT_BROKEN_PIPE"]
