"""Moving one object from a source store to a destination store.

A `Transfer` is what one worker moves objects with. For each object it asks its ways in order
(ways.py: no size, server-side, streamed from a local file, whole, in parts: in_parts.py) whether
each `applies`, and the first that does moves it. What every way shares is here: the guards before
a write (--backup-dir, --update, --no-clobber), the version the object is read as, the properties
and file time it is written with, the restart when its source changed, and the read-back of
--verify. What the transfer tells its worker (uploads begun and ended, bytes of parts, restarts,
uploads left open) goes to one TransferListener (notes.py).

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
asked of its `features` (derived from the protocols it implements), never of its type or
private attributes, so the retry wrapper and every backend (the in-memory one included) behave
alike here.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from ...errors import Corrupt, NotStored, SourceChanged
from ...model import ObjectInfo, ObjectProps
from ...stores import Store, Writer
from ...stores.base import GetResult, ObjectHead, PropsReader
from ...stores.conditions import NO_CLOBBER, SOURCE_FILE, FileVersion
from ...stores import file_times
from ...stores.file_times import CopyMarks
from ...stores.written import WRITTEN, WriteAnswer
from . import guards, object_props
from ..plan import KeyMap, TransferOptions
from .in_parts import InParts, Stopped
from .link import Lanes, LinkModel, start_lanes
from .mover import ByteBudget, ResumeTerms
from .notes import QUIET, TransferListener
from .source_checks import ChecksumMismatch
from .ways import Moved, ServerSide, Streamed, Unsized, Whole

__all__ = ["ByteBudget", "ChecksumMismatch", "ResumeTerms", "Stopped", "Transfer"]

RESTARTS = 1  # an object whose source changes while it is copied starts over this often, then fails


class Way(Protocol):
    """One way to move an object (ways.py, in_parts.py): the first whose test applies moves it.
    `possible`: whether it can ever apply between these two stores (decided once)."""

    possible: bool

    def applies(self, src: Store, dst: Writer, info: ObjectInfo) -> bool: ...

    async def move(self, info: ObjectInfo, dst_key: str) -> Moved: ...


def holds_files(store: Store | Writer) -> bool:
    """A store whose objects are files on this machine (its features hand out file bodies): its
    reads are pinned to one version of the file (SOURCE_FILE), a download into it takes the time
    its object carries, its parts are written at offsets."""
    return store.features.file_bodies


class Transfer:
    """Copies objects from src to dst for one worker; raises StoreError subclasses on failure."""

    def __init__(self, src: Store, dst: Writer, keymap: KeyMap, options: TransferOptions,
                 budget: ByteBudget, *, listener: TransferListener = QUIET, resume: ResumeTerms | None = None,
                 one_object: bool = False, first_read: GetResult | None = None,
                 first_head: ObjectHead | None = None) -> None:
        self.src, self.dst, self.keymap, self.options, self.budget = src, dst, keymap, options, budget
        self.listener = listener
        self.resume = resume if resume is not None else ResumeTerms()
        self.local_src = holds_files(src)  # its reads are pinned to one version of the file
        self.local_dst = holds_files(dst)
        self.write_props = options.write_props
        self.src_kind, self.dst_kind = src.features.props, dst.features.props
        self.wants_src_props = object_props.wants_source(self.write_props, self.src_kind, self.dst_kind)
        self.dst_props = object_props.Resolver(self.write_props, self.src_kind, self.dst_kind)
        # file times through S3 (stores/file_times.py): an upload from a local file carries the
        # file's time in x-amz-meta-mtime (unless the user's --metadata names an mtime of its own),
        # and a download to a local file takes the time its object carries
        self.stamp_mtime = self.local_src and self.dst_kind == "s3" and not any(
            k.lower() == file_times.MTIME_KEY for k, _ in self.write_props.set.metadata or ())
        self.restore_mtime = self.src_kind == "s3" and self.local_dst
        # a destination whose files keep the mark of the object each came from (the local store)
        self.marks: CopyMarks | None = dst if isinstance(dst, CopyMarks) else None
        self.link = LinkModel()  # the parts in flight that paid off for the last object (link.py)
        # --no-clobber and --update (guards.py): what DST already holds is kept. `update_by_head`: a
        # copy or mv (no DST listing) asks DST's time with a HEAD per object; sync knows it from its listing
        self.no_clobber, self.update_by_head = options.no_clobber, False
        # copy / mv --backup-dir (backup.py, a Backup of DST): what DST holds under an object's key is
        # first copied there, found by one HEAD per object (none without the option)
        self.backup: Any = None
        # verify.py: every object written read back by a HEAD under --verify; by default the first
        # this worker writes to S3 (a gateway that stores nothing is noticed at once, before a run has
        # written many objects), not in a run of `one_object`: there it would be a second request
        # for the one write, which the user gets --verify for
        self._dst_location = cast(Store, dst).location
        self._sample_due = self.dst_kind == "s3" and not one_object
        # the one object as the planner's GET brought it (engine/planner.py): written without a read
        # of its own (ways.py Whole), once
        self.first_read = first_read
        # what the planner's GET, refused for the object's length, said of its properties and
        # checksum: the download in parts takes them instead of two HEADs (in_parts.py), once
        self.first_head = first_head
        server_side = ServerSide(self, dst, src)
        self.server_side = server_side.possible
        self.in_parts = InParts(self)
        # the ways, asked in this order (ways.py); one that can never apply to these two stores is left out
        whole, streamed = Whole(self), Streamed(self, src, dst)
        ways: tuple[Way, ...] = (Unsized(self), server_side, streamed, whole, self.in_parts)
        self.ways = tuple(w for w in ways if w.possible)
        # a sized object up to the threshold goes to Whole at once where no way asked before it
        # could take it (no server-side copy, no streamed PUT between these two stores): the small
        # objects' hot path asks no way's test (Unsized takes only objects without a size)
        self._whole_first = whole if not (server_side.possible or streamed.possible) else None
        # whether an object the listing gave no ETag is asked its version by a HEAD (_known_version)
        self._asks_version = src.features.conditional_reads

    async def copy(self, info: ObjectInfo) -> Moved:
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
        checked = self._sample_due or self.options.verify  # verifies_next() without its call, per object
        if checked:
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
                    self.listener.on_restarted(info.key, exc.message)
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

    async def _verified(self, info: ObjectInfo, done: Moved) -> Moved:
        """`done` once a HEAD finds the object at DST whole; else the object written once more and
        checked again, and NotStored if it still is not there (verify.py)."""
        from .verify import why_not_stored

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

    async def _copy_once(self, info: ObjectInfo) -> Moved:
        """One attempt: the version to read pinned, the write guarded, then the first way that applies."""
        dst_key = self.keymap(info.key)
        if info.etag is None and self._asks_version:  # _known_version's own test first: no coroutine per object
            info = await self._known_version(info)
        if self.no_clobber and not self.dst.features.conditional_writes:
            await guards.skip_if_exists(self.dst, dst_key)  # a store that cannot refuse the write itself
        whole = self._whole_first
        if whole is not None and info.size is not None and info.size <= whole.most:
            return await whole.move(info, dst_key)
        src, dst = self.src, self.dst
        for way in self.ways:
            if way.applies(src, dst, info):
                return await way.move(info, dst_key)
        raise AssertionError(f"no way to move {info.key}")  # InParts takes any sized object, Unsized the rest

    def mark_copy_of(self, dst_key: str, info: ObjectInfo, stored: float | None) -> None:
        """A local file given its object's stored time (not LastModified): marked as that object's
        copy, so a later sync from it sees them equal without a request (stores/file_times.py)."""
        if stored is not None and info.mtime is not None and stored != info.mtime and self.marks is not None:
            self.marks.mark_copy_of(dst_key, info.mtime, stored)

    async def _known_version(self, info: ObjectInfo) -> ObjectInfo:
        """`info`, or what one HEAD says where the object will be read in more than one request
        (no size, or above the multipart threshold) from a source that can hold reads to one
        version but the listing gave no ETag to hold them to. Small objects never pay for it:
        their one GET is one version by itself. S3 listings always carry the ETag."""
        if (info.etag is not None or not self.src.features.conditional_reads
                or (info.size is not None and info.size <= self.options.multipart_threshold)):
            return info
        return await self.src.head(info.key)

    def version_of(self, info: ObjectInfo | None) -> str | None:
        """The ETag every request of an object read in several must name (stores/conditions.py),
        None where the source cannot hold reads to it (a local file; one version of a versioned
        key, read by its versionId anyway)."""
        return info.etag if info is not None and self.src.features.conditional_reads else None

    async def put_checked(self, src_key: str, dst_key: str, data: bytes, size: int,
                          mtime: float | None = None, props: ObjectProps | None = None,
                          marked: float | None = None) -> None:
        """The one PUT of a whole object, refused (Corrupt) when the read brought another length.
        `marked`: the object's LastModified, where a local file is given the object's stored `mtime`
        instead: when the two differ the file is marked as its copy as it is written
        (stores/file_times.py), so a later sync asks nothing."""
        if len(data) != size:
            raise Corrupt(f"read {len(data)} bytes, expected {size}", op="get",
                          url=self.src.location.url_for(src_key), key=src_key)
        if marked is not None and mtime is not None and marked != mtime and self.marks is not None:
            await self.marks.put_marked(dst_key, data, mtime, marked, props=props)
        else:
            await self.dst.put(dst_key, data, self.dst_mtime(mtime), props=props)

    def dst_mtime(self, mtime: float | None) -> float | None:
        """The time a write is given. An S3 store keeps a time given it in x-amz-meta-mtime
        (stores/file_times.py): only a local file's time is given it (stamp_mtime: the file's time
        wins over an `mtime` its xattrs carried; the user's --metadata mtime over both), never an
        object's LastModified (an S3 source's own x-amz-meta-mtime goes with its metadata)."""
        if self.dst_kind == "s3" and not self.stamp_mtime:
            return None
        return mtime

    # ------------------------------------------------------------ object properties (engine/transfer/object_props.py)

    async def source_props(self, src_key: str, read: ObjectProps | None = None) -> ObjectProps | None:
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

    async def props_for(self, src_key: str, dst_key: str) -> ObjectProps | None:
        """The properties to write dst_key with (a HEAD of the source when they are carried)."""
        return self.dst_props(dst_key, await self.source_props(src_key))

    def lanes(self, part: int, resumed: bool, held: bool = True) -> Lanes:
        """The parts of one object in flight (link.py): part_concurrency to start with (or what paid
        off for this worker's last object), grown while the link gives more, up to the ceiling and
        the parts this worker's byte budget holds; an upload in parts cut smaller than --part-size
        starts with more (link.start_lanes). Fixed for an object resumed (its parts already there
        would look like a fast link). Parts not `held` in memory (a download written into its
        file as it arrives) start at the most: a lane costs no buffer, and on a link that holds each
        connection back the rounds of growing cost most of a mid-size object's time (link.py)."""
        most = min(self.options.part_concurrency_ceiling(), max(1, self.budget.limit // part))
        if resumed:
            return Lanes(self.options.part_concurrency, self.options.part_concurrency)
        if not held and self.options.max_part_concurrency != self.options.part_concurrency:
            return Lanes(most, most)
        start = self.options.part_concurrency if self.local_dst else start_lanes(self.options, part)
        return Lanes(start, most, self.link)
