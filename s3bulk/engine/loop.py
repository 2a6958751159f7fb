"""The event loop every worker, spread helper and cluster task runs on: uvloop where installed.

One factory below the modules that start loops (engine/run/worker.py, engine/transfer/spread.py, the cluster
driver), so that none of them imports another for it.
"""

from __future__ import annotations

import asyncio


def new_loop() -> asyncio.AbstractEventLoop:
    """A new event loop: uvloop's where it is installed (less CPU per request), else asyncio's."""
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
