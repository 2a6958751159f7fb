"""Archived objects: GLACIER and DEEP_ARCHIVE objects cannot be read until restored.

S3 answers a GET (or a CopyObject from one) with 403 InvalidObjectState; a mirror of a bucket with
a lifecycle rule that archives old objects would fail on each of them and never exit 0. As aws-cli
and s5cmd do, such objects are skipped and counted ("skipped (archived)" in the summary, one line
at the end) unless `--force-archived`. The listing names each key's storage class, so only keys
in an archive class cost anything: one HEAD each, to see whether a restore finished
(`x-amz-restore: ongoing-request="false"`), in which case the object is copied as any other.

GLACIER_IR (Instant Retrieval) is no archive: it is read like STANDARD. An INTELLIGENT_TIERING
object in one of its opt-in archive tiers is not told apart by the listing (only a HEAD's
x-amz-archive-status says it): it is tried, and fails with S3's InvalidObjectState.
"""

from __future__ import annotations

import asyncio
from typing import Protocol, Sequence

from ...model import ObjectInfo

ARCHIVED = frozenset({"GLACIER", "DEEP_ARCHIVE"})
HEADS_AT_ONCE = 32  # restore checks of one page in flight at once


def restored(header: str | None) -> bool:
    """Whether an x-amz-restore header says a restored copy is readable now."""
    return header is not None and 'ongoing-request="false"' in header.replace(" ", "")


class RestoreStatus(Protocol):
    """A store that says whether an archived object's restored copy is readable (S3's x-amz-restore)."""

    async def restore_status(self, key: str) -> str | None: ...


async def split_archived(src: RestoreStatus, entries: Sequence[ObjectInfo]) -> tuple[list[ObjectInfo], list[ObjectInfo]]:
    """(entries to copy, archived entries skipped): a page without an archived key is handed back
    as it is, with no request; each archived key is asked once (HEAD) whether it was restored."""
    if not any(e.storage_class in ARCHIVED for e in entries):
        return list(entries), []
    limit = asyncio.Semaphore(HEADS_AT_ONCE)

    async def readable(e: ObjectInfo) -> bool:
        if e.storage_class not in ARCHIVED:
            return True
        async with limit:
            return restored(await src.restore_status(e.key))

    verdicts = await asyncio.gather(*(readable(e) for e in entries))
    kept = [e for e, ok in zip(entries, verdicts) if ok]
    skipped = [e for e, ok in zip(entries, verdicts) if not ok]
    return kept, skipped
