"""Backends behind one interface; `open_store` is the only place that knows which is which."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from ..urls import Location
from .base import Multipart, ServerSideCopier, Store, Writer, part_size_for

__all__ = ["StoreOptions", "open_store", "Store", "Writer", "Multipart", "ServerSideCopier", "part_size_for"]


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """Per-process knobs a store needs when it is opened (picklable)."""

    max_connections: int = 64
    copy_threshold: int = 5 * 1024**3
    copy_part_size: int = 512 * 1024**2


async def open_store(location: Location, options: StoreOptions = StoreOptions()) -> Store:
    """Open a store for `location` in the current event loop."""
    if location.kind == "s3":
        from .s3 import S3Store

        return await S3Store(location, max_connections=options.max_connections,
                             copy_threshold=options.copy_threshold,
                             copy_part_size=options.copy_part_size).open()
    if location.kind == "local":
        from .local import LocalStore

        return LocalStore(location)
    if location.kind == "http":
        from .listget import ListGetStore

        return ListGetStore(location, max_connections=options.max_connections)
    raise UsageError(f"unknown store kind {location.kind!r}")
