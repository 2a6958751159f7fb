"""One object in parts: ranges read in parallel and written as parts (ways.py's last way).

Above the multipart threshold an object's parts are read as byte ranges and written at their
offsets, several in flight, each holding its bytes against the worker's byte budget. How the
upload is opened is one of three, tried in order: an S3 upload a stopped run left open for this key
is continued (ListParts: the parts of the right size are kept); a local file a stopped run kept
with a record of its parts is continued, or one is begun to be kept (stores/files/partfile.py,
when a journal is kept); else a new upload. How the parts run is one of two: in lanes on this
worker's loop, grown while the link gives more (link.py), or spread over helper processes
(spread.py) for one big object of a one-worker run.

The state of one object's parts (which landed, which buffers are free, whether a stop was asked,
the bytes moved) is a `PartsJob`, one per object, whose methods are what the lanes and the helpers
call: no nonlocal closures, and nothing allocated per part but what the part itself needs.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any, Callable, cast

from ...errors import Corrupt, Stopped, StoreError
from ...model import ObjectInfo, ObjectProps
from ...stores.base import Multipart, PropsReader, ResumableUploads
from ...stores.reading import read_range
from ...stores.checksums import CompositeParts
from ...errors import SourceChanged
from ...stores import file_times
from . import guards
from .link import part_size as link_part_size, upload_in_lanes
from ...stores.files.partfile import NO_CRC, PartialFiles, PartialUpload, SourceId, part_span
from .mover import Mover
from .notes import UploadBegun, UploadEnd
from .part_buffers import part_buffer
from .sinks import fill, range_sinks, sink_for, sinks
from .source_checks import ASK, ChecksumMismatch, part_mismatch, source_check, verifier
from .spread import Helpers, HelperTask, SharedFile, deal, run_parts, spread_processes

if TYPE_CHECKING:
    from ...stores import Store
    from ...stores.base import Writer

PART_READS = 3  # reads of a part that does not match its own checksum before the object fails


class PartsJob:
    """One object's parts while they move: the upload, the parts it already holds (`have`), what
    checks them, the part buffers this object reuses, whether a stop was asked, the bytes moved."""

    __slots__ = ("t", "src_key", "dst_key", "size", "part", "upload", "have", "check", "partial", "resumed",
                 "upload_id", "if_match", "stopped", "moved", "helper_moved", "buffers", "url")

    def __init__(self, t: Mover, src_key: str, dst_key: str, size: int, part: int, upload: Multipart,
                 check: Any) -> None:
        self.t, self.src_key, self.dst_key, self.size, self.part = t, src_key, dst_key, size, part
        self.upload, self.check = upload, check
        self.upload_id = upload.upload_id  # None where the upload dies with us (a local temporary file is redone)
        self.have: set[int] = set()  # parts there already: in the upload a stopped run left, or in its part file
        self.partial = False  # a local file kept for a resume (stores/files/partfile.py)
        self.resumed = False  # an upload a stopped run left open, continued
        self.if_match: str | None = None  # the ETag every range must come from (stores/conditions.py)
        self.stopped = False  # a stop was asked: parts in flight finish, no new ones start
        self.moved = 0  # bytes of the parts this process moved (taken back from progress at the end)
        self.helper_moved = 0  # bytes of the parts helper processes moved
        # at most part_concurrency buffers for this object, each reused by later parts: no allocation
        # (and page-faulting a fresh 16 MiB) per part, and the bytes go from socket or file straight in
        self.buffers: list[memoryview] = []
        self.url = t.src.location.url_for(src_key)

    def is_stopped(self) -> bool:
        return self.stopped

    async def one(self, number: int, start: int, end: int) -> None:
        """Part `number`, bytes [start, end): read and written, unless it is there already or a
        stop was asked."""
        if number in self.have:
            return  # uploaded by an interrupted run
        t = self.t
        if self.stopped or t.listener.stopping():
            self.stopped = True
            return
        await t.budget.acquire(end - start)
        try:
            if t.listener.stopping():  # asked while this part waited for memory
                self.stopped = True
                return
            sink = sink_for(t.src, self.upload, start, end, self.check)
            if sink is not None:  # written into the file as received: no part buffer (sinks.py)
                crc = await fill(t.src, self.src_key, number, sink, self.check, PART_READS, self._mismatch(number),
                                 self.if_match)
                self._landed(number, crc if self.check is not None else NO_CRC)
            else:
                await self._through_buffer(number, start, end)
            self.moved += end - start
            t.listener.on_part_bytes(end - start)
        finally:
            t.budget.release(end - start)

    async def _through_buffer(self, number: int, start: int, end: int) -> None:
        buffers = self.buffers
        buf = buffers.pop() if buffers else None
        if buf is None or len(buf) < end - start:
            buf = part_buffer(max(self.part, end - start))
        try:
            data = await self._read_part(number, start, end, buf)
            await self.upload.put_part(number, start, data)
            if self.partial:  # a part file's record: the part's CRC (a PartCrcs check holds it), not asked otherwise
                self._landed(number, self.check.parts[number][0] if self.check is not None else NO_CRC)
        finally:
            buffers.append(buf)

    async def _read_part(self, number: int, start: int, end: int, buf: memoryview) -> memoryview | bytes:
        """Bytes [start, end) of the source, with their checksum taken for `check`. A part that
        does not match its own checksum (COMPOSITE objects) is read again, alone, up to
        PART_READS times in all: a transient corruption costs one part, not the object."""
        check = self.check
        for _ in range(PART_READS):
            data = await read_range(self.t.src, self.src_key, start, end, buf, if_match=self.if_match)
            if check is None or check.add(number, data) is not False:
                return data
        raise part_mismatch(check, number, self.url, self.src_key)

    def _mismatch(self, number: int) -> Callable[[], BaseException]:
        return lambda: part_mismatch(self.check, number, self.url, self.src_key)

    def _landed(self, number: int, crc: int) -> None:
        if self.partial:
            cast(PartialUpload, self.upload).part_landed(number, crc)

    def helper_part(self, number: int, crc: int, n: int) -> None:
        """A part a helper process wrote (with its CRC when `check` wants it): spread.py's listener."""
        self.helper_moved += n
        self.t.listener.on_part_bytes(n)
        if self.check is not None:
            self.check.add_crc(number, crc, n)
        self._landed(number, crc if self.check is not None else NO_CRC)


