"""The multipart uploads one worker's transfers have open, for the journal and for a forced stop.

A Transfer notes each upload it is about to ask for, has begun and has ended
(engine/transfer/notes.py). Each note is written to the worker's upload log first when a journal is
kept (one line, before any part is sent, so no stop can leave an upload open unrecorded), then sent
to the coordinator, whose journal commits it. A forced stop with no journal aborts what is still
open here, since nothing else would ever find it.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, Callable, Coroutine, Iterable

from ...errors import S3BulkError
from ...stores.base import Writer
from ..journal.units import UploadLog
from ..messages import UploadEnded, UploadStarted, WorkerMessage
from ..transfer.notes import UploadBegun, UploadNote


class OpenUploads:
    """The uploads in flight of one worker (`wid`), by destination key."""

    def __init__(self, wid: int, send: Callable[[WorkerMessage], None], log_dir: str | None, logged: bool) -> None:
        self.wid, self.send = wid, send
        self.log_dir = log_dir if logged else None  # where the log goes: a journal hears of the uploads
        # destination key -> upload id, None while CreateMultipartUpload is in flight (what a forced
        # stop must not leave open unrecorded)
        self.ids: dict[str, str | None] = {}
        # when each upload still unnamed was asked for (time.time()): its id comes with the answer to
        # CreateMultipartUpload, a copy in parts' too (the store names it: stores.base.COPY_UPLOAD_OPENED)
        self.asked: dict[str, float] = {}
        self.log: UploadLog | None = None  # where they are recorded before any part is sent

    def note(self, note: UploadNote) -> None:
        """An upload about to be asked for, begun, or ended: on disk first, then to the coordinator."""
        key, upload_id = note.key, note.upload_id
        if isinstance(note, UploadBegun):
            self.ids[key] = upload_id
            if upload_id is None:
                self.asked[key] = time.time()
        elif key in self.ids and self.ids[key] == upload_id:
            del self.ids[key]
            self.asked.pop(key, None)
        if self.log is None and self.log_dir is not None:
            self.log = UploadLog(os.path.join(self.log_dir, f"{os.getpid()}-{self.wid}.uploads"))
        if self.log is not None:
            self.log.add(note)
        self.send(_message(self.wid, note))

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None

    def unrecorded(self) -> bool:
        """Uploads are open that no journal will find again."""
        return bool(self.ids) and self.log is None

    async def abort_all(self, dst: Writer, until: float) -> None:
        """A forced stop with no journal to record the S3 uploads in flight: nothing would ever find
        them again, so they are aborted here (bounded by `until`, the loop's time). One whose
        CreateMultipartUpload is in flight (a copy in parts' too) is waited for, then aborted by
        its id: that answer was on its way before the stop, while a listing of the key's uploads
        is a request more, whose answer under load came after the deadline (and the upload stayed
        open). One still unnamed near the deadline (its answer late, or a store that does not name
        a copy's upload) is looked for among the key's open uploads. What cannot be done in time
        is left to the bucket's lifecycle rule or `s3bulk rm --incomplete-uploads`."""
        loop = asyncio.get_running_loop()
        aborted: set[str] = set()
        while loop.time() < until:
            todo = [(k, u) for k, u in self.ids.items() if u is not None and u not in aborted]
            if todo:
                aborted.update(u for _, u in todo)
                try:
                    await asyncio.wait_for(_gathered(_abort(dst, k, u) for k, u in todo), until - loop.time())
                except asyncio.TimeoutError:
                    return
                continue
            unnamed = [k for k, u in self.ids.items() if u is None]
            if not unnamed:
                return
            if loop.time() >= until - 1.5:
                try:
                    await asyncio.wait_for(_gathered(_find(dst, k, self.asked.get(k), aborted)
                                                      for k in unnamed), until - loop.time())
                except asyncio.TimeoutError:
                    pass
                return
            await asyncio.sleep(0.01)  # a CreateMultipartUpload in flight: its answer names the upload


def _gathered(coros: Iterable[Coroutine[Any, Any, None]]) -> asyncio.Future[list[None]]:
    """asyncio.gather of `coros`, its outcome marked as seen: a second Ctrl-C cancels the aborts
    while the loop ends, and a gather whose child was cancelled holds a CancelledError that nobody
    awaits any more; unmarked, asyncio prints it with a traceback at exit ("exception was never
    retrieved"). Whoever still awaits it gets the same outcome."""
    gathered = asyncio.gather(*coros)
    gathered.add_done_callback(lambda done: None if done.cancelled() else done.exception())
    return gathered


async def _abort(dst: Writer, key: str, upload_id: str) -> None:
    from ...stores.base import abort_confirmed

    await abort_confirmed(dst, key, upload_id)  # again until ListParts says it is gone


async def _find(dst: Writer, key: str, asked: float | None, aborted: set[str]) -> None:
    from ..leftover_uploads import resolve_intent

    try:
        await resolve_intent(dst, key, asked, frozenset(aborted))
    except S3BulkError:
        pass


def _message(wid: int, note: UploadNote) -> UploadStarted | UploadEnded:
    """An upload note as worker `wid`'s message to the coordinator, whose journal keeps it."""
    return UploadStarted(wid, note) if isinstance(note, UploadBegun) else UploadEnded(wid, note)
