"""What a write's answer said it stored: its ETag and checksum, for `--verify` to hold the object to.

A write's 200 names what the server stored: its ETag (PutObject and UploadPart in a header,
CompleteMultipartUpload and CopyObject in the answer's XML) and, when the write carried one, its
checksum (x-amz-checksum-*). `--verify`'s HEAD after the write (engine/transfer/verify.py) then
checks that the object holds what the answer said, whatever the encryption: with SSE-KMS an ETag
is no MD5 of the bytes, so the ETag can only be compared with what the server itself answered.
A gateway that acknowledges one thing and stores another is caught so.

The answer travels as a context variable, as --no-clobber's condition does (stores/conditions.py): the
transfer sets a `WriteAnswer` around one object's write only when that object is to be checked,
and the S3 store's writes fill it in. Outside (the default path) a write pays one ContextVar.get.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from .checksums import from_fields, from_headers


class WriteAnswer:
    """The ETag (without its quotes) and the (algorithm, value) checksum the last write of one
    object answered; None where the answer named none (a store that keeps no ETag, a local file)."""

    __slots__ = ("etag", "checksum")

    def __init__(self) -> None:
        self.etag: str | None = None
        self.checksum: tuple[str, str] | None = None


WRITTEN: ContextVar[WriteAnswer | None] = ContextVar("s3bulk_written", default=None)


def _etag(value: Any) -> str | None:
    return str(value).strip().strip('"') or None if value else None


def note(etag: Any, checksum: tuple[str, str, str] | None = None) -> None:
    """Keep what a write answered, when the transfer asked for it (WRITTEN is set)."""
    answer = WRITTEN.get()
    if answer is None:
        return
    answer.etag = _etag(etag)
    answer.checksum = (checksum[0], checksum[1]) if checksum is not None else None


def note_headers(headers: Any, etag: Any = None) -> None:
    """note() from a lean answer's headers (lower-case names); `etag` when the body named it."""
    if WRITTEN.get() is None:
        return
    note(etag if etag is not None else headers.get("etag"), from_headers(headers))


def note_fields(resp: dict[str, Any], etag: Any = None) -> None:
    """note() from a botocore answer (ETag, ChecksumCRC32...); `etag` when it sits elsewhere
    (CopyObjectResult)."""
    if WRITTEN.get() is None:
        return
    note(etag if etag is not None else resp.get("ETag"), from_fields(resp))
