"""`--cluster local:N` on Linux: Dask worker processes forked from the driver, without nannies.

Why not Dask's LocalCluster of processes: there every worker is a Nanny in the driver that starts
a fresh interpreter (spawn, or a forkserver), which imports distributed and the engine again
(and whatever the planner loaded); the nannies themselves are Dask servers with their own periodic
work. That start-up was most of what Dask added to a 20,000-object copy (1.3-1.7 CPU s of 4-6).
Here the driver, which has imported distributed and the engine already, forks N plain
`distributed.Worker` processes that share all of it, and runs only the scheduler (and the Client)
itself, as the built-in pool forks its workers (engine/run/launch.py _start_method). Start-up: 0.9 -> 0.3-0.5 CPU
s for 2 workers, importing distributed once (~0.25) being most of what is left.

Forking is only safe from a process with one thread: the workers are forked before the scheduler's
event loop thread starts, and Cluster._local uses Dask's LocalCluster where this process already
runs other threads (the API inside a threaded program) or is not Linux.

What the nannies did and what replaces it: a worker that dies is not restarted (Dask runs its
tasks on the others, as on a cluster of `dask worker --no-nanny`); a worker dies with the driver
(PR_SET_PDEATHSIG), as a nanny's worker did when its nanny's process went; and each worker gets
the environment as it is when the cluster starts (fork copies it).
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import importlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from typing import Any

PR_SET_PDEATHSIG = 1
CLOSE_SECONDS = 10.0  # a worker that has not left this long after the scheduler closed is killed
# A worker's heartbeat: Dask's scheduler asks for one every 0.5 s from each worker of a cluster of up
# to 10 (no setting changes that), and each costs the worker and the scheduler CPU: the largest
# part of what a cluster costs per second once the quiet settings are in (driver.QUIET_SETTINGS).
# What a heartbeat carries (metrics for the dashboard, the worker's liveness for a 5-minute TTL) is
# not needed more often here: a worker that dies closes its connection, which the scheduler sees
# at once.
HEARTBEAT_SECONDS = 5.0
SCRATCH_PREFIX = "s3bulk-dask-"  # + the driver's pid: the workers' Dask work dirs in the temp dir


def can_fork() -> bool:
    """Whether this process may fork workers now: Linux, one thread, no running event loop."""
    if sys.platform != "linux" or threading.active_count() != 1:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


class ForkedWorkers:
    """N Dask worker processes forked from this one, waiting for the scheduler's address
    (`serve`); `close` waits for them to leave (the scheduler's close tells them to) and kills
    those that do not."""

    def __init__(self, n: int, settings: dict[str, Any], preload: list[str]) -> None:
        for name in preload:  # imported once here, shared by every worker
            importlib.import_module(name)
        _sweep_stale(tempfile.gettempdir())
        # their Dask work dirs, removed at close (or by a later cluster when this driver is killed)
        self.scratch = tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-")
        self.pids: list[int] = []
        self._pipes: list[int] = []
        for stream in (sys.stdout, sys.stderr):  # else a worker could write our buffered output again
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        # the workers' collections then never walk (and copy) what they share with us; no
        # gc.collect() first (34 ms here with distributed imported): little garbage is left after
        # imports, and the driver gets it back with gc.unfreeze()
        gc.freeze()
        driver = os.getpid()
        try:
            for i in range(n):
                r, w = os.pipe()
                pid = os.fork()
                if pid == 0:  # the worker; it never returns into the driver's code
                    code = 1
                    try:
                        os.close(w)
                        code = _worker_main(r, driver, f"s3bulk-{i}", os.path.join(self.scratch, str(i)),
                                            settings)
                    finally:
                        os._exit(code)
                os.close(r)
                self.pids.append(pid)
                self._pipes.append(w)
        except BaseException:
            self.close(kill=True)
            raise
        finally:
            gc.unfreeze()

    def serve(self, address: str) -> None:
        """Tell every worker the scheduler's address: they start and register with it."""
        for w in self._pipes:
            try:
                os.write(w, address.encode() + b"\n")
            except OSError:
                pass  # that worker is gone: the others do the work
            os.close(w)
        self._pipes = []

    def close(self, kill: bool = False) -> None:
        """Wait for the workers to leave (they close when the scheduler closes, or at once when
        `serve` never came), kill those left after CLOSE_SECONDS (or at once with `kill`)."""
        for w in self._pipes:  # never served: an empty read ends them
            os.close(w)
        self._pipes = []
        until = time.monotonic() + (0.0 if kill else CLOSE_SECONDS)
        left = list(self.pids)
        while left:
            for pid in list(left):
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done = pid
                if done:
                    left.remove(pid)
            if not left:
                break
            if time.monotonic() >= until:
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                    except (ProcessLookupError, ChildProcessError):
                        pass
                break
            time.sleep(0.02)
        self.pids = []
        shutil.rmtree(self.scratch, ignore_errors=True)


def _worker_main(pipe: int, driver: int, name: str, workdir: str, settings: dict[str, Any]) -> int:
    """In a forked worker: die with the driver, wait for the scheduler's address, then run a
    single-threaded Dask Worker until the scheduler closes it. SIGINT stays blocked as the
    driver blocked it before forking (a Ctrl-C is the coordinator's to interpret)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != driver:
        return 0  # the driver died before we asked to die with it
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(pipe, 4096)
        if not chunk:
            return 0  # the driver gave up starting the cluster
        data += chunk
    os.close(pipe)
    address = data.decode().strip()

    import dask
    import distributed

    dask.config.set(settings)  # this process only: the Worker reads them as it starts
    for logger in ("distributed", "distributed.worker", "distributed.core", "distributed.comm"):
        logging.getLogger(logger).setLevel(logging.ERROR)

    async def run() -> None:
        async with _worker_class(distributed)(address, nthreads=1, name=name, local_directory=workdir,
                                              dashboard=False, death_timeout=60,
                                              heartbeat_interval=f"{HEARTBEAT_SECONDS}s") as worker:
            await worker.finished()

    asyncio.run(run())
    return 0


def _worker_class(distributed: Any) -> Any:
    """distributed.Worker, heartbeating every HEARTBEAT_SECONDS whatever the scheduler asks."""

    class Worker(distributed.Worker):
        async def heartbeat(self) -> None:
            await super().heartbeat()
            callback = self.periodic_callbacks.get("heartbeat")
            if callback is not None:  # the scheduler's reply has just set it to 0.5 s
                callback.callback_time = HEARTBEAT_SECONDS * 1000

    return Worker


def _sweep_stale(tmp: str) -> None:
    """Remove the work dirs of forked clusters whose driver is gone: a driver killed (SIGKILL)
    takes its workers with it but cannot remove theirs. A pid in use again keeps its dir (safe)."""
    try:
        entries = list(os.scandir(tmp))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(SCRATCH_PREFIX):
            continue
        pid_text = entry.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(entry.path, ignore_errors=True)
        except (PermissionError, OverflowError):
            pass  # alive (another user's), or not a pid
