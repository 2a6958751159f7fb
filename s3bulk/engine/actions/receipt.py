"""`check --against-report FILE DST`: a report (`--report`) read back as a receipt of what must be at DST.

A report names every object a job landed, with its size and the source's ETag. Weeks later an
auditor wants to know that all of it is still there, unchanged, without the source at hand (it may
be gone: that was the migration). Every row whose final outcome put an object at DST (`copied`,
`skipped`, `moved`, `same`; the later row of an object wins) is looked up at DST with one HEAD:

- not there: `missing`;
- another size: `differs`;
- both ETags plain MD5s (32 hex digits: a single-part upload or CopyObject) and not equal:
  `differs`. A multipart ETag depends on the part size, so it proves nothing against another
  tool's or run's part size; such objects are checked by size alone.

Each difference goes to the caller as a Difference event, as `check` reports them. Memory: one
entry per object of the report (its destination, size and ETag), so the later row can win.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from ...errors import NotFound, UsageError
from ...config.urls import S3Options, parse_location
from ..events import Difference, Subscriber
from ..report import read_rows

__all__ = ["LANDED", "ReceiptResult", "check_receipt"]

LANDED = frozenset({"copied", "skipped", "moved", "same"})  # outcomes that leave the object at DST
_MD5 = re.compile(r"[0-9a-f]{32}")


@dataclass(slots=True)
class ReceiptResult:
    """How many of the report's objects were looked up, found as recorded, and differ or are missing."""

    checked: int = 0
    same: int = 0
    differs: int = 0
    missing: int = 0

    @property
    def ok(self) -> bool:
        return not (self.differs or self.missing)


def check_receipt(report: str, dst: str, s3: S3Options | None, *, concurrency: int = 64,
                  subscriber: Subscriber | None = None) -> ReceiptResult:
    """Check DST against the report at `report` (see the module docstring); differences go to the
    subscriber (Difference) as they are found. Raises UsageError for a report that names objects
    outside DST."""
    return asyncio.run(_check(report, dst, s3, concurrency, subscriber or Subscriber()))


def expected(report: str, dst_base: str) -> dict[str, tuple[str, int | None, str | None, str]]:
    """The report's last row per destination: key under DST -> (outcome, size, ETag, source)."""
    last: dict[str, tuple[str, int | None, str | None, str]] = {}
    for row in read_rows(report):
        url = row.get("dst") or ""
        outcome = row.get("outcome") or ""
        if not url.startswith(dst_base):
            if url and outcome in LANDED:
                raise UsageError(f"the report names {url}, which is not under DST ({dst_base}): "
                                 "give the DST the report's job wrote to")
            continue
        etag, checksum = row.get("etag"), row.get("checksum") or ""
        if not etag and checksum.startswith("etag:"):  # a local source's ETag, computed by --checksum
            etag = checksum[5:]
        last[url[len(dst_base):]] = (outcome, row.get("size"), etag, row.get("src") or url)
    return last


async def _check(report: str, dst: str, s3: S3Options | None, concurrency: int,
                 to: Subscriber) -> ReceiptResult:
    from ...stores import open_store
    from ...stores import settle_location

    loc = settle_location(parse_location(dst, s3))
    key_base = loc.url_for("x")[:-1]  # what a key is appended to
    want = expected(report, key_base + loc.prefix)
    result = ReceiptResult()
    store = await open_store(loc)
    window = asyncio.Semaphore(concurrency)
    prefix = loc.prefix

    async def one(rel: str, size: int | None, etag: str | None, src: str) -> None:
        key = prefix + rel
        url = loc.url_for(key)
        try:
            async with window:
                got = await store.head(key)
        except NotFound:
            result.missing += 1
            to.notify(Difference("only-in-src", src, url))
            return
        if (size is not None and got.size is not None and size != got.size) or _etags_differ(etag, got.etag):
            result.differs += 1
            to.notify(Difference("differs", src, url))
        else:
            result.same += 1

    try:
        batch: list[asyncio.Future[None]] = []
        for rel, (outcome, size, etag, src) in want.items():
            if outcome not in LANDED:
                continue
            result.checked += 1
            batch.append(asyncio.ensure_future(one(rel, size, etag, src)))
            if len(batch) >= concurrency * 4:
                await asyncio.gather(*batch)
                batch = []
        await asyncio.gather(*batch)
    finally:
        await store.close()
    return result


def _etags_differ(recorded: str | None, found: str | None) -> bool:
    """Whether two ETags prove different bytes: only two plain MD5s can (see the module docstring)."""
    if not recorded or not found:
        return False
    a, b = recorded.strip('"').lower(), found.strip('"').lower()
    return a != b and bool(_MD5.fullmatch(a)) and bool(_MD5.fullmatch(b))
