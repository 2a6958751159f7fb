"""What was written, read back: a HEAD of each object after its write (`--verify`), or of a sample.

A write's 200 is the server's word that it stored the object. A broken gateway or proxy can answer
200, with the right ETag even, and store nothing (or something else); real S3 does not, and a HEAD
after every write doubles the requests of a run of small objects, so it is asked for: `--verify`
checks every object written: that the destination has it, with its size. (Not its ETag: with
SSE-KMS, a bucket's default encryption included, an S3 ETag is not the MD5 of the bytes, and the
stores do not keep the ETag each write answered; that comparison is left for when they do.)

By default one object per worker is checked (unless the credentials may not read it back), the first it writes to S3: one HEAD per worker per
run, nothing on the hot path, and a gateway that stores nothing is noticed at once, before the run
has written a million objects that are not there.

An object that does not check out is written once more and checked again; if it still does not,
it fails (`NotStored`), one line naming what the HEAD found: exit 1.
"""

from __future__ import annotations

from typing import Any

from ...errors import AccessDenied, NotFound, StoreError
from ...model import ObjectInfo


class NotStored(StoreError):
    """The destination answered the write, but a HEAD after it does not find what was written."""


async def why_not_stored(dst: Any, dst_key: str, size: int, *, asked: bool) -> str | None:
    """None when DST holds `size` bytes under `dst_key`; else what the HEAD found instead, in a
    few words. Credentials that may write but not read (a backup bucket's write-only policy) make
    the HEAD AccessDenied: the default sample then checks nothing (None), while `--verify`
    (`asked`) fails the object saying so."""
    try:
        got: ObjectInfo = await dst.head(dst_key)
    except AccessDenied:
        if not asked:
            return None
        raise
    except NotFound:
        return "the destination answered the write but does not have the object"
    if got.size is not None and got.size != size:
        return f"the destination holds {got.size} bytes after the write, not {size}"
    return None
