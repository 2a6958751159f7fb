"""Which stop signals (SIGINT, SIGTERM) the process received, whoever's handler ran.

The engine handles both while a run lasts (engine/run/coordinator.py `Signals`), a watch between
its syncs (cli/watch.py): the CLI still has to know which came, for the exit code and the closing
line. Python writes each signal's number to its wakeup fd whatever the handler, so reading that fd
tells, and no stop is lost between one handler and the next."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

STOPS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """A context: inside it, `seen()` says whether a SIGINT or SIGTERM came; `caught` keeps their
    numbers in order of arrival, and `signum` the first (after the context, too). Off the main
    thread (the API's `*_async` twins) it sees nothing: signals go to the main thread only."""

    def __init__(self, caught: list[int] | None = None) -> None:
        self.caught: list[int] = caught if caught is not None else []
        self._pipe: tuple[int, int] | None = None
        self._old = -1

    @property
    def signum(self) -> int | None:
        return self.caught[0] if self.caught else None

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            r, w = os.pipe()
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            self._pipe = (r, w)
            self._old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        return self

    def seen(self) -> bool:
        """Whether a SIGINT or SIGTERM came (its number kept in `caught`)."""
        if self._pipe is not None:
            try:
                got = os.read(self._pipe[0], 4096)
            except BlockingIOError:
                got = b""
            self.caught.extend(n for n in got if n in STOPS and n not in self.caught)
        return bool(self.caught)

    def __exit__(self, *exc: Any) -> None:
        if self._pipe is None:
            return
        self.seen()  # what came until now
        signal.set_wakeup_fd(self._old, warn_on_full_buffer=False)
        for fd in self._pipe:
            os.close(fd)
        self._pipe = None


class LatchedInterrupt:
    """A context for an output loop: SIGINT raises KeyboardInterrupt as Python's own handler does,
    and is also remembered. A KeyboardInterrupt raised while a weakref callback or a `__del__` runs
    is printed as 'Exception ignored' and lost, and the loop would run to its end (exit 0 after a
    Ctrl-C); the loop calls `check()` between pages to raise it again."""

    def __init__(self) -> None:
        self.came = False
        self._old: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        self.came = True
        raise KeyboardInterrupt

    def check(self) -> None:
        """Raise the KeyboardInterrupt a SIGINT meant, if one came and was swallowed."""
        if self.came:
            raise KeyboardInterrupt

    def __enter__(self) -> "LatchedInterrupt":
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
            self._old = None
