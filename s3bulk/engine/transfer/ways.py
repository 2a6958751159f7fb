"""The ways one object moves, each a small class chosen by one test (one_object.py's Mover).

As s3transfer's download output managers are each asked `is_compatible` and the first that is
takes the download, a Transfer asks its ways in order whether each `applies(src, dst, info)`, and
the first that does moves the object:

1. `Unsized`: the listing gave no size (a list/get server): one GET of the first bytes tells it,
   and is the whole object when small; a big one goes on in parts;
2. `ServerSide`: the destination copies from the source itself (same S3 endpoint and
   credentials, or two local paths): no bytes pass through us;
3. `Streamed`: a local file above 1 MiB to a store that streams PUTs: one PUT whose body is read
   from the file as the socket takes it (stores/files/bodies.py);
4. `Whole`: up to the multipart threshold, one read and one write, the body held once;
5. `InParts` (in_parts.py): above it, ranges read in parallel and written as parts, an upload a
   stopped run left open continued, a part file kept for --resume continued, or the parts spread
   over helper processes (spread.py).

A way holds what its test needs from the two stores, decided once when the Transfer is made, so
choosing costs a few attribute reads per object; what one object's move needs while it runs (the
parts of an upload) lives in a state object of that object (in_parts.PartsJob), never in closures.
"""

from __future__ import annotations

from typing import cast

from ...model import ObjectInfo, ObjectProps
from ...stores import Store, Writer
from ...stores.base import (COPY_UPLOAD_OPENED, WHOLE, FileBodyReader, GetOptions, GetResult, ServerSideCopier,
                                StreamedPutter)
from ...stores.reading import read_first, read_range
from . import guards
from ...stores.files.bodies import CHUNK as BODY_CHUNK
from .mover import Mover
from .notes import UploadBegun, UploadEnd


UNSIZED_PROBE = 1024 * 1024  # first GET of an object of unknown size asks for this much
STREAM_ABOVE = 1024 * 1024   # single PUTs from a local file bigger than this are streamed, not read whole

Moved = tuple[int, bool]  # (bytes, whether it was copied server-side)


class Unsized:
    """No size from the listing (a list/get server; a source whose reads can be held to one version
    was asked with one HEAD instead, Transfer.known_version): one GET of the first bytes tells it,
    and is the whole object when small (no extra HEAD per object)."""

    possible = True

    def __init__(self, transfer: Mover) -> None:
        self.t = transfer

    def applies(self, src: Store, dst: Writer, info: ObjectInfo) -> bool:
        return info.size is None

    async def move(self, info: ObjectInfo, dst_key: str) -> Moved:
        t, src_key = self.t, info.key
        probe = min(t.options.multipart_threshold, UNSIZED_PROBE)
        await t.budget.acquire(probe)
        try:
            data, size = await read_first(t.src, src_key, probe)
            if size <= t.options.multipart_threshold:
                extra = size - len(data)
                if extra > 0:  # bigger than the probe, small enough for one put
                    await t.budget.acquire(extra)
                    try:
                        data += await read_range(t.src, src_key, len(data), size)
                        await t.put_checked(src_key, dst_key, data, size, props=await t.props_for(src_key, dst_key))
                    finally:
                        t.budget.release(extra)
                else:
                    await t.put_checked(src_key, dst_key, data, size, props=await t.props_for(src_key, dst_key))
                return size, False
        finally:
            t.budget.release(probe)
        await t.in_parts.parts(src_key, dst_key, size)
        return size, False


