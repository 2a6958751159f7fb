"""Backends behind one interface; this module is the only place that knows which is which:
`STORE_MODULES` names the module of each kind of store, `open_store` opens one."""

from __future__ import annotations

import os
from dataclasses import field
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..config.urls import Location
from .base import (WHOLE, Features, GetOptions, GetResult, ObjectHead, Multipart, PartInfo, ResumableUploads, ServerSideCopier,
                   Store, Traits, Unsupported, Writer, part_size_for, unwrap)
from .features import features_of
from .queues import EventQueue
from .resilient import ResilienceOptions

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ..quick_dataclass import dataclass

__all__ = ["STORE_MODULES", "StoreOptions", "ResilienceOptions", "open_store", "settle_location", "open_event_queue",
           "Store", "Writer", "Multipart", "ServerSideCopier", "GetOptions", "GetResult", "ObjectHead", "WHOLE", "ResumableUploads",
           "Features", "Traits", "features_of", "PartInfo", "Unsupported", "unwrap", "part_size_for"]


# the module of each kind of store (a Location's kind): what open_store imports, and what a run
# imports ahead in the parent (engine/run/launch.py) or in cluster workers (s3bulk/cluster), so
# that forked workers share one copy
STORE_MODULES = {"s3": "s3bulk.stores.s3.store", "local": "s3bulk.stores.local.store",
                 "http": "s3bulk.stores.listget", "memory": "s3bulk.stores.memory"}


def _lean_default() -> bool:
    # S3BULK_DATA_PATH=botocore sends every request through aiobotocore (the tests run both paths)
    return os.environ.get("S3BULK_DATA_PATH", "lean") != "botocore"


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """Per-process knobs a store needs when it is opened (picklable)."""

    max_connections: int = 64
    copy_threshold: int = 5 * 1024**3
    copy_part_size: int = 512 * 1024**2
    copy_concurrency: int = 8        # parts of one server-side copy in flight (UploadPartCopy)
    timeout: float = 60.0            # seconds without an answer before a request fails (and is retried)
    lean: bool = field(default_factory=_lean_default)
    resilience: ResilienceOptions = field(default_factory=ResilienceOptions)
    flush_writes: bool = False       # local parts written through and dropped from the page cache
    request_payer: str | None = None  # --request-payer: S3 requests (reads too) accept requester-pays charges
    checksum_algorithm: str | None = None  # --checksum-algorithm: S3 uploads carry it (stores/checksums.py)


def _run_key() -> str:
    """Identifies this run to every process in it: the coordinator's pid and start time."""
    import sys

    # a worker process runs with multiprocessing imported; a process without it (the CLI's
    # in-process run, the Lambda handler) is the coordinator and need not import it to know
    mp = sys.modules.get("multiprocessing")
    pid = os.getppid() if mp is not None and mp.parent_process() is not None else os.getpid()
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            started = f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        started = "0"
    return f"{pid}-{started}"


async def open_store(location: Location, options: StoreOptions = StoreOptions()) -> Store:
    """Open a store for `location` in the current event loop. Network stores come wrapped for
    retries, adaptive concurrency and rate caps (resilient.py); local files need none of it."""
    from dataclasses import replace

    from .resilient import shared_name, wrap

    if location.kind == "local":
        from .local.store import LocalStore

        return LocalStore(location, flush_writes=options.flush_writes)
    res = replace(options.resilience, shared_name=shared_name(_run_key(), f"{location.kind}:{location.raw}"))
    if location.kind == "s3":
        from .s3.store import S3Store

        store = await S3Store(location, max_connections=options.max_connections,
                              copy_threshold=options.copy_threshold, copy_part_size=options.copy_part_size,
                              copy_concurrency=options.copy_concurrency, lean=options.lean, timeout=options.timeout,
                              request_payer=options.request_payer,
                              checksum_algorithm=options.checksum_algorithm).open()
        return wrap(store, res)
    if location.kind == "http":
        from .listget import ListGetStore

        return wrap(ListGetStore(location, max_connections=options.max_connections,
                                 timeout=options.timeout), res)
    if location.kind == "memory":
        from .memory import MemoryStore

        return wrap(MemoryStore(location), res)
    raise UsageError(f"unknown store kind {location.kind!r}")


def settle_location(location: Location) -> Location:
    """`location` with every non-secret setting its store needs resolved here, once (an S3 side's
    endpoint, region, addressing, CA bundle, proxies: stores/s3/setup.py settle); other kinds need
    none and come back as they are. The plan carries what this resolved to every worker."""
    if location.kind != "s3":
        return location
    from dataclasses import replace

    from .s3.setup import settle

    return replace(location, s3=settle(location.s3))


async def open_event_queue(queue: str, location: Location) -> EventQueue:
    """The queue of change events at URL (or ARN) `queue`, of the S3 SRC `location`, reached with
    that side's settings (stores/s3/queue.py: where its requests go, its errors)."""
    if location.kind != "s3":
        raise UsageError(f"--watch-queue needs an S3 source (s3://bucket/prefix), not {location.raw!r}")
    from .s3.queue import SqsQueue

    return await SqsQueue.open(queue, location.s3)
