"""What a way to move one object (ways.py, in_parts.py) asks of the Transfer that chose it.

The ways are chosen by the Transfer (one_object.py) and call back into it for what every way shares
(the byte budget, the guards, the properties and file time an object is written with, the PUT
checked against the listed length). They know it only as a `Mover`, the protocol below, so the
Transfer imports its ways and no way imports the Transfer: the modules form no cycle. ByteBudget
and ResumeTerms live here too, as the leaves both sides hold.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol

from ...model import ObjectInfo, ObjectProps, WriteProps
from ...stores import Store, Writer
from ...stores.base import GetResult, Multipart, ObjectHead
from ..plan import TransferOptions
from .link import Lanes
from .notes import TransferListener

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ...quick_dataclass import dataclass


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

    def take(self, n: int) -> bool:
        """acquire()'s fast path without a coroutine: True when the bytes were taken at once (a
        small object's hot path calls this first, and awaits acquire() only when it says False)."""
        if not self._waiters and (self.used + n <= self.limit or self.used == 0):
            self.used += n
            return True
        return False

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


@dataclass(frozen=True)
class ResumeTerms:
    """What a journal lets a transfer keep for --resume, and what a stopped run left to continue.

    `uploads`: the S3 multipart uploads a stopped run left open, by destination key (each taken
    once: continued or aborted). `keep_partial`: a journal is kept, so a big download's temporary
    file outlives a stop (stores/files/partfile.py); `resume_partial`: one a stopped run kept is
    continued. An S3 upload cut short by a graceful stop stays open only when a journal will hold
    it for --resume (`keep_uploads`), else it is aborted: nothing else would ever find it; one cut
    short by cancellation (a forced stop) stays open only when its record was on disk before its
    first part (`uploads_logged`: engine/run/worker.py's upload log)."""

    uploads: dict[str, dict[str, Any]] = field(default_factory=dict)
    keep_partial: bool = False
    resume_partial: bool = False
    keep_uploads: bool = False
    uploads_logged: bool = False


class PartsMover(Protocol):
    """The way in parts (in_parts.InParts), as the other ways hand an object to it."""

    async def parts(self, src_key: str, dst_key: str, size: int, mtime: float | None = None,
                    info: ObjectInfo | None = None) -> float | None: ...

    async def continue_upload(self, dst_key: str, size: int, part: int,
                              info: ObjectInfo | None) -> tuple[Multipart | None, set[int]]: ...


class Mover(Protocol):
    """The Transfer as its ways see it (one_object.Transfer implements it)."""

    src: Store
    dst: Writer
    options: TransferOptions
    budget: ByteBudget
    listener: TransferListener
    resume: ResumeTerms
    write_props: WriteProps
    dst_kind: str | None
    restore_mtime: bool
    wants_src_props: bool
    first_read: GetResult | None  # the one object, as the planner's GET brought it (taken once)
    first_head: ObjectHead | None  # its properties and checksum, from a GET refused for its length (taken once)
    no_clobber: bool
    local_dst: bool

    @property
    def in_parts(self) -> PartsMover: ...

    async def put_checked(self, src_key: str, dst_key: str, data: bytes, size: int,
                          mtime: float | None = None, props: ObjectProps | None = None,
                          marked: float | None = None) -> None: ...

    async def props_for(self, src_key: str, dst_key: str) -> ObjectProps | None: ...

    async def source_props(self, src_key: str, read: ObjectProps | None = None) -> ObjectProps | None: ...

    def dst_props(self, dst_key: str, read: ObjectProps | None) -> ObjectProps | None: ...

    def version_of(self, info: ObjectInfo | None) -> str | None: ...

    def dst_mtime(self, mtime: float | None) -> float | None: ...

    def mark_copy_of(self, dst_key: str, info: ObjectInfo, stored: float | None) -> None: ...

    def lanes(self, part: int, resumed: bool, held: bool = True) -> Lanes: ...
