"""Moving one object from a source store to a destination store.

The three ways, checked in this order:
1. server-side copy, when the destination can copy from the source (same S3
   endpoint and credentials, or two local paths): no bytes pass through us;
2. one read and one put, for objects up to the multipart threshold: the body is
   held once in memory (or, from a local file to a store that streams puts, read
   chunk by chunk as the socket takes it: see stores/files/bodies.py);
3. multipart: parts read as byte ranges and written at their offsets, several in
   flight, each holding its bytes against the worker's byte budget. An S3 upload left open by a
   stopped run is continued (ListParts); so is a local file a stopped run kept with a record of
   its parts (stores/files/partfile.py).

Whatever the way, an object read in more than one request (its ranges, here or in spread helper
processes; the UploadPartCopy requests of a server-side copy in parts) is read as the one version
the run saw: every request names its ETag (If-Match, stores/conditions.py), and a source changed
meanwhile raises SourceChanged instead of handing over bytes of another version. What the attempt
wrote is thrown away (upload aborted, temporary file removed) and the object starts over once from
its new version (`copy`). A file or object lands under its final name only whole and of one version.

Each way writes the object with the properties engine/transfer/object_props.py decides (the user's options over
what the source carries): the streamed whole copy takes the source's from its one GET, a copy in
parts from one HEAD.

Stores are used only through the contract in stores/base.py: what a store can do is
asked of its declared `features`, never of its type or private attributes, so the
retry wrapper and every backend (the in-memory one included) behave alike here.
"""

from __future__ import annotations

import asyncio
import sys
from collections import deque
from typing import Any, Callable, cast

from ...stores.checksums import CompositeParts, note_once
from ...errors import Corrupt, StoreError
from ...errors import ChecksumMismatch, Stopped
from ...model import ObjectInfo, ObjectProps
from ...stores import Store, Writer
from ...stores.base import (ChecksumReader, FileBodyReader, Multipart, PropsReader, ResumableUploads, ServerSideCopier,
                            StreamedPutter)
from ...stores.reading import read_first, read_range, read_with_mtime, read_with_props
from ...stores.conditions import IF_MATCH, NO_CLOBBER, SOURCE_FILE, FileVersion, SourceChanged
from ...stores.files.partfile import NO_CRC, PartialFiles, PartialUpload, SourceId, part_span
from ...stores import file_times
from ...stores.written import WRITTEN, WriteAnswer
from . import guards, object_props
from ..plan import KeyMap, TransferOptions
from .part_buffers import part_buffer
from .link import Lanes, LinkModel, part_size as link_part_size, upload_in_lanes
from .sinks import fill, range_sinks, sink_for
from .spread import Helpers, SharedFile, deal, run_parts, spread_processes


UNSIZED_PROBE = 1024 * 1024  # first GET of an object of unknown size asks for this much
STREAM_ABOVE = 1024 * 1024   # single PUTs from a local file bigger than this are streamed, not read whole
PART_READS = 3               # reads of a part that does not match its own checksum before the object fails
MIN_S3_PART = 5 * 1024 * 1024  # S3 refuses smaller parts (but the last) at completion
RESTARTS = 1  # an object whose source changes while it is copied starts over this often, then fails


