"""The event loop a change feed lives on, in a thread of its own.

The watcher (watcher.py) calls the one orchestration path, `run`, which is synchronous and starts
its own loops; a feed, though, must keep listening while a narrowed sync runs (filesystem events
arrive meanwhile, an SQS long poll is a coroutine). So the feed gets a loop on a daemon thread and
the watcher calls into it with `call`, waiting on the result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")

__all__ = ["LoopThread", "T"]


class LoopThread:
    """An asyncio loop running forever on a daemon thread until `close`."""

    def __init__(self, name: str = "s3bulk-watch-feed") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start `coro` on the loop; its future says when it is done."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on the loop and wait for its result (its exception is raised here)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        if not self.loop.is_running():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()
