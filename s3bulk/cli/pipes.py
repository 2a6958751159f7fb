"""The command-line side of pipes: `s3bulk copy - DST`, `s3bulk copy SRC -` and `s3bulk cat URL`.

Kept apart from the bulk copy's rendering because stdout may carry the object's bytes: every
message, the summary and (when stdout carries bytes) the `--json` summary go to stderr. The work
itself is engine/pipe.py.
"""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from ..errors import UsageError
from ..sizes import human_bytes, parse_size
from ..urls import S3Options
from . import (Endpoint, MaxBandwidth, MaxMemory, NoSign, PartSize, PathStyle, Profile,
               Region, RequestTimeout, Retries, _Command, _quiet_broken_pipe, _s3_options, app)

if TYPE_CHECKING:  # the engine is imported when a pipe runs, not for every command's start-up
    from ..engine.plan import TransferOptions

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for `cat big | head`


def _pipe_options(*, part_size: str, concurrency: int, max_buffer: str = "256MiB", retries: int = 5,
                  request_timeout: float = 60.0, max_rps: float = 0.0, max_bandwidth: str = "0",
                  adaptive: bool = True, max_memory: Optional[str], expected_size: Optional[str],
                  src: str, dst: str, upload: bool) -> TransferOptions:
    """The command line's sizes and rates as TransferOptions for one pipe (engine/pipe.py)."""
    from ..engine.pipe import pipe_options
    from ..engine.plan import TransferOptions

    options = TransferOptions(workers=1, part_size=parse_size(part_size, "--part-size"),
                              part_concurrency=concurrency,
                              max_bytes_in_flight=parse_size(max_buffer, "--max-buffer"), retries=retries,
                              request_timeout=request_timeout, adaptive=adaptive, max_rps=max_rps,
                              max_bandwidth=parse_size(max_bandwidth, "--max-bandwidth"))
    return pipe_options(options, max_memory=parse_size(max_memory, "--max-memory") if max_memory is not None else None,
                        expected_size=parse_size(expected_size, "--expected-size") if expected_size is not None
                        else None, upload=upload, src=src, dst=dst)


def run_pipe(command: str, text: str, s3: S3Options, options: TransferOptions, *, upload: bool, json_out: bool,
             quiet: bool, summary: bool, progress: bool = False, expected_size: int | None = None) -> None:
    """Run one pipe and report it: exit 0, the error's code, 130/143 when interrupted, 141 when
    the reader of stdout went away (silently, as `cat` does). `progress`: a live byte meter on stderr."""
    import contextlib

    from ..engine.pipe import Interrupted, fd_reader, fd_writer
    from ..engine.pipe import run_pipe as engine_run_pipe
    from .meter import ByteMeter
    from .render import printable

    started = time.monotonic()
    meter = ByteMeter("uploaded" if upload else "written to stdout", expected_size) if progress else None
    try:
        with meter or contextlib.nullcontext():
            if upload:  # counted when the server has taken a part, not when stdin was read
                result = engine_run_pipe(text, s3, options, read=fd_reader(sys.stdin.fileno()),
                                         on_sent=meter.add if meter else None)
            else:
                write = fd_writer(sys.stdout.fileno())
                result = engine_run_pipe(text, s3, options, write=meter.writer(write) if meter else write)
    except Interrupted as exc:
        print(printable(f"s3bulk: interrupted: {exc}"), file=sys.stderr, flush=True)
        raise typer.Exit(exc.exit_code)
    except BrokenPipeError:
        _quiet_broken_pipe()
        raise typer.Exit(EXIT_BROKEN_PIPE)
    if json_out:
        from ..memory import peak_rss_bytes

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


def copy_pipe(command: str, src: str, dst: str, *, refused: dict[str, bool], src_s3: S3Options,
              dst_s3: S3Options, json_out: bool, quiet: bool, progress: Optional[bool] = None,
              **sizes: Any) -> None:
    """`s3bulk copy - DST` or `s3bulk copy SRC -`; refuses what a pipe cannot do, in one line."""
    if command != "copy":
        raise UsageError(f"'-' (stdin or stdout) works with copy and cat, not {command}")
    if src == "-" and dst == "-":
        raise UsageError("SRC and DST cannot both be '-'")
    if src != "-" and dst != "-":
        raise UsageError("--expected-size applies only when SRC is '-' (stdin)")
    if dst == "-" and sizes.get("expected_size") is not None:
        raise UsageError("--expected-size applies only when SRC is '-' (stdin)")
    for option, given in refused.items():
        if given:
            raise UsageError(f"{option} cannot be used with '-' (one object from stdin or to stdout)")
    upload = src == "-"
    # copy's -c counts objects in flight (64 by default); one object moves at most 8 parts at once
    sizes["concurrency"] = min(sizes["concurrency"], 8)
    options = _pipe_options(src=src, dst=dst, upload=upload, **sizes)
    live = (sys.stderr.isatty() if progress is None else progress) and not (json_out or quiet)
    expected = sizes.get("expected_size")
    run_pipe(command, dst if upload else src, dst_s3 if upload else src_s3, options, upload=upload,
             json_out=json_out, quiet=quiet, summary=True, progress=live,
             expected_size=parse_size(expected, "--expected-size") if expected is not None else None)


@app.command("cat", cls=_Command)
def cat_command(
    url: str = typer.Argument(..., metavar="URL", help="s3://BUCKET/KEY, a local file, or http://HOST:PORT/get/NAME"),
    part_size: PartSize = "8MiB",
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", metavar="N", min=1,
                                             help="ranged GETs in flight (each holds one part)")] = 8,
    max_memory: MaxMemory = None,
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
    retries: Retries = 5, request_timeout: RequestTimeout = 60.0, max_bandwidth: MaxBandwidth = "0",
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="a summary line on stderr")] = False,
    progress: Annotated[bool, typer.Option("--progress", help="a live byte count and rate on stderr")] = False,
) -> None:
    """Write one object to stdout (as `s3bulk copy URL -`): ranged GETs in parallel, written in
    order, memory bounded by part size x parts in flight. A prefix or a missing key is an error."""
    s3 = _s3_options(endpoint_url, profile, region, no_sign_request, path_style)
    options = _pipe_options(part_size=part_size, concurrency=concurrency, retries=retries,
                            request_timeout=request_timeout, max_bandwidth=max_bandwidth, max_memory=max_memory,
                            expected_size=None, src=url, dst="-", upload=False)
    run_pipe("cat", url, s3, options, upload=False, json_out=False, quiet=not verbose, summary=True,
             progress=progress)


__all__ = ["copy_pipe", "cat_command", "EXIT_BROKEN_PIPE"]
