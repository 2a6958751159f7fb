"""`s3bulk mv SRC DST`: copy as copy does, deleting each source object once its copy has landed.
It takes exactly copy's parameters: the same declaration (commands/copy.py), another body."""

from __future__ import annotations

from ..options import Params, RunOptions, command
from .copy import parameters

HELP = ("Move SRC to DST: copy as `copy` does, deleting each source object once its copy has landed (a failed "
        "or interrupted copy never deletes its source).")


def _move(params: Params) -> None:
    from ..run import run_transfer

    run_transfer("mv", RunOptions.of(params))


mv = command(parameters, _move)
