"""Conditional reads: every read of one object in more than one request asks for one version.

An object read in several requests (the ranges of a multipart download or of a streamed copy
in parts, a spread helper process's ranges, the UploadPartCopy requests of a server-side copy
in parts, the probe and the rest of an object whose size the listing did not give) could
otherwise be spliced from two versions when it is overwritten meanwhile: ranges fetched before
the overwrite hold old bytes, the later ones new bytes, and the file or object that lands is
neither. So each such request carries `If-Match: "<ETag>"` (a copy: `x-amz-copy-source-if-match`)
with the ETag the run saw for the object (its listing, or one HEAD where the listing gave none),
and a source that changed answers 412, mapped to SourceChanged, instead of bytes of another
version. engine/transfer/one_object.py then throws away what the attempt wrote (aborts the upload, removes
the temporary file, discards a kept partial file) and starts the object over once from its new
version; a second change fails it with one line.

Every such request names the condition itself: a read in its GetOptions (`if_match`,
stores/base.py), a server-side copy as `copy_from(..., if_match=)`, a spread helper process in its
task (engine/transfer/spread.py HelperTask). An argument, not a context variable: a read that
names no ETag is held to none, whatever it runs inside of, so what a request is held to is what
its caller wrote, and a store, a wrapper or a helper process has nothing to carry across. Stores
that honour it declare `features.conditional_reads` (S3, the in-memory store); the
others (local files, list/get servers) ignore it. A single GET of a whole object is one version
by itself, but it is held to the listed ETag all the same (engine/transfer/ways.py
`Whole._read_whole`): its answer must name that ETag (`check_answer`), or it is another request's answer
(a server that sent bytes after an earlier body makes answers drift on a kept-alive connection),
and an object of the same length would be written under the wrong name.

A local file has no ETag: its version is what the listing saw (size, mtime) and what fstat says
of the fd each read opens (FileVersion, carried by the context variable SOURCE_FILE around one
object), so an upload in parts or a streamed PUT never completes from two versions of a file
rewritten meanwhile.
"""

from __future__ import annotations

import os
from contextvars import ContextVar

from ..errors import SourceFileChanged, Transient


class FileVersion:
    """The version of a local file that every read of one object must come from.

    Why: a file rewritten in place while it is uploaded in parts (a database, a log) would give an
    object whose first parts are of the old file and the rest of the new one, completed with exit
    0. The transfer sets one FileVersion around each object (SOURCE_FILE) from what its listing
    saw (size, mtime); the local store's reads (stores/local/store.py, stores/files/bodies.py) call `opened`
    with the fstat of the fd they open and `read` with the fstat of the same fd once their bytes
    are read. The first open pins the file's identity (device, inode, size, mtime and ctime in
    ns) after comparing it with the listing; every read must end with the identity it opened with,
    and that must be the pinned one. A rewrite changes mtime and ctime (an append also the size), a
    replacement by rename the inode: the read raises SourceFileChanged, so no upload completes
    from two versions (the transfer starts the object over once, then fails it). The cost is one
    fstat of an fd already open per read (two for a ranged read), nothing per byte.

    A read outside a transfer gets a FileVersion of its own (nothing to compare with but itself):
    its bytes are still all from one version."""

    __slots__ = ("size", "mtime", "pinned")

    def __init__(self, size: int | None = None, mtime: float | None = None) -> None:
        self.size, self.mtime = size, mtime  # what the listing saw (None: not known)
        self.pinned: tuple[int, int, int, int, int] | None = None

    def opened(self, st: os.stat_result, url: str, key: str) -> tuple[int, int, int, int, int]:
        """The identity of a file just opened (its fstat), checked against this version; returned
        for `read`."""
        ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        pinned = self.pinned
        if pinned is None:
            # the listing's mtime is st_mtime as a float: the same conversion gives the same value
            if (self.size is not None and st.st_size != self.size) or (
                    self.mtime is not None and abs(st.st_mtime - self.mtime) > 1e-6):
                raise SourceFileChanged("the file changed since it was listed (size or mtime)",
                                        op="read", url=url, key=key)
            self.pinned = ident
        elif ident != pinned:
            raise SourceFileChanged("the file changed while it was read (size, mtime or ctime)",
                                    op="read", url=url, key=key)
        return ident

    def read(self, ident: tuple[int, int, int, int, int], st: os.stat_result, url: str, key: str) -> None:
        """After a read through the fd opened as `ident`: its fstat now must still be that one, and
        the object's (two reads that opened concurrently each compare with what the other pinned)."""
        now = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if now != ident or now != self.pinned:
            raise SourceFileChanged("the file changed while it was read (size, mtime or ctime)",
                                    op="read", url=url, key=key)


# the version of the local file the current object is read from (set by engine/transfer/one_object.py)
SOURCE_FILE: ContextVar[FileVersion | None] = ContextVar("s3bulk_source_file", default=None)


def source_file() -> FileVersion:
    """The current object's FileVersion, or a new one for a read on its own."""
    return SOURCE_FILE.get() or FileVersion()


def check_answer(etag: str | None, op: str, url: str, key: str, if_match: str | None) -> None:
    """For a read held to `if_match`: the GET's answer must name the ETag asked for. An answer of
    another object (a server that sent bytes after an earlier body, which aiohttp then reads as
    the next answer on that kept-alive connection: answers drift one request behind) could
    otherwise hand over another object's bytes of the same length. Transient: the read is asked
    again; an object that really changed answers that with 412 (SourceChanged). One string
    comparison per GET, none for a read held to nothing."""
    if if_match and (etag or "").strip().strip('"') != if_match:
        raise Transient(f"a GET answer naming ETag {etag or 'none'}, not {if_match} asked for: not this "
                        "request's answer", op=op, url=url, key=key)


def copy_source_if_match_header(if_match: str | None) -> dict[str, str]:
    """{"x-amz-copy-source-if-match": '"<etag>"'} for a copy held to a version, else {}: a server-side
    copy (CopyObject, UploadPartCopy) reads only that version of its source."""
    return {"x-amz-copy-source-if-match": f'"{if_match}"'} if if_match else {}


def quoted(if_match: str | None) -> str | None:
    """The ETag a read is held to, quoted as botocore's IfMatch/CopySourceIfMatch take it; None
    for a read held to nothing."""
    return f'"{if_match}"' if if_match else None


# --- conditional writes: --no-clobber --------------------------------------------------------------
#
# A write under --no-clobber must not replace an object or file that appeared at DST after the
# run looked (or that it never looked for: a copy lists no DST). So the write itself carries the
# condition, as the read above carries If-Match: S3's PutObject, CompleteMultipartUpload and
# CopyObject go with `If-None-Match: *` (412 when the key exists), a local file is put in place
# with renameat2(RENAME_NOREPLACE) or link+unlink, never rename over the name (stores/local/store.py),
# the in-memory store checks under its own lock. The transfer sets NO_CLOBBER around one object;
# stores that honour it declare `features.conditional_writes`, and for any other the transfer asks
# with one HEAD first (engine/transfer/one_object.py).

NO_CLOBBER: ContextVar[bool] = ContextVar("s3bulk_no_clobber", default=False)


def if_none_match_header() -> dict[str, str]:
    """{"if-none-match": "*"} while a write must not replace anything (NO_CLOBBER), else {}."""
    return {"if-none-match": "*"} if NO_CLOBBER.get() else {}


def if_none_match_param() -> dict[str, str]:
    """botocore's IfNoneMatch="*" while NO_CLOBBER is set, else {}."""
    return {"IfNoneMatch": "*"} if NO_CLOBBER.get() else {}
