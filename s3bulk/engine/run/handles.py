"""What the coordinator drives: workers behind one handle protocol, and where they may come from.

A run hands its work units to workers through one bounded queue and reads their reports from
another (engine/messages.py); the coordinator (coordinator.py) sees each worker only as a `WorkerHandle`,
which is what `multiprocessing.Process` already is. Three kinds exist:

- a worker process per core (worker.worker_process), the default;
- one worker on a thread of this process (worker.ThreadHandle), for one worker or an API caller;
- the tasks of a Dask cluster (s3bulk/cluster), made by a `Runner`.

The engine knows a cluster only through `Runner`: the cluster package sits above the engine (it
runs the engine's worker code inside its tasks), so the engine must not import it. The caller that
was given `--cluster` (the CLI, the API) makes the runner and passes it down (`runner_for` in
s3bulk/cluster/driver.py).
"""

from __future__ import annotations

import queue
from typing import Any, Protocol

from ..plan import Plan


class WorkerHandle(Protocol):
    """One worker as the coordinator drives it (as a multiprocessing.Process). A handle may also
    have `request_stop()` (a graceful stop without a signal) and `pid` (for SIGUSR1)."""

    @property
    def exitcode(self) -> int | None: ...

    def is_alive(self) -> bool: ...

    def join(self, timeout: float | None = None) -> None: ...

    def terminate(self) -> None: ...


class Runner(Protocol):
    """Runs a plan's work units somewhere other than this machine's worker processes.

    run_plan calls `prepare` once before anything starts, `start` once with the queues the
    coordinator uses (plain thread-safe queues: the runner moves units and reports across its own
    boundary), and `close` once at the end, also after a failure in `prepare`."""

    def prepare(self, plan: Plan) -> Plan:
        """Connect; return the plan as it will run there (e.g. workers = the cluster's task slots)."""
        ...

    def start(self, plan: Plan, units_q: queue.Queue[Any], events_q: queue.Queue[Any], body_bytes: int,
              resume_info: Any) -> list[WorkerHandle]:
        """The handles of the workers it started, taking units from units_q and reporting on events_q."""
        ...

    def close(self) -> None:
        """Let go of what prepare connected to or started."""
        ...
