"""A live byte meter for pipes (`copy - DST`, `copy SRC -`, `cat --progress`).

A pipe moves one object of unknown or large size, so the bulk display (objects, ETA) says nothing
while it runs. This counts the bytes the server has taken on an upload (parts acknowledged, not merely read from
stdin, which runs ahead by the part buffers) and the bytes written to stdout on a download (what
the user's other program has seen) and redraws one line on stderr
twice a second from a daemon thread, so the transfer's event loop never waits on the terminal.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, TextIO

from ..config.sizes import human_bytes

REDRAW_SECONDS = 0.5


class ByteMeter:
    """Counts bytes (added, or through a wrapped writer) and draws `label: N MiB, R MiB/s`."""

    def __init__(self, label: str, total: int | None = None, out: TextIO = sys.stderr) -> None:
        self.label, self.total, self.out = label, total, out
        self.moved = 0
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="s3bulk-meter", daemon=True)
        self._width = 0

    def add(self, n: int) -> None:
        self.moved += n  # from the event loop's thread; the drawing thread only reads it

    def writer(self, write: Callable[[memoryview], None]) -> Callable[[memoryview], None]:
        def counted(view: memoryview) -> None:
            write(view)
            self.moved += len(view)
        return counted

    def line(self) -> str:
        elapsed = max(time.monotonic() - self._started, 1e-6)
        rate = self.moved / elapsed
        of = f" of {human_bytes(self.total)}" if self.total else ""
        return f"s3bulk: {self.label} {human_bytes(self.moved)}{of}, {human_bytes(int(rate))}/s"

    def _draw(self) -> None:
        text = self.line()
        pad = max(0, self._width - len(text))
        self._width = len(text)
        try:
            self.out.write("\r" + text + " " * pad)
            self.out.flush()
        except (OSError, ValueError):  # stderr closed: the meter is not worth failing the copy
            self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(REDRAW_SECONDS):
            self._draw()

    def __enter__(self) -> "ByteMeter":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        if self._width:  # clear the line: the summary (or the error) is printed next
            try:
                self.out.write("\r" + " " * self._width + "\r")
                self.out.flush()
            except (OSError, ValueError):
                pass


__all__ = ["ByteMeter"]
