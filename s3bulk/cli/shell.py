"""What every command shares with the shell it runs in: the exit codes, the command line as typed
(for the order of --include/--exclude and the resume line), and a stdout whose reader went away.

Exit codes: 0 every object copied; 1 some objects failed; 2 bad usage (URL, option); 3 the run
could not start or had to stop (bucket missing, credentials, endpoint down, a worker died); 8
stopped by --max-transfer and 10 by --max-duration (rclone's codes; the journal is kept for --resume:
engine/run/caps.py); 130 interrupted (143 when by SIGTERM).
"""

from __future__ import annotations

import os
import sys
from ..errors import Exit

EXIT_FAILED, EXIT_USAGE, EXIT_FATAL, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 2, 3, 130, 143
EXIT_MAX_TRANSFER, EXIT_MAX_DURATION = 8, 10  # a cap reached: stopped gracefully, resumable
CAP_EXITS = {"max-transfer": EXIT_MAX_TRANSFER, "max-duration": EXIT_MAX_DURATION}

# The arguments after `s3bulk`, as main() was given them (filled in place, so importers see them).
ARGV: list[str] = []
# True while cli/quick.py's command line runs (no typer): commands end with Exit below
QUICK = False


def exit_with(code: int) -> Exception:
    """The exception that ends a command with `code`: typer's Exit when typer parsed the command
    line (its callers, e.g. a CliRunner, expect it), else shell.Exit (cli/quick.py ran the command
    without importing typer)."""
    if QUICK:
        return Exit(code)
    import typer

    return typer.Exit(code)


def quiet_broken_pipe() -> None:
    """`s3bulk ls ... | head` must not end in a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
