"""Real Dask processes for the cluster tests: a `dask scheduler` and `dask worker` processes over
loopback (tests/test_cluster.py, tests/test_cluster_settings.py), and waiting on a condition with a
generous deadline, never on a clock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from conftest import ROOT

DEADLINE = 120.0  # seconds: for things that take one or two on an idle machine


def wait_for(what: str, ok: Callable[[], bool], deadline: float = DEADLINE) -> None:
    until = time.monotonic() + deadline
    while not ok():
        if time.monotonic() > until:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class DaskProcs:
    """A `dask scheduler` and `dask worker` processes started over loopback, killed at teardown.
    `env`: the environment of every process started (default: this process's)."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None) -> None:
        import distributed

        self.tmp = tmp
        self.env = env
        self.procs: list[subprocess.Popen] = []
        sched_file = tmp / "scheduler.json"
        self.scheduler = self._start([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                      "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                      "--scheduler-file", str(sched_file)], "scheduler")
        wait_for("the scheduler", lambda: sched_file.exists() and sched_file.stat().st_size > 0)
        self.address = json.loads(sched_file.read_text())["address"]
        self.client = distributed.Client(self.address, timeout=60, set_as_default=False)

    def _start(self, argv: list[str], name: str, prefix: list[str] | None = None) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "wb")
        proc = subprocess.Popen([*(prefix or []), *argv], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                start_new_session=True, env=self.env)
        self.procs.append(proc)
        return proc

    def worker(self, name: str, prefix: list[str] | None = None) -> subprocess.Popen:
        """Start one single-threaded worker without a nanny (its pid is the worker's: SIGKILL kills it)."""
        return self._start([sys.executable, "-m", "distributed.cli.dask_worker", self.address,
                            "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", name,
                            "--host", "127.0.0.1", "--local-directory", str(self.tmp / name)], name, prefix)

    def names(self) -> set[str]:
        return {str(w.get("name")) for w in self.client.scheduler_info(n_workers=-1)["workers"].values()}

    def address_of(self, name: str) -> str | None:
        for addr, w in self.client.scheduler_info(n_workers=-1)["workers"].items():
            if str(w.get("name")) == name:
                return addr
        return None

    def idle(self) -> bool:
        """No task of any run is still running (a killed driver's tasks finish on their own)."""
        return not any(self.client.processing().values())

    def close(self) -> None:
        self.client.close()
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