class ServerSide:
    """The destination copies from the source (CopyObject, or UploadPartCopy in parts above the
    copy threshold through an upload of the store's own: an intent, no id and part size 0, stands
    for it in the journal until the store names it (_CopyUpload), then the upload by its id, until it ends)."""

    def __init__(self, transfer: Mover, dst: Writer, src: Store) -> None:
        self.t = transfer
        self.copier = cast(ServerSideCopier, dst)  # when `possible`: its features said it is one
        self.possible = dst.features.server_side_copy and self.copier.can_copy_from(src)

    def applies(self, src: Store, dst: Writer, info: ObjectInfo) -> bool:
        return self.possible and info.size is not None

    async def move(self, info: ObjectInfo, dst_key: str) -> Moved:
        t = self.t
        size = info.size
        assert size is not None  # applies() said so (an assert, not a cast(): a call per object)
        props, replace = await self._props(info.key, dst_key)
        in_parts = size > t.options.copy_threshold and t.dst.features.resumable_uploads
        if in_parts and t.no_clobber:
            await guards.skip_if_exists(t.dst, dst_key)  # no part copied in vain
        if not in_parts:  # the copy is of the version listed, or SourceChanged
            await self.copier.copy_from(t.src, info.key, dst_key, size, info.mtime, props=props, replace=replace,
                                        if_match=t.version_of(info))
            return size, True
        await t.in_parts.continue_upload(dst_key, size, 0, None)  # a stopped run's, of no use to a copy: gone
        t.listener.on_upload(UploadBegun.of(dst_key, None, size, 0, info))
        named = _CopyUpload(t, dst_key, size, info)
        token = COPY_UPLOAD_OPENED.set(named.opened)  # the store names its upload as soon as it has it
        try:  # every UploadPartCopy of the version listed, or SourceChanged
            await self.copier.copy_from(t.src, info.key, dst_key, size, info.mtime, props=props, replace=replace,
                                        if_match=t.version_of(info))
        finally:
            COPY_UPLOAD_OPENED.reset(token)
        t.listener.on_upload(UploadEnd.of(dst_key, named.upload_id))
        return size, True

    async def _props(self, src_key: str, dst_key: str) -> tuple[ObjectProps | None, bool]:
        """(props, replace) for copy_from: a plain copy keeps what the source has by itself (only
        ACL, encryption and storage class are sent); anything else asks the source once and
        replaces metadata and tags with what engine/transfer/object_props.py decides."""
        t = self.t
        if t.dst_kind != "s3":
            return None, False
        if t.write_props.plain_copy:
            return t.write_props.set, False
        return t.dst_props(dst_key, await t.source_props(src_key)), True


class _CopyUpload:
    """The upload a server-side copy in parts opens for itself, told to the listener (the worker's
    journal and its forced stop, engine/run/open_uploads.py) the moment its CreateMultipartUpload
    answers (stores.base.COPY_UPLOAD_OPENED); a copy retried whole opens another, which replaces it."""

    __slots__ = ("t", "dst_key", "size", "info", "upload_id")

    def __init__(self, t: Mover, dst_key: str, size: int, info: ObjectInfo) -> None:
        self.t, self.dst_key, self.size, self.info = t, dst_key, size, info
        self.upload_id: str | None = None  # until the store names it (a store that does not: the intent stands)

    def opened(self, upload_id: str) -> None:
        self.upload_id = upload_id
        self.t.listener.on_upload(UploadBegun.of(self.dst_key, upload_id, self.size, 0, self.info))


class Streamed:
    """One PUT whose body is read from the local file as it is sent: a few chunks in memory, not
    the object (held against the budget as such)."""

    def __init__(self, transfer: Mover, src: Store, dst: Writer) -> None:
        self.t = transfer
        self.possible = src.features.file_bodies and dst.features.streamed_puts
        self.above, self.most = STREAM_ABOVE, transfer.options.multipart_threshold

    def applies(self, src: Store, dst: Writer, info: ObjectInfo) -> bool:
        size = info.size
        return self.possible and size is not None and self.above < size <= self.most

    async def move(self, info: ObjectInfo, dst_key: str) -> Moved:
        t = self.t
        size = info.size
        assert size is not None  # applies() said so (an assert, not a cast(): a call per object)
        props = await t.props_for(info.key, dst_key)
        held = min(size, 2 * BODY_CHUNK)
        await t.budget.acquire(held)
        try:
            body = cast(FileBodyReader, t.src).read_body(info.key, 0, size)  # features.file_bodies
            await cast(StreamedPutter, t.dst).put_body(dst_key, body, t.dst_mtime(info.mtime),
                                                       props=props)  # features.streamed_puts
        finally:
            t.budget.release(held)
        return size, False


