"""What DST already holds, kept: `--no-clobber` and `--update`.

--no-clobber is race-free because the write itself carries the condition (stores/conditions.py
NO_CLOBBER: S3's If-None-Match: *, a local no-replace rename): nothing here is needed for it
except where a write cannot carry it, or where asking first saves work. `skip_if_exists` is that
HEAD: before the parts of a multipart upload are sent (so none is sent in vain; the completion is
still conditional), and before every write to a store that does not declare
`features.conditional_writes`.

--update keeps a DST copy newer than the source (DST's modification time, or LastModified, later
than the source's). sync decides it from the DST listing it walks anyway (engine/run/worker.py);
copy and mv list no DST, so `skip_if_newer` asks with one HEAD per object.

Both raise DestinationExists (DestinationNewer for --update): the worker counts the object as
skipped, with the reason, never as failed.
"""

from __future__ import annotations

from ...errors import DestinationExists, NotFound
from ...model import ObjectInfo
from ...stores.base import Store


class DestinationNewer(DestinationExists):
    """--update: DST's copy is newer than the source's; kept as it is."""


REASONS = {DestinationExists: "exists at DST (--no-clobber)", DestinationNewer: "newer at DST (--update)"}


def reason(exc: DestinationExists) -> str:
    """The reason a skipped object's report row and -v line give."""
    return REASONS.get(type(exc), REASONS[DestinationExists])


async def head_or_none(dst: Store, key: str) -> ObjectInfo | None:
    """DST's object under `key`, or None (one HEAD)."""
    return await _head(dst, key)


async def _head(dst: Store, key: str) -> ObjectInfo | None:
    try:
        return await dst.head(key)
    except NotFound:
        return None


async def skip_if_exists(dst: Store, key: str) -> None:
    """DestinationExists when DST has `key` (one HEAD)."""
    if await _head(dst, key) is not None:
        raise DestinationExists("already at the destination (--no-clobber): not replaced", op="head",
                                url=dst.location.url_for(key), key=key)


def newer(src: ObjectInfo, dst: ObjectInfo) -> bool:
    """Whether DST's copy is newer than the source's (both times known)."""
    return src.mtime is not None and dst.mtime is not None and dst.mtime > src.mtime


async def skip_if_newer(dst: Store, key: str, src: ObjectInfo) -> None:
    """DestinationNewer when DST's `key` is newer than `src` (one HEAD; a source without a time
    is copied)."""
    if src.mtime is None:
        return
    refuse_newer(dst, key, src, await _head(dst, key))


def refuse_newer(dst: Store, key: str, src: ObjectInfo, found: ObjectInfo | None) -> None:
    """DestinationNewer when `found` (DST's `key`, as a HEAD found it) is newer than `src`."""
    if found is not None and newer(src, found):
        raise DestinationNewer("newer at the destination (--update): not replaced", op="head",
                               url=dst.location.url_for(key), key=key)
