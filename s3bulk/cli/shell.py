"""What every command shares with the shell it runs in: the exit codes, the command line as typed
(for the order of --include/--exclude and the resume line), and a stdout whose reader went away.

Exit codes: 0 every object copied; 1 some objects failed; 2 bad usage (URL, option); 3 the run
could not start or had to stop (bucket missing, credentials, endpoint down, a worker died); 130
interrupted (143 when by SIGTERM).
"""

from __future__ import annotations

import os
import sys

EXIT_FAILED, EXIT_USAGE, EXIT_FATAL, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 2, 3, 130, 143

# The arguments after `s3bulk`, as main() was given them (filled in place, so importers see them).
ARGV: list[str] = []


def quiet_broken_pipe() -> None:
    """`s3bulk ls ... | head` must not end in a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
