"""Conditional reads: the ranged GETs of a resumed download ask for the version they continue.

A download resumed from a kept temporary file (stores/partfile.py) already holds parts of one
version of the object. Its remaining parts are fetched with `If-Match: "<ETag>"` so that a
source overwritten after the resumed run listed it answers 412 instead of bytes of another
version, which would be spliced in. The condition travels as a context variable, set by the
transfer around the object's reads only (and by a spread helper for its parts), so the store
API stays as it is; stores that cannot send it (local files, list/get servers) ignore it, and
the resumed run's listing, compared with the recorded identity, is then the check.
"""

from __future__ import annotations

from contextvars import ContextVar

from ..errors import StoreError

IF_MATCH: ContextVar[str | None] = ContextVar("s3bulk_if_match", default=None)


class SourceChanged(StoreError):
    """The source is no longer the version a resumed download continues (412 to If-Match)."""

    retryable = False


def if_match_header() -> dict[str, str]:
    """{"if-match": '"<etag>"'} inside a conditional read, else {}."""
    etag = IF_MATCH.get()
    return {"if-match": f'"{etag}"'} if etag else {}
