"""Multipart uploads left open at a destination: finding them and aborting them.

An S3 multipart upload that is neither completed nor aborted shows in no listing and is billed for
its parts until a lifecycle rule (AbortIncompleteMultipartUpload) removes it. A run records every
upload it opens in its journal before the first part is sent (engine/journal/units.py; engine/run/worker.py writes the
record to disk itself, so a SIGKILL cannot lose it), and even before the upload is asked for: an
*intent*, a row without an upload id. `--resume` continues or aborts what the journal holds. Two
cases need the store's own list of open uploads (ListMultipartUploads):

- an intent never completed by an id: the run stopped while CreateMultipartUpload was in flight.
  The store may have made the upload; `resolve_intent` finds the ones of exactly that key begun
  since the intent (within the clock skew S3 allows) and aborts them. No part can be in them: the
  id is recorded before the first part is sent.
- uploads nothing recorded: a run without a journal stopped outright, a journal deleted, another
  tool. `s3bulk rm --incomplete-uploads s3://bucket/prefix/` lists and aborts every upload open
  under a prefix (`abort_incomplete`; --dry-run lists them only).

Every abort here is confirmed (stores/base.py abort_confirmed): a part that reaches the server after
an AbortMultipartUpload can bring the upload back, so each is aborted again until ListParts says it
is gone, a few times over some seconds; one still listed after that is said, never counted as done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator, cast

from ..errors import StoreError, UsageError
from .events import Failure, Subscriber, UploadAborted, UploadFound
from ..stores.base import ABORT_TRIES, OpenUpload, ResumableUploads, Store, abort_confirmed, why_still_open

# S3 refuses a request signed more than 15 minutes off its own clock, so no store a run could write
# to has a clock further off ours: an upload an intent made began no earlier than this before it
SKEW = 15 * 60.0


async def open_uploads(store: Store, prefix: str) -> AsyncIterator[OpenUpload]:
    """Every multipart upload open under `prefix` at `store` (features.resumable_uploads), page by page."""
    uploads = cast(ResumableUploads, store)
    key_marker: str | None = None
    upload_marker: str | None = None
    while True:
        page, after = await uploads.list_uploads(prefix, key_marker, upload_marker)
        for upload in page:
            yield upload
        if after is None:
            return
        key_marker, upload_marker = after


async def resolve_intent(store: Store, key: str, started: float | None, known: frozenset[str] = frozenset()) -> int:
    """Abort the uploads of exactly `key` that an intent recorded at `started` (our clock) may have
    made: those begun no earlier than SKEW before it, except the ids in `known` (recorded, so
    someone continues them). Returns how many were aborted. StoreError when the store cannot say."""
    if not store.features.resumable_uploads:
        return 0
    since = (started or 0.0) - SKEW
    doomed = [u for u in [u async for u in open_uploads(store, key)]
              if u.key == key and u.upload_id not in known and (u.initiated is None or u.initiated >= since)]
    left = [u for u in doomed if not await abort_confirmed(store, u.key, u.upload_id)]
    if left:
        raise StoreError(f"{len(left)} multipart upload(s) still listed after {ABORT_TRIES} aborts",
                         op="abort multipart upload", url=store.location.url_for(key), key=key)
    return len(doomed)


async def abort_rows(store: Store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Abort the uploads journal rows name (a replaced or finished run's leftovers); a row without
    an id is an intent, resolved by listing the key's uploads. Returns the rows whose upload may
    still be open (its abort not confirmed, or the store could not say): the caller keeps them
    recorded. An upload already gone is no error."""
    if not rows or not store.features.resumable_uploads:
        return []
    known = frozenset(r["upload_id"] for r in rows if r["upload_id"] is not None)
    left: list[dict[str, Any]] = []
    for row in rows:
        try:
            if row["upload_id"] is None:
                await resolve_intent(store, row["dst_key"], row.get("started"), known)
            elif not await abort_confirmed(store, row["dst_key"], row["upload_id"]):
                left.append(row)
        except StoreError:
            left.append(row)
    return left


async def abort_uploads(location: Any, options: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """abort_rows at the store `location` names, opened for the purpose; the rows left open."""
    if not rows:
        return []
    from ..stores import open_store

    store = await open_store(location, options.store_options())
    try:
        return await abort_rows(store, rows)
    finally:
        await store.close()


@dataclass(slots=True)
class LeftoversResult:
    """What `rm --incomplete-uploads` did: uploads aborted (or found, with dry_run), failures as (url, why)."""

    aborted: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    dry_run: bool = False


async def abort_incomplete(url: str, *, s3: Any = None, dry_run: bool = False, all_objects: bool = False,
                           options: Any = None, subscriber: Subscriber | None = None) -> LeftoversResult:
    """Abort every multipart upload open under URL (s3://bucket/prefix, or the one key it names
    and anything beginning with it); the subscriber gets UploadAborted (dry: UploadFound) or
    Failure "abort multipart upload" for each. A whole bucket needs all_objects, as `rm` does."""
    from ..stores import StoreOptions, open_store
    from ..config.urls import parse_location

    loc = parse_location(url, s3)
    if not loc.is_bucket:
        raise UsageError(f"{url}: incomplete multipart uploads are an S3 bucket's (give s3://BUCKET/PREFIX)")
    if not loc.prefix and not all_objects:
        raise UsageError(f"{url} is a whole bucket: add --all to abort every incomplete upload in it")
    store = await open_store(loc, options or StoreOptions())
    result = LeftoversResult(dry_run=dry_run)
    to = subscriber or Subscriber()
    try:
        async for upload in open_uploads(store, loc.prefix):
            where = f"{loc.url_for(upload.key)}?uploadId={upload.upload_id}"
            why = None
            if not dry_run:
                why = await why_still_open(store, upload.key, upload.upload_id)
            if why is None:
                result.aborted += 1
                to.notify(UploadFound("delete", None, where, upload.key, upload.upload_id, upload.initiated) if dry_run
                          else UploadAborted(where, "dst", key=upload.key, upload_id=upload.upload_id,
                                             initiated=upload.initiated))
            else:
                result.failures.append((where, why))
                to.notify(Failure("abort multipart upload", where, "", why))
    finally:
        await store.close()
    return result