class InParts:
    """Above the multipart threshold: see the module docstring."""

    possible = True

    def __init__(self, transfer: Mover) -> None:
        self.t = transfer

    def applies(self, src: Store, dst: Writer, info: ObjectInfo) -> bool:
        return info.size is not None

    async def move(self, info: ObjectInfo, dst_key: str) -> tuple[int, bool]:
        size = cast(int, info.size)
        try:
            stored = await self.parts(info.key, dst_key, size, info.mtime, info)
        except ChecksumMismatch:
            stored = await self.parts(info.key, dst_key, size, info.mtime, info)  # once more, then it is reported
        self.t.mark_copy_of(dst_key, info, stored)
        return size, False

    async def parts(self, src_key: str, dst_key: str, size: int, mtime: float | None = None,
                    info: ObjectInfo | None = None) -> float | None:
        """The object in parts; returns the file time its metadata carried when it was given to a
        local file (restore_mtime: one HEAD of the object, beside its many range GETs), else None."""
        t = self.t
        if t.no_clobber:
            await guards.skip_if_exists(t.dst, dst_key)  # no part sent in vain (the completion is conditional too)
        stored: float | None = None
        read: ObjectProps | None = None
        head = t.first_head
        if head is not None:
            t.first_head = None  # once: a retry (ChecksumMismatch) asks the server again
            if head.key != src_key:
                head = None
        if t.restore_mtime:
            read = head.props if head is not None else await cast(PropsReader, t.src).read_props(src_key)
            stored = file_times.stored_mtime(read.metadata)
            if stored is not None:
                mtime = stored
        part = link_part_size(size, t.options, local_dst=t.local_dst, sinks=range_sinks(t.options, t.src, t.dst))
        # before any upload is opened (its HEAD may fail)
        check = await source_check(t.src, src_key, size, t.dst_kind == "s3", t.budget.limit,
                                   head.checksum if head is not None else ASK)
        if isinstance(check, CompositeParts):
            part = check.part_size  # read (and write) by the object's own parts: each is checked alone
        job = await self._open(src_key, dst_key, size, part, mtime, check, read, info)
        await self._run(job)
        return stored

    async def _open(self, src_key: str, dst_key: str, size: int, part: int, mtime: float | None, check: Any,
                    read: ObjectProps | None, info: ObjectInfo | None) -> PartsJob:
        """The upload the parts go to: one a stopped run left open, a part file, or a new one."""
        t = self.t
        upload, have = await self.continue_upload(dst_key, size, part, info)
        resumed = bool(have)
        if have:
            check = None  # parts a resumed upload holds are not read again: nothing to check them by
        partial = False  # a local file kept for a resume (stores/files/partfile.py)
        if upload is None:
            props = t.dst_props(dst_key, await t.source_props(src_key, read)) if read is not None \
                else await t.props_for(src_key, dst_key)
            source = None if isinstance(check, CompositeParts) else self._partial_source(size, info, check)
            if source is not None:
                upload, part, kept = await cast(PartialFiles, t.dst).open_partial(
                    dst_key, size, part, source, mtime, props=props, resume=t.resume.resume_partial)
                partial = True
                have = _kept_parts(kept, part, size, check)
            else:
                upload = await self._start(dst_key, size, part, mtime, props, info)
        job = PartsJob(t, src_key, dst_key, size, part, upload, check)
        job.have, job.partial, job.resumed, job.if_match = have, partial, resumed, t.version_of(info)
        if job.upload_id is not None:
            t.listener.on_upload(UploadBegun.of(dst_key, job.upload_id, size, part, info))
        return job

    async def _run(self, job: PartsJob) -> None:
        """The parts moved and the upload completed; on a stop or a failure the upload is aborted, or
        kept open (and in the journal) where a resume will continue it."""
        t, dst_key, upload_id = self.t, job.dst_key, job.upload_id
        keep_open = upload_id is not None and t.resume.keep_uploads
        processes = 1 if upload_id is not None or job.resumed else spread_processes(
            job.size, job.part, job.upload, t.src.location.remote, t.options.resolved_workers(), t.options.flush_writes)
        # every process needs room for one part in the budget (--max-buffer), or this one would wait
        # for the bytes held for the helpers, released only when the object ends
        processes = max(1, min(processes, t.budget.limit // job.part))
        aware: StopAware | None = None
        try:
            aware = StopAware(job.upload, job.is_stopped, keep_open, verifier(job.check, job.url, job.src_key),
                              keep_open and t.resume.uploads_logged)
            if processes > 1:  # helpers send each part's CRC back for `check`
                await _spread(t, job, aware, processes)
            else:
                lanes = t.lanes(job.part, bool(job.have), held=not sinks(t.src, job.upload))
                await upload_in_lanes(aware, job.size, job.part, lanes, job.one)
        except Stopped:
            if not keep_open:
                if upload_id is not None and not self._left_open(aware, dst_key, upload_id):
                    t.listener.on_upload(UploadEnd.of(dst_key, upload_id))  # aborted: nothing to resume
                raise
            raise Stopped() from None  # the upload stays open (and in the journal) for a resume
        except BaseException as exc:
            if job.partial and isinstance(exc, (Corrupt, SourceChanged)):
                await cast(PartialUpload, job.upload).discard()  # wrong bytes or another version: not resumed
            cut = isinstance(exc, asyncio.CancelledError) and keep_open and t.resume.uploads_logged
            if upload_id is not None and not (job.stopped and keep_open) and not cut \
                    and not self._left_open(aware, dst_key, upload_id):
                t.listener.on_upload(UploadEnd.of(dst_key, upload_id))
            raise
        finally:
            t.listener.on_part_bytes(-job.moved)
        if upload_id is not None:
            t.listener.on_upload(UploadEnd.of(dst_key, upload_id))

    def _left_open(self, aware: StopAware | None, dst_key: str, upload_id: str) -> bool:
        """Whether the upload's abort could not be confirmed (stores.base.abort_confirmed): then it
        is not ended in the journal, whose next run aborts it again, and the run names it (on_left_open)."""
        if aware is None or not aware.left_open:
            return False
        self.t.listener.on_left_open(dst_key, upload_id)
        return True

    async def _start(self, dst_key: str, size: int, part: int, mtime: float | None,
                     props: ObjectProps | None, info: ObjectInfo | None) -> Multipart:
        """CreateMultipartUpload, told to the journal before it is sent (an intent: the key, no id
        yet) where the upload would outlive us: a run stopped while the request is in flight then
        still knows to look for the upload (engine/leftover_uploads.py). A refusal the server answered made
        no upload, so the intent ends there; a request whose answer was lost (or cut short) keeps it."""
        t = self.t
        mtime = t.dst_mtime(mtime)
        if not t.dst.features.resumable_uploads:
            return await t.dst.start_multipart(dst_key, size, part, mtime, props=props)
        t.listener.on_upload(UploadBegun.of(dst_key, None, size, part, info))
        try:
            return await t.dst.start_multipart(dst_key, size, part, mtime, props=props)
        except StoreError as exc:
            if not exc.retryable:  # answered (refused, denied): no upload was made
                t.listener.on_upload(UploadEnd.of(dst_key, None))
            raise

    def _partial_source(self, size: int, info: ObjectInfo | None, check: Any) -> SourceId | None:
        """The source's identity when this download's file is to be kept for a resume: a journal
        is kept, the destination can keep one, and the listing says which version this is."""
        t = self.t
        if not t.resume.keep_partial or info is None or info.size != size or not isinstance(t.dst, PartialFiles):
            return None
        source = SourceId(size, info.etag, info.mtime, None,
                          f"{check.algorithm}:{check.want}" if check is not None else None)
        return source if source.checkable else None

    async def continue_upload(self, dst_key: str, size: int, part: int,
                              info: ObjectInfo | None) -> tuple[Multipart | None, set[int]]:
        """An upload an interrupted run left open for this key, with the parts it already holds
        (those of the right size); (None, set()) when there is none or it cannot be continued
        (the source changed, other part size, the upload is gone): then it is aborted."""
        t = self.t
        row = t.resume.uploads.pop(dst_key, None)
        if row is None or not t.dst.features.resumable_uploads:
            return None, set()
        dst = cast(ResumableUploads, t.dst)  # declared by its features
        if row["upload_id"] is None:  # an intent: the stopped run may have made an upload it never heard of
            from ..leftover_uploads import resolve_intent

            try:
                await resolve_intent(t.dst, dst_key, row.get("started"))
                t.listener.on_upload(UploadEnd.of(dst_key, None))
            except StoreError:
                pass  # cannot tell now: left to lifecycle rules or rm --incomplete-uploads
            return None, set()
        upload_id: str = row["upload_id"]
        if _same_source(row, size, part, info):
            try:
                kept = [p for p in await dst.list_parts(dst_key, upload_id)
                        if p.size == min(part, size - (p.number - 1) * part)]
                # the write-only settings (an SSE-C key) go on every further part again
                return await dst.resume_multipart(dst_key, upload_id, kept, props=t.write_props.set), \
                    {p.number for p in kept}
            except StoreError:
                pass  # gone (completed or aborted meanwhile) or unreadable: start over
        try:
            await dst.abort_multipart(dst_key, upload_id)
        except StoreError:
            pass
        t.listener.on_upload(UploadEnd.of(dst_key, upload_id))
        return None, set()


def _same_source(row: dict[str, Any], size: int, part: int, info: ObjectInfo | None) -> bool:
    """Whether the upload a stopped run recorded is of this version of the object, in these parts."""
    return (row["size"] == size and row["part_size"] == part and info is not None
            and row["src_size"] == info.size
            and (row["src_etag"] is None or info.etag is None or row["src_etag"] == info.etag)
            and (row["src_mtime"] is None or info.mtime is None or abs(row["src_mtime"] - info.mtime) < 1e-3))


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


async def _spread(t: Mover, job: PartsJob, upload: StopAware, processes: int) -> None:
    """The parts of one big object over `processes` processes (spread.py): this one moves its
    share with job.one (budget, buffers, progress as usual), helpers forked here the others (each
    part they wrote goes to job.helper_part, the CRC computed there when `check` wants one). Parts
    in `have` are in the file already (a resumed download). Every read carries the job's
    `if_match`, the helpers' too. Completes the upload when all landed; aborts it (and kills the
    helpers) on any failure."""
    part = job.part
    shares = [[p for p in share if p[0] not in job.have] for share in deal(job.size, part, processes)]
    per_process = max(1, min(-(-t.options.part_concurrency // processes), t.budget.limit // (part * processes)))
    # the helpers' buffers count against this worker's budget while they run
    helper_bytes = min(part * per_process * (processes - 1), job.size)
    await t.budget.acquire(helper_bytes)
    helpers = Helpers()
    try:
        helpers.start(shares[1:], HelperTask(t.src.location, t.options.store_options(), job.src_key,
                                             cast(SharedFile, upload.upload).shared_path, per_process, job.check,
                                             job.if_match))
        try:
            async with asyncio.TaskGroup() as tg:  # a failure on either side cancels the other
                tg.create_task(run_parts(shares[0], per_process, job.one))
                tg.create_task(helpers.wait(job, getattr(t.src, "requests", None)))
        except BaseExceptionGroup as group:
            raise group.exceptions[0] from None
        finally:
            t.listener.on_part_bytes(-job.helper_moved)
        await upload.complete()
    except BaseException:
        helpers.kill()
        await upload.abort()
        raise
    finally:
        t.budget.release(helper_bytes)


class StopAware:
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
