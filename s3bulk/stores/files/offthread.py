"""One thread of the process that pwrites received chunks into files, so the event loop's core
receives while another core copies into the page cache.

Why: a 1 GiB download to tmpfs on 2 cores spent ~0.3 s of system CPU receiving and ~0.45 s
writing, all on the event loop's thread, one after the other: the loop was the limit while the
other core sat half idle (the `ceiling-file` reader of bench/ceiling_get.py, 8 threads, ran 1.3x
faster on the same bytes). os.pwrite releases the GIL, so this thread's copy runs beside the
loop's next receive. The handoff is a lock and a list append per 1 MiB chunk (microseconds
against the write's ~0.3 ms).

The chunks are received straight into buffers of a small pool (http/client.py asks the sink for
room()); a buffer goes back to the pool once written: no copy on the way. When every buffer is
waiting to be written the loop waits for one (back-pressure, as when it wrote itself), never
more memory. Used by stores/files/filesink.RangeSink after use_thread() (engine/transfer/sinks.py).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from typing import Any

CHUNK = 1024 * 1024  # what one read receives, as the client's own sink scratch (http/client.py says why)
POOL = 4             # buffers: one being received, up to three being written


class Writes:
    """The process's writer thread and its pool of buffers (made on first use, per process)."""

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.free: list[memoryview] = [memoryview(bytearray(CHUNK)) for _ in range(POOL)]
        self.jobs: deque[tuple[Any, memoryview, int, int]] = deque()
        self.queued = 0  # chunks handed over and not yet written
        self.thread = threading.Thread(target=self._run, name="s3bulk-pwrite", daemon=True)
        self.thread.start()

    def take(self) -> memoryview:
        """A free buffer; waits for a write to end when none is free, makes one when nothing is
        being written (a buffer kept by a read that failed midway is not waited for)."""
        with self.cond:
            while not self.free and self.queued:
                self.cond.wait()
            return self.free.pop() if self.free else memoryview(bytearray(CHUNK))

    def give(self, buf: memoryview) -> None:
        """A buffer back to the pool, unwritten (a sink started over or was dropped)."""
        with self.cond:
            self.free.append(buf)
            self.cond.notify_all()

    def put(self, sink: Any, buf: memoryview, n: int, offset: int) -> None:
        """Write buf[:n] at `offset` of sink.fd, then give buf back to the pool."""
        with self.cond:
            sink.queued += 1
            self.queued += 1
            self.jobs.append((sink, buf, n, offset))
            self.cond.notify_all()

    def settle(self, sink: Any) -> None:
        """Wait until every chunk handed over for `sink` is written."""
        with self.cond:
            while sink.queued:
                self.cond.wait()

    def _run(self) -> None:
        cond, jobs = self.cond, self.jobs
        while True:
            with cond:
                while not jobs:
                    cond.wait()
                sink, buf, n, offset = jobs.popleft()
            if sink.failed is None:  # after a failed write the rest of the range is not written
                try:
                    view = buf[:n]
                    while view:
                        done = os.pwrite(sink.fd, view, offset)
                        view, offset = view[done:], offset + done
                except BaseException as exc:  # handed to the loop's thread by the sink
                    sink.failed = exc
            with cond:
                sink.queued -= 1
                self.queued -= 1
                self.free.append(buf)
                cond.notify_all()


_writes: tuple[int, Writes] | None = None
_made = threading.Lock()


def writes() -> Writes:
    """This process's Writes (a forked helper process makes its own: threads do not survive a fork)."""
    global _writes
    pid = os.getpid()
    made = _writes
    if made is not None and made[0] == pid:
        return made[1]
    with _made:
        if _writes is None or _writes[0] != pid:
            _writes = (pid, Writes())
        return _writes[1]
