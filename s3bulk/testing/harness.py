"""What a store author implements (`Harness`) and what every case is built from.

A case gets a harness and a store the harness opened. The harness stands for one place under
test (a fresh bucket, directory, namespace): it writes objects there behind the store's back,
opens as many store objects on it as a case needs, opens one on a place that does not exist,
closes what it opened and removes the place afterwards. Optionally it wraps each store in
s3bulk's retry wrapper, as the engine does with every network store, so the case also checks
that the wrapper forwards everything the store declares.

Nothing here imports pytest: a case fails with AssertionError (or the store's own exception),
and stops with CapabilityAbsent when the store declares it lacks what the case tests, after
checking that it really lacks it. A test runner turns CapabilityAbsent into a skip.
"""

from __future__ import annotations

import asyncio
import random
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterator

from ..model import ObjectInfo, WorkUnit
from ..stores.base import ServerSideCopier, Store, Unsupported, Writer, unwrap
from ..stores.features import CAPABILITIES
from ..stores.resilient import ResilienceOptions, wrap
from ..errors import CapabilityAbsent

MiB = 1024 * 1024

# Valid as S3 keys, as local paths and as list/get names. Their UTF-8 byte order is not the
# order of a directory walk ("a-b" < "a/b" < "a0"), nor UTF-16 order ("\uff5e" < "😀" in UTF-8,
# the other way round in UTF-16), and several are prefixes of others ("ab" of "abc", "a" of most).
KEYS = ["a-b", "a.b", "a/b", "a/c d", "a0", "ab", "abc", "b+c", "b%20c", "b?c#d", "e\u0301", "ü",
        "日本/語", "\uff5e", "😀", "😀\U00010000", "\U00010000/ü"]


def utf8_sorted(keys: list[str]) -> list[str]:
    """Keys in the order every ordered store lists them: UTF-8 byte order (as S3 does)."""
    return sorted(keys, key=lambda k: k.encode("utf-8"))