class ByteBudget:
    """Bounds the bytes of object bodies held in memory by one worker.

    The fast path (room available) does not touch the event loop, so small objects
    pay almost nothing. A request larger than the whole budget is let through when
    nothing else is held, so one huge part can still move.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.used = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    async def acquire(self, n: int) -> None:
        if not self._waiters and (self.used + n <= self.limit or self.used == 0):
            self.used += n
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((n, fut))
        try:
            await fut
        except BaseException:
            if fut.done() and not fut.cancelled():
                self.release(n)
            else:
                try:
                    self._waiters.remove((n, fut))
                except ValueError:
                    pass
            raise

    def release(self, n: int) -> None:
        self.used -= n
        while self._waiters:
            want, fut = self._waiters[0]
            if fut.done():
                self._waiters.popleft()
                continue
            if self.used + want <= self.limit or self.used == 0:
                self._waiters.popleft()
                self.used += want
                fut.set_result(None)
            else:
                break


class Transfer:
    """Copies objects from src to dst for one worker; raises StoreError subclasses on failure."""

    def __init__(self, src: Store, dst: Writer, keymap: KeyMap, options: TransferOptions,
                 budget: ByteBudget, *, stopping: Callable[[], bool] | None = None,
                 on_upload: Callable[[tuple], None] | None = None,
                 resumable: dict[str, dict[str, Any]] | None = None,
                 on_part_bytes: Callable[[int], None] | None = None,
                 keep_partial: bool = False, resume_partial: bool = False,
                 on_restart: Callable[[str, str], None] | None = None,
                 keep_uploads: bool = False, uploads_logged: bool = False,
                 on_left_open: Callable[[str, str], None] | None = None) -> None:
        self.src, self.dst, self.keymap, self.options, self.budget = src, dst, keymap, options, budget
        self.server_side = dst.features.server_side_copy and _copier(dst).can_copy_from(src)
        self.local_src = src.location.kind == "local"  # its reads are pinned to one version of the file
        self.stopping = stopping or (lambda: False)
        # for the journal: uploads about to be asked for (an id of None), begun and ended
        self.on_upload = on_upload or (lambda msg: None)
        # an S3 upload cut short by a graceful stop stays open only when a journal will hold it for
        # --resume (`keep_uploads`), else it is aborted: nothing else would ever find it; one cut
        # short by cancellation (a forced stop) stays open only when its record was on disk before
        # its first part (`uploads_logged`: engine/run/worker.py's upload log)
        self.keep_uploads, self.uploads_logged = keep_uploads, uploads_logged
        self.resumable = resumable if resumable is not None else {}  # dst key -> upload left open
        # bytes of parts as they land (+n), taken back when their object ends (-sum): progress
        # moves during a big object, and the object's size still counts once, when it is done
        self.on_part_bytes = on_part_bytes or (lambda n: None)
        # (src key, why): an object started over because its source changed while it was read
        self.on_restart = on_restart or (lambda key, why: None)
        # (dst key, upload id): an upload aborted but still listed after every try (stores/base.py
        # why_still_open); it stays in the journal
        self.on_left_open = on_left_open or (lambda key, upload_id: None)
        # a journal is kept: a big download's temporary file outlives a stop (stores/files/partfile.py);
        # with --resume, one left by the stopped run is continued
        self.keep_partial, self.resume_partial = keep_partial, resume_partial
        self.write_props = options.write_props
        self.src_kind, self.dst_kind = src.features.props, dst.features.props
        self.wants_src_props = object_props.wants_source(self.write_props, self.src_kind, self.dst_kind)
        self._dst_props = object_props.Resolver(self.write_props, self.src_kind, self.dst_kind)
        # file times through S3 (stores/file_times.py): an upload from a local file carries the
        # file's time in x-amz-meta-mtime (unless the user's --metadata names an mtime of its own),
        # and a download to a local file takes the time its object carries
        self.stamp_mtime = self.local_src and self.dst_kind == "s3" and not any(
            k.lower() == file_times.MTIME_KEY for k, _ in self.write_props.set.metadata or ())
        self.restore_mtime = self.src_kind == "s3" and cast(Any, dst).location.kind == "local"
        self.link = LinkModel()  # the parts in flight that paid off for the last object (link.py)
        # --no-clobber and --update (guards.py): what DST already holds is kept. `update_by_head`: a
        # copy or mv (no DST listing) asks DST's time with a HEAD per object; sync knows it from its listing
        self.no_clobber, self.update_by_head = options.no_clobber, False
        # copy / mv --backup-dir (backup.py, a Backup of DST): what DST holds under an object's key is
        # first copied there, found by one HEAD per object (none without the option)
        self.backup: Any = None
        # verify.py: every object written read back by a HEAD under --verify; by default the first
        # this worker writes to S3 (a gateway that stores nothing is noticed at once)
        self._dst_location = getattr(dst, "location", None)  # every store has one; a Writer need not
        self._sample_due = getattr(self._dst_location, "kind", None) == "s3"

    async def copy(self, info: ObjectInfo) -> tuple[int, bool]:
        """Copy one object; returns (bytes, whether it was copied server-side).

        Every read of an object in more than one request asks for the one version the run saw
        (If-Match, stores/conditions.py); a source that changed meanwhile raises SourceChanged
        and nothing lands under the final name. The object then starts over from its current
        version (RESTARTS times), and fails with one line if it changes again.

        From a local file, every read of the object (its parts, a streamed PUT's passes) must find
        the file as the listing saw it and as its first open found it (SOURCE_FILE, a
        conditions.FileVersion checked by the local store's reads): all parts are read, each
        checked, before an upload is completed, so a file rewritten meanwhile raises
        SourceFileChanged and its upload is aborted."""
        if self.backup is not None:
            await self._back_up_replaced(info)
        elif self.update_by_head:
            await guards.skip_if_newer(self.dst, self.keymap(info.key), info)
        guarded = NO_CLOBBER.set(True) if self.no_clobber else None  # every write of it: stores/conditions.py
        checked = self.verifies_next()
        # what the write answers (its ETag, its checksum), kept only for an object to be checked
        answer = WRITTEN.set(WriteAnswer()) if checked else None
        try:
            for attempt in range(RESTARTS + 1):
                pin = SOURCE_FILE.set(FileVersion(info.size, info.mtime)) if self.local_src else None
                try:
                    done = await self._copy_once(info)
                    if checked and info.size is not None:
                        done = await self._verified(info, done)
                    return done
                except SourceChanged as exc:
                    if attempt == RESTARTS:
                        raise exc.final() from None
                    self.on_restart(info.key, exc.message)
                    info = await self.src.head(info.key)  # its new version (size, ETag, mtime)
                finally:
                    if pin is not None:
                        SOURCE_FILE.reset(pin)
        finally:
            if guarded is not None:
                NO_CLOBBER.reset(guarded)
            if answer is not None:
                WRITTEN.reset(answer)
        raise AssertionError("unreachable")

    async def _back_up_replaced(self, info: ObjectInfo) -> None:
        """copy / mv --backup-dir: DST's object under this key, which the copy would replace, first
        copied to the backup dir; BackupFailed (not overwritten) when that did not land. One HEAD
        asks whether there is one; with --update the same HEAD says whether to keep it instead."""
        dst_key = self.keymap(info.key)
        there = await guards.head_or_none(self.dst, dst_key)
        if there is None:
            return
        if self.update_by_head and info.mtime is not None:
            guards.refuse_newer(self.dst, dst_key, info, there)
        await self.backup.keep_or_refuse(there)

    def verifies_next(self) -> bool:
        """Whether the object about to be written is read back after its write (verify.py); the
        dry run's estimate asks it too, object by object, so its HEADs are counted alike."""
        if self.options.verify:
            return True
        due, self._sample_due = self._sample_due, False
        return due

    async def _verified(self, info: ObjectInfo, done: tuple[int, bool]) -> tuple[int, bool]:
        """`done` once a HEAD finds the object at DST whole; else the object written once more and
        checked again, and NotStored if it still is not there (verify.py)."""
        from .verify import NotStored, why_not_stored

        assert info.size is not None
        dst_key = self.keymap(info.key)
        why = await why_not_stored(self.dst, dst_key, info.size, asked=self.options.verify, answer=WRITTEN.get())
        if why is None:
            return done
        WRITTEN.set(WriteAnswer())  # the second write's answer, not the first's (reset by copy())
        done = await self._copy_once(info)
        why = await why_not_stored(self.dst, dst_key, info.size, asked=self.options.verify, answer=WRITTEN.get())
        if why is None:
            return done
        raise NotStored(f"{why} (written twice, checked by a HEAD after each)", op="verify",
                        url=self._dst_location.url_for(dst_key) if self._dst_location else dst_key, key=dst_key)

    async def _copy_once(self, info: ObjectInfo) -> tuple[int, bool]:
        dst_key = self.keymap(info.key)
        info = await self._known_version(info)
        if self.no_clobber and not self.dst.features.conditional_writes:
            await guards.skip_if_exists(self.dst, dst_key)  # a store that cannot refuse the write itself
        if info.size is None:
            return await self._copy_unsized(info.key, dst_key)
        size = info.size
        if self.server_side:
            props, replace = await self._server_side_props(info.key, dst_key)
            # above the copy threshold the store copies in parts (UploadPartCopy) through an upload of
            # its own, whose id the engine never sees: an intent (no id; part size 0: none will come)
            # stands for it until it ends
            in_parts = size > self.options.copy_threshold and self.dst.features.resumable_uploads
            if in_parts and self.no_clobber:
                await guards.skip_if_exists(self.dst, dst_key)  # no part copied in vain
            if in_parts:
                await self._resume_upload(dst_key, size, 0, None)  # a stopped run's, of no use to a copy: gone
                self.on_upload(("upload", dst_key, None, size, 0, info.size, info.mtime, info.etag))
            # the copy (in parts: every UploadPartCopy) is of the version listed, or SourceChanged
            condition = IF_MATCH.set(self._version_of(info))
            try:
                await _copier(self.dst).copy_from(self.src, info.key, dst_key, size, info.mtime,
                                                  props=props, replace=replace)
            finally:
                IF_MATCH.reset(condition)
            if in_parts:
                self.on_upload(("upload_end", dst_key, None))
            return size, True
        if size <= self.options.multipart_threshold:
            if size > STREAM_ABOVE and self.src.features.file_bodies and self.dst.features.streamed_puts:
                await self._put_streamed(info.key, dst_key, size, info.mtime,
                                         await self._props_for(info.key, dst_key))
                return size, False
            await self.budget.acquire(size)
            try:
                data, props, stored = await self._read_whole(info.key, dst_key, size, self._version_of(info))
                await self._put_checked(info.key, dst_key, data, size,
                                        info.mtime if stored is None else stored, props)
            finally:
                self.budget.release(size)
            self._mark_copy_of(dst_key, info, stored)
            return size, False
        try:
            stored = await self._multipart(info.key, dst_key, size, info.mtime, info)
        except ChecksumMismatch:
            stored = await self._multipart(info.key, dst_key, size, info.mtime, info)  # once more, then it is reported
        self._mark_copy_of(dst_key, info, stored)
        return size, False

    def _mark_copy_of(self, dst_key: str, info: ObjectInfo, stored: float | None) -> None:
        """A local file given its object's stored time (not LastModified): marked as that object's
        copy, so a later sync from it sees them equal without a request (stores/file_times.py)."""
        if stored is not None and info.mtime is not None and stored != info.mtime:
            cast(Any, self.dst).mark_copy_of(dst_key, info.mtime, stored)

    async def _known_version(self, info: ObjectInfo) -> ObjectInfo:
        """`info`, or what one HEAD says where the object will be read in more than one request
        (no size, or above the multipart threshold) from a source that can hold reads to one
        version but the listing gave no ETag to hold them to. Small objects never pay for it:
        their one GET is one version by itself. S3 listings always carry the ETag."""
        if (info.etag is not None or not self.src.features.conditional_reads
                or (info.size is not None and info.size <= self.options.multipart_threshold)):
            return info
        return await self.src.head(info.key)

    def _version_of(self, info: ObjectInfo | None) -> str | None:
        """The ETag every request of an object read in several must name (stores/conditions.py),
        None where the source cannot hold reads to it (a local file; one version of a versioned
        key, read by its versionId anyway)."""
        return info.etag if info is not None and self.src.features.conditional_reads else None

    async def _copy_unsized(self, src_key: str, dst_key: str) -> tuple[int, bool]:
        """The listing gave no size (a list/get server; a source whose reads can be held to one
        version was asked with one HEAD instead, _known_version): one GET of the first bytes tells
        it, and is the whole object when small (no extra HEAD per object)."""
        probe = min(self.options.multipart_threshold, UNSIZED_PROBE)
        await self.budget.acquire(probe)
        try:
            data, size = await read_first(self.src, src_key, probe)
            if size <= self.options.multipart_threshold:
                extra = size - len(data)
                if extra > 0:  # bigger than the probe, small enough for one put
                    await self.budget.acquire(extra)
                    try:
                        data += await read_range(self.src, src_key, len(data), size)
                        await self._put_checked(src_key, dst_key, data, size,
                                                props=await self._props_for(src_key, dst_key))
                    finally:
                        self.budget.release(extra)
                else:
                    await self._put_checked(src_key, dst_key, data, size,
                                            props=await self._props_for(src_key, dst_key))
                return size, False
        finally:
            self.budget.release(probe)
        await self._multipart(src_key, dst_key, size)
        return size, False

    async def _put_streamed(self, src_key: str, dst_key: str, size: int, mtime: float | None,
                            props: ObjectProps | None) -> None:
        """One PUT whose body is read from the local file as it is sent: a few chunks in memory,
        not the object (held against the budget as such)."""
        from ...stores.files.bodies import CHUNK

        held = min(size, 2 * CHUNK)
        await self.budget.acquire(held)
        try:
            body = cast(FileBodyReader, self.src).read_body(src_key, 0, size)  # features.file_bodies
            mtime = self._dst_mtime(mtime)
            await cast(StreamedPutter, self.dst).put_body(dst_key, body, mtime, props=props)  # features.streamed_puts
        finally:
            self.budget.release(held)

    async def _read_whole(self, src_key: str, dst_key: str, size: int, etag: str | None = None
                          ) -> tuple[bytes, ObjectProps | None, float | None]:
        """The object's one GET, asked again (up to --retries times) while it brings another length
        than listed: an answer that is not this request's (a server that sent bytes after an
        earlier body, which aiohttp reads as the next answer on that connection) or a short one
        the store could not tell. The last read is returned as it is; _put_checked refuses it.

        With the listing's `etag` the GET is a conditional read (stores/conditions.py): it asks
        for that version (If-Match: an object changed since answers 412, SourceChanged) and its
        answer must name it, or it is asked again. A drifted answer of another object of the same
        length would otherwise be written under this name."""
        condition = IF_MATCH.set(etag) if etag else None
        try:
            for attempt in range(self.options.retries + 1):
                data, props, stored = await self._read_with_props(src_key, dst_key)
                if len(data) == size:
                    break
        finally:
            if condition is not None:
                IF_MATCH.reset(condition)
        return data, props, stored

    async def _put_checked(self, src_key: str, dst_key: str, data: bytes, size: int,
                           mtime: float | None = None, props: ObjectProps | None = None) -> None:
        if len(data) != size:
            raise Corrupt(f"read {len(data)} bytes, expected {size}", op="get",
                          url=self.src.location.url_for(src_key), key=src_key)
        await self.dst.put(dst_key, data, self._dst_mtime(mtime), props=props)

    def _dst_mtime(self, mtime: float | None) -> float | None:
        """The time a write is given. An S3 store keeps a time given it in x-amz-meta-mtime
        (stores/file_times.py): only a local file's time is given it (stamp_mtime: the file's time
        wins over an `mtime` its xattrs carried; the user's --metadata mtime over both), never an
        object's LastModified (an S3 source's own x-amz-meta-mtime goes with its metadata)."""
        if self.dst_kind == "s3" and not self.stamp_mtime:
            return None
        return mtime

    # ------------------------------------------------------------ object properties (engine/transfer/object_props.py)

    async def _source_props(self, src_key: str, read: ObjectProps | None = None) -> ObjectProps | None:
        """The source's properties when they are carried: `read` from the GET already made, else
        one HEAD; tags with GetObjectTagging only when the source has some and they are kept."""
        if not self.wants_src_props:
            return None
        reader = cast(PropsReader, self.src)  # declared by its features
        props = read if read is not None else await reader.read_props(src_key)
        s3_to_s3 = self.src_kind == "s3" and self.dst_kind == "s3"
        if object_props.needs_tags(self.write_props, props, s3_to_s3):
            props = props.with_(tagging=await reader.read_tagging(src_key) or None)
        return props

    async def _props_for(self, src_key: str, dst_key: str) -> ObjectProps | None:
        """The properties to write dst_key with (a HEAD of the source when they are carried)."""
        return self._dst_props(dst_key, await self._source_props(src_key))

    async def _read_with_props(self, src_key: str, dst_key: str
                               ) -> tuple[bytes, ObjectProps | None, float | None]:
        """The whole object, the properties to write it with, and the file time it carries (to a
        local file: stores/file_times.py; else None), from the one GET."""
        if not self.wants_src_props:
            if not self.restore_mtime:
                return (await self.src.get(src_key)).data, self._dst_props(dst_key, None), None  # the hot path: no helper
            data, stored = await read_with_mtime(self.src, src_key)  # features.props == "s3"
            return data, self._dst_props(dst_key, None), stored
        data, read = await read_with_props(self.src, src_key)
        stored = file_times.stored_mtime(read.metadata) if self.restore_mtime else None
        return data, self._dst_props(dst_key, await self._source_props(src_key, read)), stored

    async def _server_side_props(self, src_key: str, dst_key: str) -> tuple[ObjectProps | None, bool]:
        """(props, replace) for copy_from: a plain copy keeps what the source has by itself (only
        ACL, encryption and storage class are sent); anything else asks the source once and
        replaces metadata and tags with what engine/transfer/object_props.py decides."""
        if self.dst_kind != "s3":
            return None, False
        if self.write_props.plain_copy:
            return self.write_props.set, False
        return self._dst_props(dst_key, await self._source_props(src_key)), True

    async def _multipart(self, src_key: str, dst_key: str, size: int, mtime: float | None = None,
                         info: ObjectInfo | None = None) -> float | None:
        """The object in parts; returns the file time its metadata carried when it was given to a
        local file (restore_mtime: one HEAD of the object, beside its many range GETs), else None."""
        if self.no_clobber:
            await guards.skip_if_exists(self.dst, dst_key)  # no part sent in vain (the completion is conditional too)
        stored: float | None = None
        read: ObjectProps | None = None
        if self.restore_mtime:
            read = await cast(PropsReader, self.src).read_props(src_key)
            stored = file_times.stored_mtime(read.metadata)
            if stored is not None:
                mtime = stored
        part = link_part_size(size, self.options, local_dst=cast(Any, self.dst).location.kind == "local",
                              sinks=range_sinks(self.options, self.src, self.dst))
        # before any upload is opened (its HEAD may fail)
        check = await _source_check(self.src, src_key, size, self.dst_kind == "s3", self.budget.limit)
        if isinstance(check, CompositeParts):
            part = check.part_size  # read (and write) by the object's own parts: each is checked alone
        upload, have = await self._resume_upload(dst_key, size, part, info)
        resumed_upload = bool(have)
        if have:
            check = None  # parts a resumed upload holds are not read again: nothing to check them by
        partial = False  # a local file kept for a resume (stores/files/partfile.py)
        # the ETag every range must come from (stores/conditions.py): another version answers 412
        if_match = self._version_of(info)
        if upload is None:
            props = self._dst_props(dst_key, await self._source_props(src_key, read)) if read is not None \
                else await self._props_for(src_key, dst_key)
            source = None if isinstance(check, CompositeParts) else self._partial_source(size, info, check)
            if source is not None:
                upload, part, kept = await cast(PartialFiles, self.dst).open_partial(
                    dst_key, size, part, source, mtime, props=props, resume=self.resume_partial)
                partial = True
                have = self._kept_parts(kept, part, size, check)
            else:
                upload = await self._start_multipart(dst_key, size, part, mtime, props, info)
        upload_id = upload.upload_id  # None where the upload dies with us (a local temporary file is redone)
        if upload_id is not None:
            self.on_upload(("upload", dst_key, upload_id, size, part, info and info.size,
                            info and info.mtime, info and info.etag))
        stopped = False
        moved = 0
        # at most part_concurrency buffers for this object, each reused by later parts: no allocation
        # (and page-faulting a fresh 16 MiB) per part, and the bytes go from socket or file straight in
        buffers: list[memoryview] = []

        async def one(number: int, start: int, end: int) -> None:
            nonlocal stopped, moved
            if number in have:
                return  # uploaded by an interrupted run
            if stopped or self.stopping():
                stopped = True  # parts in flight finish; no new ones start
                return
            await self.budget.acquire(end - start)
            try:
                if self.stopping():  # asked while this part waited for memory
                    stopped = True
                    return
                sink = sink_for(self.src, upload, start, end, check)
                if sink is not None:  # written into the file as received: no part buffer (sinks.py)
                    crc = await fill(self.src, src_key, number, sink, check, PART_READS,
                                     lambda: _part_mismatch(check, number, self.src.location.url_for(src_key), src_key))
                    if partial:
                        cast(PartialUpload, upload).part_landed(number, crc if check is not None else NO_CRC)
                    moved += end - start
                    self.on_part_bytes(end - start)
                    return
                buf = buffers.pop() if buffers else None
                if buf is None or len(buf) < end - start:
                    buf = part_buffer(max(part, end - start))
                try:
                    data = await self._read_part(check, src_key, number, start, end, buf)
                    await upload.put_part(number, start, data)
                    if partial:
                        cast(PartialUpload, upload).part_landed(
                            number, check.parts[number][0] if check is not None else NO_CRC)
                finally:
                    buffers.append(buf)
                moved += end - start
                self.on_part_bytes(end - start)
            finally:
                self.budget.release(end - start)

        def helper_part(number: int, crc: int, n: int) -> None:
            """A part a helper process wrote (with its CRC when `check` wants it)."""
            if check is not None:
                check.add_crc(number, crc, n)
            if partial:
                cast(PartialUpload, upload).part_landed(number, crc if check is not None else NO_CRC)

        keep_open = upload_id is not None and self.keep_uploads
        processes = 1 if upload_id is not None or resumed_upload else spread_processes(
            size, part, upload, self.src.location.kind, self.options.resolved_workers(), self.options.flush_writes)
        # every process needs room for one part in the budget (--max-buffer), or this one would wait
        # for the bytes held for the helpers, released only when the object ends
        processes = max(1, min(processes, self.budget.limit // part))
        condition = IF_MATCH.set(if_match)  # for this object's ranges only (reset below)
        aware: _StopAware | None = None
        try:
            verify = _verifier(check, self.src.location.url_for(src_key), src_key)
            keep_cut = keep_open and self.uploads_logged
            aware = _StopAware(upload, lambda: stopped, keep_open, verify, keep_cut)
            if processes > 1:  # helpers send each part's CRC back for `check`
                await self._spread_parts(aware, src_key, size, part, processes, one, check, helper_part, have,
                                         if_match)
            else:
                await upload_in_lanes(aware, size, part, self._lanes(part, bool(have)), one)
        except Stopped:
            if not keep_open:
                if upload_id is not None and not self._left_open(aware, dst_key, upload_id):
                    self.on_upload(("upload_end", dst_key, upload_id))  # aborted: nothing to resume
                raise
            raise Stopped() from None  # the upload stays open (and in the journal) for a resume
        except BaseException as exc:
            if partial and isinstance(exc, (Corrupt, SourceChanged)):
                await cast(PartialUpload, upload).discard()  # wrong bytes or another version: not resumed
            cut = isinstance(exc, asyncio.CancelledError) and keep_open and self.uploads_logged
            if upload_id is not None and not (stopped and keep_open) and not cut \
                    and not self._left_open(aware, dst_key, upload_id):
                self.on_upload(("upload_end", dst_key, upload_id))
            raise
        finally:
            IF_MATCH.reset(condition)
            self.on_part_bytes(-moved)
        if upload_id is not None:
            self.on_upload(("upload_end", dst_key, upload_id))
        return stored

    def _left_open(self, aware: "_StopAware | None", dst_key: str, upload_id: str) -> bool:
        """Whether the upload's abort could not be confirmed (stores.base.abort_confirmed): then it
        is not ended in the journal, whose next run aborts it again, and the run names it (on_left_open)."""
        if aware is None or not aware.left_open:
            return False
        self.on_left_open(dst_key, upload_id)
        return True

    def _lanes(self, part: int, resumed: bool) -> Lanes:
        """The parts of one object in flight (link.py): part_concurrency to start with (or what paid
        off for this worker's last object), grown while the link gives more, up to the ceiling and
        the parts this worker's byte budget holds. Fixed for an object resumed (its parts already
        there would look like a fast link)."""
        most = min(self.options.part_concurrency_ceiling(), max(1, self.budget.limit // part))
        if resumed:
            return Lanes(self.options.part_concurrency, self.options.part_concurrency)
        return Lanes(self.options.part_concurrency, most, self.link)

    async def _start_multipart(self, dst_key: str, size: int, part: int, mtime: float | None,
                               props: ObjectProps | None, info: ObjectInfo | None) -> Multipart:
        """CreateMultipartUpload, told to the journal before it is sent (an intent: the key, no id
        yet) where the upload would outlive us: a run stopped while the request is in flight then
        still knows to look for the upload (engine/leftover_uploads.py). A refusal the server answered made
        no upload, so the intent ends there; a request whose answer was lost (or cut short) keeps it."""
        mtime = self._dst_mtime(mtime)
        if not self.dst.features.resumable_uploads:
            return await self.dst.start_multipart(dst_key, size, part, mtime, props=props)
        self.on_upload(("upload", dst_key, None, size, part, info and info.size, info and info.mtime,
                        info and info.etag))
        try:
            return await self.dst.start_multipart(dst_key, size, part, mtime, props=props)
        except StoreError as exc:
            if not exc.retryable:  # answered (refused, denied): no upload was made
                self.on_upload(("upload_end", dst_key, None))
            raise

    async def _read_part(self, check: Any, src_key: str, number: int, start: int, end: int,
                         buf: memoryview) -> memoryview | bytes:
        """Bytes [start, end) of the source, with their checksum taken for `check`. A part that
        does not match its own checksum (COMPOSITE objects) is read again, alone, up to
        PART_READS times in all: a transient corruption costs one part, not the object."""
        for _ in range(PART_READS):
            data = await read_range(self.src, src_key, start, end, buf)
            if check is None or check.add(number, data) is not False:
                return data
        raise _part_mismatch(check, number, self.src.location.url_for(src_key), src_key)

    async def _spread_parts(self, upload: "_StopAware", src_key: str, size: int, part: int, processes: int,
                            one: Callable[[int, int, int], Any], check: Any = None,
                            on_part: Callable[[int, int, int], None] | None = None,
                            skip: set[int] | frozenset[int] = frozenset(), if_match: str | None = None) -> None:
        """The parts of one big object over `processes` processes (spread.py): this one moves its
        share with `one` (budget, buffers, progress as usual), helpers forked here the others
        (each part they wrote goes to `on_part(number, crc, size)`, the CRC computed there when
        `check` wants one). Parts in `skip` are in the file already (a resumed download). Every
        read carries `if_match`, the helpers' too. Completes the upload when all landed; aborts it (and kills the
        helpers) on any failure."""
        shares = [[p for p in share if p[0] not in skip] for share in deal(size, part, processes)]
        per_process = max(1, min(-(-self.options.part_concurrency // processes),
                                 self.budget.limit // (part * processes)))
        # the helpers' buffers count against this worker's budget while they run
        helper_bytes = min(part * per_process * (processes - 1), size)
        await self.budget.acquire(helper_bytes)
        helpers = Helpers()
        try:
            helpers.start(shares[1:], self.src.location, self.options.store_options(), src_key,
                          cast(SharedFile, upload.upload).shared_path, per_process, check, if_match)
            moved = 0

            def landed(n: int) -> None:
                nonlocal moved
                moved += n
                self.on_part_bytes(n)

            try:
                async with asyncio.TaskGroup() as tg:  # a failure on either side cancels the other
                    tg.create_task(run_parts(shares[0], per_process, one))
                    tg.create_task(helpers.wait(landed, on_part, getattr(self.src, "requests", None)))
            except BaseExceptionGroup as group:
                raise group.exceptions[0] from None
            finally:
                self.on_part_bytes(-moved)
            await upload.complete()
        except BaseException:
            helpers.kill()
            await upload.abort()
            raise
        finally:
            self.budget.release(helper_bytes)

    def _partial_source(self, size: int, info: ObjectInfo | None, check: Any) -> SourceId | None:
        """The source's identity when this download's file is to be kept for a resume: a journal
        is kept, the destination can keep one, and the listing says which version this is."""
        if not self.keep_partial or info is None or info.size != size or not isinstance(self.dst, PartialFiles):
            return None
        source = SourceId(size, info.etag, info.mtime, None,
                          f"{check.algorithm}:{check.want}" if check is not None else None)
        return source if source.checkable else None

    @staticmethod
    def _kept_parts(kept: dict[int, int], part: int, size: int, check: Any) -> set[int]:
        """The parts of a resumed file not to fetch again; their CRCs go to `check` (a part whose
        CRC the stopped run did not record is fetched again)."""
        have: set[int] = set()
        for number, crc in kept.items():
            if check is not None:
                if crc == NO_CRC:
                    continue
                start, end = part_span(number, part, size)
                check.add_crc(number, crc, end - start)
            have.add(number)
        return have

    async def _resume_upload(self, dst_key: str, size: int, part: int,
                             info: ObjectInfo | None) -> tuple[Multipart | None, set[int]]:
        """An upload an interrupted run left open for this key, with the parts it already holds
        (those of the right size); (None, set()) when there is none or it cannot be continued
        (the source changed, other part size, the upload is gone): then it is aborted."""
        row = self.resumable.pop(dst_key, None)
        if row is None or not self.dst.features.resumable_uploads:
            return None, set()
        dst = cast(ResumableUploads, self.dst)  # declared by its features
        if row["upload_id"] is None:  # an intent: the stopped run may have made an upload it never heard of
            from ..leftover_uploads import resolve_intent

            try:
                await resolve_intent(self.dst, dst_key, row.get("started"))
                self.on_upload(("upload_end", dst_key, None))
            except StoreError:
                pass  # cannot tell now: left to lifecycle rules or rm --incomplete-uploads
            return None, set()
        upload_id: str = row["upload_id"]
        same = (row["size"] == size and row["part_size"] == part and info is not None
                and row["src_size"] == info.size
                and (row["src_etag"] is None or info.etag is None or row["src_etag"] == info.etag)
                and (row["src_mtime"] is None or info.mtime is None or abs(row["src_mtime"] - info.mtime) < 1e-3))
        if same:
            try:
                kept = [p for p in await dst.list_parts(dst_key, upload_id)
                        if p.size == min(part, size - (p.number - 1) * part)]
                # the write-only settings (an SSE-C key) go on every further part again
                return await dst.resume_multipart(dst_key, upload_id, kept, props=self.write_props.set), \
                    {p.number for p in kept}
            except StoreError:
                pass  # gone (completed or aborted meanwhile) or unreadable: start over
        try:
            await dst.abort_multipart(dst_key, upload_id)
        except StoreError:
            pass
        self.on_upload(("upload_end", dst_key, upload_id))
        return None, set()


class _StopAware:
    """The upload as upload_in_lanes (link.py) sees it: after a stop request it is neither completed (some
    parts were never sent) nor, when it can be resumed (S3), aborted."""

    def __init__(self, upload: Any, stopped: Callable[[], bool], keep_open: bool,
                 verify: Callable[[], None] | None = None, keep_cut: bool = False) -> None:
        self.upload, self.stopped, self.keep_open = upload, stopped, keep_open
        self.keep_cut = keep_cut  # cancelled (a forced stop): left open, its record being on disk
        self.upload_id: str | None = upload.upload_id
        self.verify = verify  # raises ChecksumMismatch before a corrupted copy is completed

    async def put_part(self, number: int, offset: int, data: bytes) -> None:
        await self.upload.put_part(number, offset, data)

    def halt(self) -> None:
        """A part failed (stores.base.PartTasks): the parts in flight end, no more are sent."""
        halt = getattr(self.upload, "halt", None)
        if halt is not None:
            halt()

    @property
    def left_open(self) -> bool:
        """Aborted, but the store still listed the upload after every try (stores.base.abort_confirmed)."""
        return bool(getattr(self.upload, "left_open", False))

    async def complete(self) -> None:
        if self.stopped():
            raise Stopped()
        if self.verify is not None:
            self.verify()
        await self.upload.complete()

    async def abort(self) -> None:
        if self.stopped() and self.keep_open:
            return
        # called from stores.base.complete_or_abort's except clause: what is being handled is why the parts stopped.
        # Only a cancellation (a forced stop) leaves the upload open, its record being on disk; a
        # failure (a source that changed, a part refused) aborts it, even while the object's task is
        # being cancelled by the failure's task group
        if self.keep_cut and isinstance(sys.exc_info()[1], asyncio.CancelledError):
            return
        await self.upload.abort()


async def _source_check(src: Store, key: str, size: int, dst_is_s3: bool, max_part: int) -> Any:
    """What checks a multipart download of the source object, from one HEAD with checksum mode:
    a checksums.PartCrcs when it carries a FULL_OBJECT CRC this process can combine from parts; a
    checksums.CompositeParts when it carries a COMPOSITE checksum and the store tells its parts
    (one GetObjectAttributes more) in equal sizes of at most `max_part` bytes (the worker's byte
    budget); else None (no checksum: nothing more is asked)."""
    if not src.features.checksums:
        return None
    from ...stores.checksums import CompositeParts, PartCrcs, available, combinable

    reader = cast(ChecksumReader, src)  # declared by its features
    found = await reader.object_checksum(key)
    if found is None:
        return None
    if found.kind == "FULL_OBJECT":
        return PartCrcs(found.algorithm, found.value) if combinable(found.algorithm) else None
    if found.kind != "COMPOSITE" or not available(found.algorithm):
        return None
    parts = await reader.object_parts(key)
    where = src.location.url_for("")
    if parts is None:
        note_once(f"{where} does not tell the parts of multipart objects (GetObjectAttributes): their "
                  "composite checksums are not verified on download")
        return None
    if not CompositeParts.uniform(size, parts) or f"-{len(parts)}" != found.value[found.value.rfind("-"):]:
        note_once(f"some multipart objects under {where} have parts of unequal sizes: their composite "
                  "checksums are not verified on download")
        return None
    if dst_is_s3 and len(parts) > 1 and parts[0][1] < MIN_S3_PART:
        note_once(f"some multipart objects under {where} have parts under 5 MiB, which S3 refuses to be "
                  "written with: their composite checksums are not verified on this copy")
        return None
    if parts[0][1] > max_part:
        note_once(f"some multipart objects under {where} have parts bigger than a worker's share of --max-buffer: "
                  "their composite checksums are not verified on download (each part would be held whole)")
        return None
    return CompositeParts(found.algorithm, found.value, parts)


def _verifier(check: Any, url: str, key: str) -> Callable[[], None] | None:
    if check is None:
        return None

    def verify() -> None:
        if not check.matches():
            raise ChecksumMismatch(f"{check.algorithm} of the parts read does not match the object's",
                                   op="get", url=url, key=key)
    return verify


def _part_mismatch(check: Any, number: int, url: str, key: str) -> "ChecksumMismatch":
    """A part that does not match its own checksum after PART_READS reads."""
    return ChecksumMismatch(f"{check.algorithm} of part {number} does not match the part's checksum",
                            op="get", url=url, key=key)


def _copier(store: Writer) -> ServerSideCopier:
    """The destination as a server-side copier (its features said it is one)."""
    return cast(ServerSideCopier, store)

