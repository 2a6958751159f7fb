"""Filesystem events of a local SRC directory as a change feed (`sync --watch ./dir ...`).

`watchfiles` (the Rust `notify` crate underneath: inotify on Linux, FSEvents on macOS) reports
paths that were added, modified or deleted. A path is held here, per key, until it has settled:
no event for `settle` seconds and, for a file, the same size and modification time at two looks
`settle` apart, so a file another program is still writing is copied once it is complete, not at
each write. Repeated events for one key coalesce into one pending entry (memory is bounded by the
keys that changed, not the events). A directory that appears (created, or renamed into place) is
walked and its files reported; one that disappears is reported by its own key, and the narrowed
sync deletes what DST holds under it (engine/run/worker.py `_delete_gone`).

Past `max_pending` distinct keys the feed stops recording them and says, through
`needs_full_sync`, that the watcher must run a full sync instead: a burst of a million new files
never becomes a million entries. Nothing here is durable; the restart after a stop is a full sync.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from .feed import Change

__all__ = ["LocalFeed"]

SETTLE_SECONDS = 1.0
MAX_PENDING = 100_000


class _Pending:
    __slots__ = ("last_event", "stat")

    def __init__(self, last_event: float, stat: tuple[int, int] | None) -> None:
        self.last_event = last_event
        self.stat = stat


def _stat(path: str) -> tuple[int, int] | None:
    """(size, mtime in ns) of a regular file, or None when the path is not one (any more)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    import stat as stat_mod

    return (st.st_size, st.st_mtime_ns) if stat_mod.S_ISREG(st.st_mode) else None


class LocalFeed:
    """Changes under `root`, filtered by `allows(relative key)`; open with `LocalFeed.open`, on the
    loop the feed will be used from (loop_thread.py)."""

    def __init__(self, root: str, allows: Any = None, *, settle: float = SETTLE_SECONDS,
                 max_pending: int = MAX_PENDING) -> None:
        self.root = os.path.abspath(root)
        self.allows = allows
        self.settle = settle
        self.max_pending = max_pending
        self._pending: dict[str, _Pending] = {}  # in order of the last event: the oldest first
        self._overflowed = False
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None

    @classmethod
    async def open(cls, root: str, allows: Any = None, **kwargs: Any) -> "LocalFeed":
        feed = cls(root, allows, **kwargs)
        ready = asyncio.Event()
        feed._task = asyncio.create_task(feed._watch(ready))
        # watching has begun before the first full sync lists: nothing changed during it is missed
        await asyncio.wait([asyncio.create_task(ready.wait()), feed._task], return_when=asyncio.FIRST_COMPLETED)
        feed._raise_if_failed()
        return feed

    async def _watch(self, ready: asyncio.Event) -> None:
        import watchfiles

        try:
            # watch_filter=None: every path (the user's --include/--exclude decide, not a default
            # list of editor files); a short step so events reach the pending set promptly
            watcher = watchfiles.awatch(self.root, watch_filter=None, stop_event=self._stop, debounce=200,
                                        step=20, rust_timeout=500, yield_on_timeout=True,
                                        ignore_permission_denied=True)
            async for changes in watcher:
                # awatch sets its watch up inside the first iteration, which yields within
                # rust_timeout (yield_on_timeout): from then on nothing is missed
                ready.set()
                for kind, path in changes:
                    self._note(path, kind == watchfiles.Change.deleted, kind == watchfiles.Change.added)
        except Exception as exc:
            self._error = exc
        finally:
            ready.set()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            from ...errors import S3BulkError

            raise S3BulkError(f"cannot watch {self.root}: {self._error}")

    def _key(self, path: str) -> str | None:
        rel = os.path.relpath(path, self.root)
        if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
            return None
        return rel.replace(os.sep, "/")

    def _note(self, path: str, deleted: bool, added: bool) -> None:
        if not deleted and os.path.isdir(path):
            if added:  # created or renamed into place: its files (a directory's own changes are not news)
                for base, _dirs, files in os.walk(path):
                    for name in files:
                        self._add(os.path.join(base, name))
            return
        self._add(path)

    def _add(self, path: str) -> None:
        key = self._key(path)
        if key is None or (self.allows is not None and not self.allows(key)):
            return
        if self._overflowed:
            return
        self._pending.pop(key, None)
        if len(self._pending) >= self.max_pending:
            self._overflowed = True  # the watcher runs a full sync instead
            self._pending.clear()
            return
        self._pending[key] = _Pending(time.monotonic(), _stat(path))

    def needs_full_sync(self) -> bool:
        """True once (then cleared) when more keys changed than the feed keeps: the changes since
        were not all recorded, and only a full sync covers them."""
        overflowed, self._overflowed = self._overflowed, False
        return overflowed

    async def next_batch(self, max_changes: int, timeout: float) -> list[Change]:
        deadline = time.monotonic() + timeout
        while True:
            self._raise_if_failed()
            batch = self._settled(max_changes)
            if batch or self._overflowed or time.monotonic() >= deadline:
                return batch
            await asyncio.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    def _settled(self, max_changes: int) -> list[Change]:
        """Keys quiet for `settle` seconds whose file looks the same as at the last look; a file
        that changed since is looked at again `settle` seconds later."""
        now = time.monotonic()
        batch: list[Change] = []
        again: list[tuple[str, _Pending]] = []
        for key, p in list(self._pending.items()):
            if now - p.last_event < self.settle or len(batch) >= max_changes:
                break  # the rest are younger (in order of the last event)
            del self._pending[key]
            stat = _stat(os.path.join(self.root, key))
            if stat != p.stat:
                p.last_event, p.stat = now, stat  # still being written: look again later
                again.append((key, p))
                continue
            batch.append(Change(key, "put" if stat is not None else "delete",
                                size=stat[0] if stat is not None else None))
        for key, p in again:
            self._pending[key] = p
        return batch

    async def ack(self, changes: list[Change]) -> None:
        """Nothing to acknowledge: a key handed out is forgotten; a new event brings it back."""

    async def release(self, changes: list[Change]) -> None:
        """These changes could not land: their keys wait again, as if just changed."""
        for change in changes:
            self._add(os.path.join(self.root, *change.key.split("/")))

    async def depth(self) -> int | None:
        return len(self._pending)

    async def aclose(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout=5)
            except (asyncio.TimeoutError, Exception):
                self._task.cancel()
