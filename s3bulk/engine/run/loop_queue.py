"""The units queue of a worker that runs on a thread of this process: a queue.Queue that the
worker's event loop awaits without a thread of its own.

Why: a worker took each unit with `run_in_executor(getter, units_q.get)`, a thread blocked on the
queue for it. Between processes that is the way (a multiprocessing queue has nothing to await),
but for the in-process worker, which every one-object copy runs, it was a thread started for
every run (and the executor's set-up) to carry one unit and the end mark across. Here the
coordinator's put() (or put_nowait) wakes the loop itself, with call_soon_threadsafe, when the
worker is waiting; everything else is queue.Queue's (its lock, maxsize, get_nowait for the
coordinator taking units back).
"""

from __future__ import annotations

import asyncio
import queue
from typing import Any


class LoopQueue(queue.Queue[Any]):
    """queue.Queue, plus `get_async()` for one awaiting consumer on an event loop."""

    def __init__(self, maxsize: int = 0) -> None:
        super().__init__(maxsize)
        self._waiter: asyncio.Future[None] | None = None  # the consumer's, while it waits for an item

    def _put(self, item: Any) -> None:  # called by put()/put_nowait() under the queue's lock
        super()._put(item)
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            try:
                waiter.get_loop().call_soon_threadsafe(_wake, waiter)
            except RuntimeError:  # the worker's loop is closed (it ended without its waiter's finally)
                pass

    async def get_async(self) -> Any:
        """The next item, as get() would return it, waiting on the running loop instead of a thread."""
        while True:
            with self.not_empty:
                if self._qsize():
                    item = self._get()
                    self.not_full.notify()  # what get() does: a put() blocked on a full queue goes on
                    return item
                waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                with self.mutex:
                    if self._waiter is waiter:  # cancelled while waiting: no put() will wake it now
                        self._waiter = None


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # the consumer may have been cancelled meanwhile
        waiter.set_result(None)
