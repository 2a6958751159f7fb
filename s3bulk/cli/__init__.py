"""The command line: parse options, build a plan, run the engine, render its events.

app.py is the typer app; commands/ holds one module per command; options.py declares the shared
options once and gathers them into groups; run.py runs copy, sync, mv and check. The exit codes
are in shell.py.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

from ..errors import S3BulkError
from . import shell
from .app import app

__all__ = ["app", "main"]


def main(argv: Optional[list[str]] = None) -> None:
    """Console entry point: every expected failure becomes one line on stderr and an exit code."""
    shell.ARGV[:] = list(sys.argv[1:] if argv is None else argv)
    try:
        from typer._click.exceptions import NoArgsIsHelpError
    except ImportError:  # another typer: its usage error then says "error:" before the help
        NoArgsIsHelpError = ()  # type: ignore[assignment,misc]
    from typer.exceptions import Abort, Exit, TyperException

    from .run import json_error

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
    except NoArgsIsHelpError as exc:  # `s3bulk` alone: the help, which is no error message
        print(exc.format_message(), file=sys.stderr)
        code = exc.exit_code
    except TyperException as exc:
        code = exc.exit_code
        if not json_error(exc.format_message(), code):
            print(f"s3bulk: error: {exc.format_message()}", file=sys.stderr)
    except Exception as exc:  # a bug: one line unless asked for the traceback
        if os.environ.get("S3BULK_DEBUG"):
            raise
        print(f"s3bulk: internal error: {type(exc).__name__}: {exc} (set S3BULK_DEBUG=1 for details)",
              file=sys.stderr)
        code = shell.EXIT_FATAL
    if argv is None:  # the process's own command line: the process ends here
        _skip_exit_collections()
    sys.exit(code)


def _skip_exit_collections() -> None:
    """The run is over: move every object to the permanent generation, so the garbage collections
    of the interpreter's shutdown do not walk them all again. Those passes (typer, pydantic,
    botocore's objects) took 0.1-0.3 s after the last byte had landed, on every command;
    atexit handlers, flushes and thread joins still run as before."""
    import gc

    gc.freeze()
