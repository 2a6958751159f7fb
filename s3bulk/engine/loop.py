"""The event loop every worker, spread helper and cluster task runs on: uvloop where installed.

One factory below the modules that start loops (engine/run/worker.py, engine/transfer/spread.py, the cluster
driver), so that none of them imports another for it.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..config.urls import Location
    from ..model import ObjectInfo


class OneObjectRun(Protocol):
    """What plain_loop_for reads of a Plan (this module sits below engine/plan.py)."""

    @property
    def single_key(self) -> str | None: ...
    @property
    def single_info(self) -> ObjectInfo | None: ...
    @property
    def src(self) -> Location: ...


SMALL_RUN_BYTES = 8 * 1024 * 1024
"""A run of one object at most this big gets asyncio's loop (plain_loop_for)."""


def plain_loop_for(plan: OneObjectRun) -> bool:
    """Whether this run is one small object, which asyncio's own loop serves at less cost.

    Why: importing uvloop (~10 ms of CPU, and it imports `inspect`, which start-up otherwise skips)
    is more than a run of one request or two can win back from its cheaper requests; asyncio is
    imported already. A prefix, a listing or a big object (parts) keeps uvloop.
    """
    if plan.single_key is None:
        return False
    info = plan.single_info
    if info is not None:
        return info.size is not None and info.size <= SMALL_RUN_BYTES
    if not plan.src.is_local:
        return False
    try:  # an upload of one file: the planner read only that it is a file
        return os.path.getsize(os.path.join(plan.src.root, plan.single_key)) <= SMALL_RUN_BYTES
    except OSError:
        return False


def new_loop(plain: bool = False) -> asyncio.AbstractEventLoop:
    """A new event loop: uvloop's where it is installed (less CPU per request), else asyncio's
    (also when `plain`: see plain_loop_for)."""
    if plain:
        return asyncio.new_event_loop()
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


def install_loop_policy() -> None:
    """Make uvloop the policy of this process (a worker process, first thing), where installed."""
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    except ImportError:
        pass
