"""`s3bulk mv SRC DST`: copy as copy does, deleting each source object once its copy has landed.
It takes exactly copy's parameters: the same declaration (copy.py), another body."""

from __future__ import annotations

from ..options import Params, RunOptions, command
from .copy import parameters

HELP = ("Move SRC to DST: copy as `copy` does, deleting each source object once its copy has landed (a failed "
        "or interrupted copy never deletes its source).")


def _move(params: Params) -> None:
    from ..run import run_transfer

    run_transfer("mv", RunOptions.of(params))


mv = command(parameters, _move)

EXAMPLES = (
    ("Move every object under a prefix to another bucket",
     "s3bulk mv s3://bucket/incoming/ s3://archive/2026/"),
    ("Move local files into a bucket, deleting each file once uploaded",
     "s3bulk mv ./outbox/ s3://bucket/inbox/"),
    ("Print what a move would copy and delete, changing nothing",
     "s3bulk mv ./outbox/ s3://bucket/inbox/ --dry-run"),
    ("Move only what DST does not have yet; the rest stays at SRC",
     "s3bulk mv ./outbox/ s3://bucket/inbox/ --no-clobber"),
    ("Keep what the move overwrites at DST: copied to old/ first, with a suffix",
     "s3bulk mv ./outbox/ s3://bucket/inbox/ --backup-dir s3://bucket/old/ --suffix .1"),
    ("Move only the .log objects, continuing an interrupted move",
     "s3bulk mv s3://bucket/logs/ ./logs/ --exclude '*' --include '*.log' --resume"),
)
