"""The reads the engine makes most, over the one `get` of the store contract.

Why here and not as store methods: a store implements one read (base.Store.get with GetOptions),
so a wrapper retries one call and a new store has one method to get right; what the engine
wants to say often (the whole body, a range, a range into a buffer, the first bytes) is said
once here, above the protocol, for every store alike. A plain whole read passes the shared
WHOLE options: nothing is allocated for the asking.
"""

from __future__ import annotations

from typing import Any

from ..model import ObjectProps
from .base import WHOLE, GetOptions, Store


async def read_all(store: Store, key: str, if_match: str | None = None) -> bytes:
    """The whole object (held to the ETag `if_match` when given)."""
    return (await store.get(key, WHOLE if if_match is None else GetOptions(if_match=if_match))).data


async def read_range(store: Store, key: str, start: int, end: int, buf: memoryview | None = None, *,
                     if_match: str | None = None) -> bytes:
    """Bytes [start, end) of key; into `buf` (a view of it comes back) where one is given and the
    store receives in place (features.read_into), else as bytes of their own."""
    into = buf if buf is not None and store.features.read_into else None
    return (await store.get(key, GetOptions((start, end), if_match=if_match, into=into))).data


async def read_first(store: Store, key: str, limit: int) -> tuple[bytes, int]:
    """Up to `limit` first bytes and the object's size, in one request where the store can."""
    got = await store.get(key, GetOptions(first=limit))
    assert got.size is not None  # `first` always tells the size
    return got.data, got.size


async def read_to(store: Store, key: str, start: int, end: int, sink: Any, *, if_match: str | None = None) -> None:
    """Bytes [start, end) handed to `sink` (stores/files/filesink.RangeSink) as they arrive where
    the store can (features.read_to), else in one go."""
    await store.get(key, GetOptions((start, end), if_match=if_match, sink=sink))


async def read_with_props(store: Store, key: str, if_match: str | None = None
                          ) -> tuple[bytes, ObjectProps]:
    """The whole object and its properties from the one GET (features.props)."""
    got = await store.get(key, GetOptions(if_match=if_match, with_props=True))
    assert got.props is not None  # with_props always gives them
    return got.data, got.props


async def read_with_mtime(store: Store, key: str, if_match: str | None = None
                          ) -> tuple[bytes, float | None]:
    """The whole object and the file time its metadata carries (None without one)."""
    got = await store.get(key, GetOptions(if_match=if_match, with_mtime=True))
    return got.data, got.mtime


async def read_version(store: Store, key: str, version_id: str, start: int | None = None,
                       end: int | None = None) -> bytes:
    """One version's bytes, whole or [start, end) (features.versions)."""
    rng = (start, end) if start is not None and end is not None else None
    return (await store.get(key, GetOptions(rng, version_id=version_id))).data