def body(key: str, size: int = 37) -> bytes:
    """Distinct bytes per key, so a store that mixes up two objects' bodies is caught."""
    seed = key.encode("utf-8")
    return (seed * (size // max(1, len(seed)) + 1))[:size]


def noise(label: str, size: int) -> bytes:
    """`size` bytes that look random but are the same for the same label: a case seeds them
    before the store opens and compares with them afterwards."""
    return random.Random(label).randbytes(size)


class Raised:
    """What `expect_raises` caught (`value`), for a case that checks the error further."""

    value: BaseException | None = None


@contextmanager
def expect_raises(kind: type[BaseException], what: str = "") -> Iterator[Raised]:
    """The block must raise `kind` (or a subclass); any other exception goes through, and none
    at all fails with AssertionError naming `what`. pytest.raises without pytest."""
    raised = Raised()
    try:
        yield raised
    except kind as exc:
        raised.value = exc
        return
    raise AssertionError(f"{what or 'the block'} did not raise {kind.__name__}")


class Harness:
    """One place under test, and the stores opened on it. Subclass it for your store.

    Implement `seed` and `make_store`; `make_missing_store` when your store has a bucket or
    directory that can be missing; `leftovers` when it can leave something behind besides
    objects (temporary files); `cleanup` to remove the place. Create one harness per case (a
    fresh place: cases seed and write objects and expect to find only theirs).

    kind: a name for the store under test (test ids, messages).
    location_kind: what `store.location.kind` must say (None: not checked).
    wrapped: open every store inside s3bulk's retry wrapper (stores/resilient.py), as the
    engine opens network stores, so the cases also check what the wrapper forwards.
    """

    kind = ""
    location_kind: str | None = None

    def __init__(self, wrapped: bool = False) -> None:
        self.wrapped = wrapped
        self.opened: list[Any] = []

    # -------------------------------------------------------------- what a store author implements

    def seed(self, objects: dict[str, bytes]) -> None:
        """Write `objects` (key -> body) to the place behind the store's back (with your backend's
        own client, not through the store), before the case opens its store. A case's listing
        and reading checks then test the store alone."""
        raise NotImplementedError

    async def make_store(self) -> Store:
        """A new store object on the place, opened in the running event loop. Called once per
        case and again when a case needs a second store (a later run resuming an upload, the
        source of a server-side copy)."""
        raise NotImplementedError

    async def make_missing_store(self) -> Store | None:
        """A store of the same kind on a bucket or directory that does not exist; None when the
        store has no such thing (the missing-bucket case is then skipped)."""
        return None

    def leftovers(self) -> list[str]:
        """Whatever the store left in the place besides objects (temporary files of an aborted
        upload); the abort case expects none."""
        return []

    def cleanup(self) -> None:
        """Remove the place (after the case, its stores closed)."""

    # -------------------------------------------------------------- what the cases use

    def _keep(self, store: Any) -> Any:
        if self.wrapped:
            store = wrap(store, ResilienceOptions(retries=2, backoff_base=0.01))
        self.opened.append(store)
        return store

    async def open(self) -> Any:
        """A store on the place (wrapped if asked), its destination prepared when it writes.
        Typed Any so a case can call the methods its capabilities add to `Store`."""
        store = self._keep(await self.make_store())
        if store.features.write:
            await store.prepare()
        return store

    async def open_missing(self) -> Any | None:
        store = await self.make_missing_store()
        return None if store is None else self._keep(store)

    async def close(self) -> None:
        """Close every store this harness opened."""
        for store in self.opened:
            await store.close()
        self.opened.clear()


@dataclass(frozen=True)
class Case:
    """One case of the contract: `objects()` are seeded before the store opens, then
    `run(harness, store)` checks the store. Its guarantee is `run`'s docstring (`doc`)."""

    name: str
    run: Callable[[Harness, Any], Awaitable[None]]
    objects: Callable[[], dict[str, bytes]] = dict

    @property
    def doc(self) -> str:
        return (self.run.__doc__ or "").strip()


def run_case(harness: Harness, case: Case) -> None:
    """Seed the case's objects, open a store in a fresh event loop, run the case, close every
    store the harness opened. Raises what the case raises (AssertionError on a broken contract,
    CapabilityAbsent when the case does not apply); `harness.cleanup()` is the caller's."""
    objects = case.objects()
    if objects:
        harness.seed(objects)

    async def go() -> None:
        store = await harness.open()
        try:
            await case.run(harness, store)
        finally:
            await harness.close()

    asyncio.run(go())


async def list_all(store: Any, prefix: str = "", limit: int = 3, unit: WorkUnit | None = None) -> list[ObjectInfo]:
    """Every entry under `prefix` in `unit`, a page of at most `limit` at a time, following each
    page's continuation as the engine does (an ordered store's page may not exceed `limit`)."""
    out: list[ObjectInfo] = []
    u: WorkUnit | None = unit or WorkUnit()
    pages = 0
    while u is not None:
        page = await store.list_page(prefix, u, limit)
        assert len(page.entries) <= limit or not store.features.ordered
        out += page.entries
        u = u.rest(page)
        pages += 1
        assert pages < 1000, "listing does not end"
    return out


async def _lacks(store: Any, method: str, *args: Any) -> None:
    """The store declares it cannot do `method`: it has no such method, or the method says Unsupported."""
    fn = getattr(store, method, None)
    if fn is not None:
        with expect_raises(Unsupported, f"{method} of a store that declares no such capability"):
            await fn(*args)


async def require(store: Any, capability: str) -> None:
    """Go on when the store declares `capability` (a field of Features); otherwise check that it
    really lacks it (the engine trusts the declaration and never calls what is not declared, so
    a declaration that undersells is as wrong as one that oversells) and raise CapabilityAbsent."""
    if getattr(store.features, capability):
        return
    protocol = dict(CAPABILITIES).get(capability)
    if protocol is not None:  # a capability is its protocol: the store inside must not implement it
        assert not isinstance(unwrap(store), protocol), f"declares no {capability} but is a {protocol.__name__}"
    if capability == "write":
        assert not isinstance(store, Writer), "declares no write but is a Writer"
    elif capability == "resumable_uploads":
        await _lacks(store, "list_parts", "k", "id")
        await _lacks(store, "resume_multipart", "k", "id", [])
        await _lacks(store, "abort_multipart", "k", "id")
        await _lacks(store, "list_uploads", "")
        if store.features.write:  # its uploads have no id the journal could keep
            upload = await store.start_multipart("no-id", 3, MiB)
            assert upload.upload_id is None, "declares no resumable uploads but gives an upload id"
            await upload.abort()
    elif capability == "server_side_copy":
        copier: Any = store if isinstance(store, ServerSideCopier) else None
        assert copier is None or not copier.can_copy_from(store), \
            "declares no server-side copy but can copy from itself"
        await _lacks(store, "copy_from", store, "k", "k2", 1)
    raise CapabilityAbsent(f"declares no {capability}")
