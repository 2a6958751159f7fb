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
    """The source is no longer the version this copy reads (412 to If-Match, or a changed ETag).

    Not retried as such: engine/transfer.py starts the object over once from its new version
    (a "restarted" event), and a second change fails the object with `final_message`. Nothing
    lands under the final name from two versions."""

    retryable = False
    final_message = "source changed during the copy"

    def final(self) -> "SourceChanged":
        """The failure reported when the object changed again after its restart: one line."""
        return type(self)(self.final_message, op=self.op, url=self.url, key=self.key)


class SourceFileChanged(SourceChanged):
    """A local file changed (size, mtime or ctime) while it was read for an upload."""

    final_message = "source file changed during the upload"


def if_match_header() -> dict[str, str]:
    """{"if-match": '"<etag>"'} inside a conditional read, else {}."""
    etag = IF_MATCH.get()
    return {"if-match": f'"{etag}"'} if etag else {}
