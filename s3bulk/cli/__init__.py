"""The command line: parse options, build a plan, run the engine, render its events.

app.py is the typer app; commands/ holds one module per command; options.py declares the shared
options once and gathers them into groups; run.py runs copy, sync, mv and check. The exit codes
are in shell.py. A plain `copy SRC DST` or `ls URL` is read by quick.py, without typer.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Optional

from .. import lazy_inspect

lazy_inspect.defer()  # before anything imports dataclasses (lazy_inspect.py says why)

from ..errors import S3BulkError  # noqa: E402
from . import shell  # noqa: E402

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    """`app` (typer's) is imported on first use: a plain copy runs without it (quick.py)."""
    if name == "app":
        return _typer_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _typer_app() -> Any:
    """The typer app, also as this package's `app` from now on (importing the module app.py makes
    `app` here that module; the name has always meant the Typer object)."""
    from .app import app

    globals()["app"] = app
    return app


def main(argv: Optional[list[str]] = None) -> None:
    """Console entry point: every expected failure becomes one line on stderr and an exit code."""
    shell.ARGV[:] = list(sys.argv[1:] if argv is None else argv)
    from .quick import copy_params, ls_params

    params = copy_params(shell.ARGV)
    listed = ls_params(shell.ARGV) if params is None else None
    if params is not None:
        code = _run_quick(_copy, params)
    elif listed is not None:
        code = _run_quick(_ls, listed)
    else:
        code = _run_typer(argv)
    if argv is None:  # the process's own command line: the process ends here
        _skip_exit_collections()
    sys.exit(code)


def _run_typer(argv: Optional[list[str]]) -> int:
    """The command line as typer reads it; its exit code."""
    from typer.exceptions import Abort, Exit, TyperException

    from .run import json_error

    app = _typer_app()
    try:
        rv = app(args=argv, standalone_mode=False, prog_name="s3bulk")
        code = rv if isinstance(rv, int) else 0
    except S3BulkError as exc:
        code = exc.exit_code
        if not json_error(str(exc), code):
            print(f"s3bulk: error: {exc}", file=sys.stderr)
    except Exit as exc:
        code = exc.exit_code
    except Abort:
        print("s3bulk: interrupted", file=sys.stderr)
        code = shell.EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("s3bulk: interrupted", file=sys.stderr)
        code = shell.EXIT_INTERRUPTED
    except TyperException as exc:
        code = exc.exit_code
        if _is_the_help(exc):  # `s3bulk` alone: the help, which is no error message
            print(exc.format_message(), file=sys.stderr)
        elif not json_error(exc.format_message(), code):
            print(f"s3bulk: error: {exc.format_message()}", file=sys.stderr)
    except Exception as exc:  # a bug: one line unless asked for the traceback
        code = _output_failed(exc) or _internal_error(exc)
    return code


def _is_the_help(exc: Exception) -> bool:
    """Whether a usage error's message is its command's help (click's "no arguments, so the
    help"): told by what it says, not by its class, which lives in typer's private modules."""
    ctx = getattr(exc, "ctx", None)
    return ctx is not None and getattr(ctx.command, "no_args_is_help", False) and \
        exc.format_message() == ctx.get_help()  # type: ignore[attr-defined]


def _copy(params: dict[str, Any]) -> None:
    """`copy` with the values quick.py read: the run_transfer typer's command makes."""
    from .groups import RunOptions
    from .run import run_transfer

    run_transfer("copy", RunOptions.of(params))


def _ls(params: dict[str, Any]) -> None:
    """`ls` with the values quick.py read (the others at their defaults): the run_ls of typer's
    command (cli/commands/ls.py)."""
    from ..config.defaults import LIST_CONCURRENCY
    from ..config.filters import Filters
    from .groups import S3Connection
    from .ls_lines import run_ls

    s3 = S3Connection(params["endpoint_url"], params["profile"], params["region"], params["no_sign_request"],
                      params["path_style"]).options()
    run_ls(params["url"], s3, Filters(), json_out=params["json_out"], unordered=params["unordered"],
           concurrency=LIST_CONCURRENCY, all_versions=False, recursive=params["recursive"])


def _run_quick(command: Callable[[dict[str, Any]], None], params: dict[str, Any]) -> int:
    """A command whose command line quick.py read, run as typer would run it (the same code,
    the same handling of what it raises as typer's main and _run_typer give it); its exit code."""
    shell.QUICK = True  # the command ends with shell.Exit, not typer's
    try:
        try:
            try:
                command(params)
                code = 0
            except EOFError:  # as typer: a blank line, then Abort
                print(file=sys.stderr)
                print("s3bulk: interrupted", file=sys.stderr)
                code = shell.EXIT_INTERRUPTED
            except KeyboardInterrupt:  # as typer: Exit(130), no message
                code = shell.EXIT_INTERRUPTED
            except OSError as exc:
                import errno

                if exc.errno != errno.EPIPE:
                    raise
                # as typer: a reader that went away, exit 1 (and no error at the final flush)
                shell.quiet_broken_pipe()
                sys.exit(1)
        except shell.Exit as exc:
            code = exc.exit_code
        except S3BulkError as exc:
            from .run import json_error

            code = exc.exit_code
            if not json_error(str(exc), code):
                print(f"s3bulk: error: {exc}", file=sys.stderr)
        except Exception as exc:
            code = _output_failed(exc) or _internal_error(exc)
        return code
    finally:
        shell.QUICK = False


def _output_failed(exc: Exception) -> int:
    """The exit code for an OSError that is an output refusing what the run printed (a full disk,
    `> /dev/full`, a quota, a failing device), after saying so in one line; 0 when it is not that.
    Such an error escapes only from writing the run's output (standard output, a --report or
    --metrics file): the engine's own files report their errors as failures. The run itself
    finished (what it copied is copied); only its output is lost, so the code is the fatal one `cat`
    gives a refused output, not an internal error's words."""
    import errno

    if not isinstance(exc, OSError) or exc.filename is not None or \
            exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO):
        return 0
    shell.quiet_broken_pipe()  # the interpreter's own last flush of standard output must not fail again
    print(f"s3bulk: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
    return shell.EXIT_FATAL


def _internal_error(exc: Exception) -> int:
    """A bug: one line unless asked for the traceback."""
    if os.environ.get("S3BULK_DEBUG"):
        raise exc
    print(f"s3bulk: internal error: {type(exc).__name__}: {exc} (set S3BULK_DEBUG=1 for details)",
          file=sys.stderr)
    return shell.EXIT_FATAL


def _skip_exit_collections() -> None:
    """The run is over: move every object to the permanent generation, so the garbage collections
    of the interpreter's shutdown do not walk them all again. Those passes (typer, pydantic,
    botocore's objects) took 0.1-0.3 s after the last byte had landed, on every command;
    atexit handlers, flushes and thread joins still run as before."""
    import gc

    gc.freeze()
