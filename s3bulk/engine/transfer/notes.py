"""What a transfer tells the worker that runs it, typed: upload notes and a listener.

A Transfer (one_object.py) moves objects for one worker, which keeps the journal's record of the
multipart uploads in flight, the progress of big objects part by part, the objects started over and
the uploads an abort could not end. The transfer tells it through one `TransferListener` (each
method a no-op until overridden, as engine/events.py's Subscriber), not through loose callbacks.

An upload note is a NamedTuple: read by name here, in the worker and in engine/run/open_uploads.py
(which makes it the coordinator's message), and still the very tuple the journal's upload log writes
as one JSON line, so the files a stopped run left behind read the same.
"""

from __future__ import annotations

from ..messages import UploadBegun, UploadEnd, UploadNote

__all__ = ["QUIET", "TransferListener", "UploadBegun", "UploadEnd", "UploadNote"]




class TransferListener:
    """Hears what a Transfer does beside moving bytes; the worker's journal and counters subclass
    it. The methods run on the worker's loop, inside the transfer: they must not block."""

    def stopping(self) -> bool:
        """Whether a graceful stop was asked: the parts of an object in flight finish, no new ones
        start (asked before each part, never per small object)."""
        return False

    def on_upload(self, note: UploadNote) -> None:
        """An upload about to be asked for, begun or ended: on disk before any part is sent."""

    def on_part_bytes(self, n: int) -> None:
        """Bytes of parts as they land (+n), taken back when their object ends (-sum): progress moves
        during a big object, and the object's size still counts once, when it is done."""

    def on_restarted(self, key: str, why: str) -> None:
        """An object (source key) started over because its source changed while it was read."""

    def on_left_open(self, key: str, upload_id: str) -> None:
        """An upload aborted but still listed after every try (stores/base.py why_still_open): it
        stays in the journal."""


QUIET = TransferListener()  # a transfer nobody listens to (a backup, a test)