class Whole:
    """Up to the multipart threshold: one read, one write, the body held once against the budget.

    The hot path of many small downloads: one GET held to the listing's ETag (If-Match, its
    answer checked by the store), the file time its metadata carries, the file written and marked
    as the object's copy. The read runs in this coroutine frame (inline, and the budget's fast
    path without a coroutine): each frame more is passed through by every resumption of the GET's
    await, per object. The write goes through put_checked, the one place that decides the mark."""

    possible = True

    def __init__(self, transfer: Mover) -> None:
        self.t = transfer
        self.most = transfer.options.multipart_threshold
        # decided once: whether a read is held to the listing's ETag (version_of), the file time
        # read (not with the properties, which carry it)
        self.held = transfer.src.features.conditional_reads
        self.with_mtime = transfer.restore_mtime and not transfer.wants_src_props

    def applies(self, src: Store, dst: Writer, info: ObjectInfo) -> bool:
        size = info.size
        return size is not None and size <= self.most

    async def move(self, info: ObjectInfo, dst_key: str) -> Moved:
        t = self.t
        size = info.size
        assert size is not None  # applies() said so (an assert, not a cast(): a call per object)
        budget = t.budget
        if not budget.take(size):
            await budget.acquire(size)
        try:
            if t.first_read is not None or t.wants_src_props:
                data, props, stored = await self._read_whole(info.key, dst_key, size, t.version_of(info))
            else:  # _read_whole's hot path, inline
                etag = info.etag if self.held else None
                with_mtime = self.with_mtime
                opts = GetOptions(if_match=etag, with_mtime=with_mtime) if etag or with_mtime else WHOLE
                got = await t.src.get(info.key, opts)
                if len(got.data) != size:
                    got = await self._read_again(info.key, opts, size)
                data, props, stored = got.data, t.dst_props(dst_key, None), got.mtime if with_mtime else None
            if stored is None:
                await t.put_checked(info.key, dst_key, data, size, info.mtime, props)
            else:  # the object's own file time: the file marked as the copy of its LastModified
                await t.put_checked(info.key, dst_key, data, size, stored, props, marked=info.mtime)
        finally:
            budget.release(size)
        return size, False

    async def _read_again(self, src_key: str, opts: GetOptions, size: int) -> GetResult:
        """The GET asked again (up to --retries times) while it brings another length than listed
        (see _read_whole); the last answer is returned as it is, and put_checked refuses it."""
        for _ in range(self.t.options.retries):
            got = await self.t.src.get(src_key, opts)
            if len(got.data) == size:
                break
        return got

    async def _read_whole(self, src_key: str, dst_key: str, size: int, etag: str | None = None
                          ) -> tuple[bytes, ObjectProps | None, float | None]:
        """The object's one GET, asked again (up to --retries times) while it brings another length
        than listed: an answer that is not this request's (a server that sent bytes after an
        earlier body, which aiohttp reads as the next answer on that connection) or a short one
        the store could not tell. The last read is returned as it is; put_checked refuses it.

        With the listing's `etag` the GET is a conditional read (stores/conditions.py): it asks
        for that version (If-Match: an object changed since answers 412, SourceChanged) and its
        answer must name it, or it is asked again. A drifted answer of another object of the same
        length would otherwise be written under this name."""
        t = self.t
        with_props = t.wants_src_props
        ready = t.first_read
        if ready is not None and not with_props and len(ready.data) == size:  # the planner's GET brought it
            t.first_read = None
            return ready.data, t.dst_props(dst_key, None), ready.mtime if t.restore_mtime else None
        with_mtime = t.restore_mtime and not with_props
        # the hot path (no ETag to hold it to, nothing but the bytes) passes the shared WHOLE
        opts = GetOptions(if_match=etag, with_props=with_props, with_mtime=with_mtime) \
            if etag or with_props or with_mtime else WHOLE
        got = await t.src.get(src_key, opts)
        if len(got.data) != size:
            got = await self._read_again(src_key, opts, size)
        stored = got.mtime if t.restore_mtime else None
        if got.props is None:
            return got.data, t.dst_props(dst_key, None), stored
        return got.data, t.dst_props(dst_key, await t.source_props(src_key, got.props)), stored
