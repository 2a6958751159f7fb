"""The command line: parse options, build a plan, run the engine, render its events.

Exit codes: 0 every object copied; 1 some objects failed; 2 bad usage (URL,
option); 3 the run could not start or had to stop (bucket missing, credentials,
endpoint down, a worker died); 130 interrupted.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import datetime, timezone
from typing import Optional

import typer

from ..errors import S3BulkError, UsageError
from ..urls import S3Options
from .sizes import parse_size

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None,
                  help="Copy and mirror very large numbers of objects between S3-compatible stores "
                       "and local disk, fast and in bounded memory.")

EXIT_FAILED, EXIT_USAGE, EXIT_FATAL, EXIT_INTERRUPTED = 1, 2, 3, 130

_S3_HELP = "S3 connection (both sides unless a --src-/--dst- option overrides it)"


def _s3_options(endpoint_url: Optional[str], profile: Optional[str], region: Optional[str],
                no_sign_request: bool, path_style: bool) -> S3Options:
    if endpoint_url is not None and not endpoint_url.startswith(("http://", "https://")):
        raise UsageError(f"invalid --endpoint-url {endpoint_url!r}: expected http://HOST[:PORT] or https://...")
    return S3Options(endpoint_url=endpoint_url or None, profile=profile or None, region=region or None,
                     no_sign_request=no_sign_request, path_style=path_style)


@app.command()
def copy(
    src: str = typer.Argument(..., help="s3://BUCKET[/PREFIX], s3://BUCKET/KEY, or a local directory or file"),
    dst: str = typer.Argument(..., help="s3://BUCKET[/PREFIX] or a local directory (or file name for one object)"),
    workers: int = typer.Option(0, "--workers", "-w", help="worker processes (0 = one per core)", min=0),
    concurrency: int = typer.Option(64, "--concurrency", "-c", help="transfers in flight per worker", min=1),
    part_size: str = typer.Option("16MiB", help="part size for multipart transfers (raised to fit 10,000 parts)"),
    multipart_threshold: str = typer.Option("16MiB", help="objects above this move in parts"),
    max_buffer: str = typer.Option("256MiB", "--max-buffer", help="object bytes held in memory at once, all workers"),
    page_size: int = typer.Option(1000, help="keys per listing request", min=1, max=1000),
    endpoint_url: Optional[str] = typer.Option(None, help="S3 endpoint URL (default: AWS, or AWS_ENDPOINT_URL[_S3])", rich_help_panel=_S3_HELP),
    profile: Optional[str] = typer.Option(None, help="AWS profile from the config/credentials files", rich_help_panel=_S3_HELP),
    region: Optional[str] = typer.Option(None, help="AWS region", rich_help_panel=_S3_HELP),
    no_sign_request: bool = typer.Option(False, help="send unsigned requests (public buckets)", rich_help_panel=_S3_HELP),
    path_style: bool = typer.Option(False, help="path-style addressing (http://host/bucket/key)", rich_help_panel=_S3_HELP),
    src_endpoint_url: Optional[str] = typer.Option(None, help="endpoint URL for SRC only", rich_help_panel=_S3_HELP),
    src_profile: Optional[str] = typer.Option(None, help="profile for SRC only", rich_help_panel=_S3_HELP),
    src_region: Optional[str] = typer.Option(None, help="region for SRC only", rich_help_panel=_S3_HELP),
    src_no_sign_request: Optional[bool] = typer.Option(None, "--src-no-sign-request/--src-sign-request", help="unsigned requests for SRC only", rich_help_panel=_S3_HELP),
    dst_endpoint_url: Optional[str] = typer.Option(None, help="endpoint URL for DST only", rich_help_panel=_S3_HELP),
    dst_profile: Optional[str] = typer.Option(None, help="profile for DST only", rich_help_panel=_S3_HELP),
    dst_region: Optional[str] = typer.Option(None, help="region for DST only", rich_help_panel=_S3_HELP),
    dst_no_sign_request: Optional[bool] = typer.Option(None, "--dst-no-sign-request/--dst-sign-request", help="unsigned requests for DST only", rich_help_panel=_S3_HELP),
    json_out: bool = typer.Option(False, "--json", help="newline-delimited JSON events and summary on stdout"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress and no summary; errors only"),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="live display (default: when stderr is a terminal)"),
    copy_threshold: str = typer.Option("5GiB", hidden=True, help="server-side: CopyObject up to here, UploadPartCopy above"),
    copy_part_size: str = typer.Option("512MiB", hidden=True),
) -> None:
    """Copy every object under SRC to DST, mirroring the key layout (or one object)."""
    from ..engine.plan import TransferOptions
    from ..engine.planner import build_plan
    from ..engine.pool import run_plan
    from .render import make_renderer

    base = _s3_options(endpoint_url, profile, region, no_sign_request, path_style)
    src_s3 = _side(base, src_endpoint_url, src_profile, src_region, src_no_sign_request)
    dst_s3 = _side(base, dst_endpoint_url, dst_profile, dst_region, dst_no_sign_request)
    options = TransferOptions(
        workers=workers, concurrency=concurrency, page_size=page_size,
        part_size=parse_size(part_size, "--part-size"),
        multipart_threshold=parse_size(multipart_threshold, "--multipart-threshold"),
        max_bytes_in_flight=parse_size(max_buffer, "--max-buffer"),
        copy_threshold=parse_size(copy_threshold, "--copy-threshold"),
        copy_part_size=parse_size(copy_part_size, "--copy-part-size"),
    )
    if options.part_size < 5 * 1024 * 1024:
        raise UsageError("--part-size must be at least 5MiB (the S3 minimum)")
    renderer = make_renderer("copy", src, dst, json_mode=json_out, quiet=quiet, progress=progress)
    try:
        plan = asyncio.run(build_plan(src, dst, src_s3=src_s3, dst_s3=dst_s3, options=options))
    except S3BulkError as exc:
        renderer.error(str(exc))
        raise typer.Exit(exc.exit_code)
    with renderer:
        summary = run_plan(plan, renderer.on_event)
    renderer.finish(summary)
    if summary.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if summary.fatal:
        raise typer.Exit(EXIT_FATAL)
    if summary.counters.failed:
        raise typer.Exit(EXIT_FAILED)


def _side(base: S3Options, endpoint: Optional[str], profile: Optional[str], region: Optional[str],
          no_sign: Optional[bool]) -> S3Options:
    side = _s3_options(endpoint if endpoint is not None else base.endpoint_url,
                       profile if profile is not None else base.profile,
                       region if region is not None else base.region,
                       no_sign if no_sign is not None else base.no_sign_request, base.path_style)
    return side


@app.command("ls")
def ls_command(
    url: str = typer.Argument(..., help="s3://BUCKET[/PREFIX] or a local directory; lists recursively"),
    json_out: bool = typer.Option(False, "--json", help="one JSON object per line"),
    endpoint_url: Optional[str] = typer.Option(None, help="S3 endpoint URL"),
    profile: Optional[str] = typer.Option(None, help="AWS profile"),
    region: Optional[str] = typer.Option(None, help="AWS region"),
    no_sign_request: bool = typer.Option(False, help="send unsigned requests"),
    path_style: bool = typer.Option(False, help="path-style addressing"),
) -> None:
    """List every object under URL with its size, in key order (a literal key prefix)."""
    from ..api import ls

    s3 = _s3_options(endpoint_url, profile, region, no_sign_request, path_style)
    out = sys.stdout
    count = total = 0
    try:
        for obj in ls(url, s3=s3):
            count += 1
            total += obj.size or 0
            if json_out:
                out.write(json.dumps({"key": obj.key, "size": obj.size, "mtime": obj.mtime, "etag": obj.etag},
                                     ensure_ascii=False) + "\n")
            else:
                when = (datetime.fromtimestamp(obj.mtime, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
                        if obj.mtime is not None else "-")
                out.write(f"{when} {obj.size if obj.size is not None else '-':>12} {obj.key}\n")
    except BrokenPipeError:
        _quiet_broken_pipe()
        return
    if not json_out:
        print(f"{count:,} objects, {total:,} bytes", file=sys.stderr)


@app.command()
def serve(
    directory: Optional[str] = typer.Argument(None, help="serve the files under this directory"),
    synthetic: Optional[int] = typer.Option(None, help="serve N generated files instead (no disk)", min=0),
    size: str = typer.Option("100", help="size of each synthetic file"),
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    port: int = typer.Option(8000, help="port (0 = any free port; the URL is printed)", min=0, max=65535),
    processes: int = typer.Option(0, help="server processes sharing the port (0 = one per core)", min=0),
    page_size: int = typer.Option(1000, help="names per /list page", min=1),
) -> None:
    """Serve a directory (or synthetic files) over the plain list/get contract: GET /list, GET /get/NAME."""
    from ..server import DirectoryCatalog, SyntheticCatalog, main_announce
    from ..server import serve as run_server

    if (directory is None) == (synthetic is None):
        raise UsageError("give a DIRECTORY or --synthetic N (not both)")
    if directory is not None:
        if not os.path.isdir(directory):
            raise UsageError(f"{directory!r} is not a directory")
        catalog = DirectoryCatalog(directory)
    else:
        catalog = SyntheticCatalog(synthetic or 0, parse_size(size, "--size"))
    try:
        run_server(catalog, host=host, port=port, processes=processes, page_size=page_size,
                   announce=main_announce)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _quiet_broken_pipe() -> None:
    """`s3bulk ls ... | head` must not end in a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def main(argv: Optional[list[str]] = None) -> None:
    """Console entry point: every expected failure becomes one line on stderr and an exit code."""
    from typer.exceptions import Abort, Exit, TyperException

    try:
        rv = app(args=argv, standalone_mode=False, prog_name="s3bulk")
        code = rv if isinstance(rv, int) else 0
    except S3BulkError as exc:
        print(f"s3bulk: error: {exc}", file=sys.stderr)
        code = exc.exit_code
    except Exit as exc:
        code = exc.exit_code
    except Abort:
        print("s3bulk: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("s3bulk: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except TyperException as exc:
        print(f"s3bulk: error: {exc.format_message()}", file=sys.stderr)
        code = exc.exit_code
    except Exception as exc:  # a bug: one line unless asked for the traceback
        if os.environ.get("S3BULK_DEBUG"):
            raise
        print(f"s3bulk: internal error: {type(exc).__name__}: {exc} (set S3BULK_DEBUG=1 for details)",
              file=sys.stderr)
        code = EXIT_FATAL
    sys.exit(code)
