"""What was written, read back: a HEAD of each object after its write (`--verify`), or of a sample.

A write's 200 is the server's word that it stored the object. A broken gateway or proxy can answer
200, with the right ETag even, and store nothing (or something else); real S3 does not, and a HEAD
after every write doubles the requests of a run of small objects, so it is asked for: `--verify`
checks every object written: that the destination has it, with its size, and with the ETag the
write's own answer named (stores/written.py). Not an MD5 computed here: with SSE-KMS, a bucket's
default encryption included, an S3 ETag is not the MD5 of the bytes, but whatever the encryption
the object a HEAD finds must carry the ETag its write was answered with; a gateway that
acknowledges one thing and stores another is caught so. Where the write's answer named a
checksum (x-amz-checksum-*, the CRC32 every upload carries), `--verify` also asks the object's
(one HEAD with x-amz-checksum-mode) and compares them.

By default one object per worker is checked (unless the credentials may not read it back), the first it writes to S3: one HEAD per worker per
run, nothing on the hot path, and a gateway that stores nothing is noticed at once, before the run
has written a million objects that are not there.

An object that does not check out is written once more and checked again; if it still does not,
it fails (`NotStored`), one line naming what the HEAD found: exit 1.
"""

from __future__ import annotations


from typing import cast

from ...errors import AccessDenied, NotFound
from ...model import ObjectInfo
from ...stores.base import ChecksumReader, Store
from ...stores.written import WriteAnswer


async def why_not_stored(dst: Store, dst_key: str, size: int, *, asked: bool,
                         answer: WriteAnswer | None = None) -> str | None:
    """None when DST holds `size` bytes under `dst_key`, with the ETag (and, under `--verify`, the
    checksum) the write's `answer` named; else what the HEAD found instead, in a few words.
    Credentials that may write but not read (a backup bucket's write-only policy) make the HEAD
    AccessDenied: the default sample then checks nothing (None), while `--verify` (`asked`) fails
    the object saying so."""
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
    if answer is None:
        return None
    if answer.etag is not None and got.etag is not None and got.etag != answer.etag:
        return (f"the destination holds ETag {got.etag} after the write, not {answer.etag} "
                "its answer named")
    if answer.checksum is not None and asked and dst.features.checksums:
        found = await cast(ChecksumReader, dst).object_checksum(dst_key)
        algorithm, value = answer.checksum
        if found is not None and found.algorithm == algorithm and found.value != value:
            return (f"the destination holds {algorithm} {found.value} after the write, not {value} "
                    "its answer named")
    return None
