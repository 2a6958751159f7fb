"""One contract, the same cases, every store (as rclone's fstests.Run and object_store's integration.rs).

The cases live in s3bulk.testing (public, so a store written outside the project runs them
too). Here each runs against: the in-memory store, local files (tmp_path), S3 on both data
paths (lean and botocore, against LocalStack), the list/get store over a real `s3bulk serve`,
and the retry wrapper around each of them; and against a store written the way an outside
author would, through the public module only. A case that needs a capability runs whenever
the store declares it (so a store that loses a capability it declares fails here), and is
skipped only when the store declares it does not have it, after checking that it indeed does not.
"""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

from conftest import write_tree
from s3bulk.errors import NotFound
from s3bulk.model import ObjectInfo, Page, WorkUnit
from s3bulk.stores import WHOLE, Features, GetOptions, GetResult
from s3bulk.stores import memory
from s3bulk.stores.resilient import ResilienceOptions, wrap
from s3bulk.stores.reading import read_all
from s3bulk.testing import CASES, Case, CapabilityAbsent, Harness, run_case
from s3bulk.config.urls import Location, S3Options, parse_location


def run_or_skip(h: Harness, case: Case) -> None:
    """A case the store declares does not apply is a skip, with the case's reason."""
    try:
        run_case(h, case)
    except CapabilityAbsent as absent:
        pytest.skip(str(absent))


# ------------------------------------------------------------------------------------ this project's stores


class MemoryHarness(Harness):
    kind = location_kind = "memory"

    def __init__(self, wrapped: bool) -> None:
        super().__init__(wrapped)
        self.name = f"contract-{uuid.uuid4().hex[:12]}"
        memory.bucket(self.name)

    def seed(self, objects: dict[str, bytes]) -> None:
        for k, v in objects.items():
            memory.bucket(self.name).put(k, v)

    async def make_store(self) -> Any:
        return memory.MemoryStore(parse_location(f"memory://{self.name}/"))

    async def make_missing_store(self) -> Any:
        return memory.MemoryStore(parse_location(f"memory://missing-{uuid.uuid4().hex[:12]}/"))

    def cleanup(self) -> None:
        memory.drop(self.name)


class LocalHarness(Harness):
    kind = location_kind = "local"

    def __init__(self, wrapped: bool, root: Path) -> None:
        super().__init__(wrapped)
        self.root = root

    def seed(self, objects: dict[str, bytes]) -> None:
        write_tree(self.root, objects)

    async def make_store(self) -> Any:
        from s3bulk.stores.local.store import LocalStore

        return LocalStore(parse_location(str(self.root)))

    async def make_missing_store(self) -> Any:
        from s3bulk.stores.local.store import LocalStore

        return LocalStore(parse_location(str(self.root.parent / "missing")))

    def leftovers(self) -> list[str]:
        return [str(p) for p in self.root.rglob("*s3bulk*")]  # temporary files of an upload


class S3Harness(Harness):
    location_kind = "s3"

    def __init__(self, wrapped: bool, lean: bool, s3: Any, endpoint: str) -> None:
        super().__init__(wrapped)
        self.kind = "s3-lean" if lean else "s3-botocore"
        self.lean, self.s3, self.endpoint = lean, s3, endpoint
        self.bucket = f"t-{uuid.uuid4().hex[:20]}"
        s3.create_bucket(Bucket=self.bucket)

    def seed(self, objects: dict[str, bytes]) -> None:
        for k, v in objects.items():
            self.s3.put_object(Bucket=self.bucket, Key=k, Body=v)

    async def _s3(self, bucket: str) -> Any:
        from s3bulk.stores.s3.store import S3Store

        loc = parse_location(f"s3://{bucket}/", S3Options(endpoint_url=self.endpoint))
        store = await S3Store(loc, lean=self.lean).open()
        # the lean case must really be on the lean path (it falls back to botocore on its own)
        assert (store._wire is not None) == self.lean
        return store

    async def make_store(self) -> Any:
        return await self._s3(self.bucket)

    async def make_missing_store(self) -> Any:
        return await self._s3(f"t-missing-{uuid.uuid4().hex[:12]}")


class ListGetHarness(Harness):
    """A directory served by `s3bulk serve` (three names a page), started on first open."""

    kind = "listget"
    location_kind = "http"

    def __init__(self, wrapped: bool, root: Path, start: Callable[..., str]) -> None:
        super().__init__(wrapped)
        self.root, self.start, self.url = root, start, ""
        root.mkdir(parents=True, exist_ok=True)

    def seed(self, objects: dict[str, bytes]) -> None:
        assert not self.url, "seed before the server starts: it caches directory listings"
        write_tree(self.root, objects)

    async def make_store(self) -> Any:
        from s3bulk.stores.listget import ListGetStore

        if not self.url:
            self.url = self.start(str(self.root), "--page-size", "3", "--processes", "1")
        return ListGetStore(parse_location(self.url + "/"))


STORES = ["memory", "local", "s3-lean", "s3-botocore", "listget"]
ON_THIS_MACHINE = ("memory", "local")  # no server: their cases run in `pytest -m unit` too


@pytest.fixture(params=[pytest.param((k, w), marks=pytest.mark.unit if k in ON_THIS_MACHINE else ())
                        for w in (False, True) for k in STORES],
                ids=lambda p: p[0] + ("+retry" if p[1] else ""))
def harness(request, tmp_path) -> Harness:
    kind, wrapped = request.param
    h: Harness
    if kind == "memory":
        h = MemoryHarness(wrapped)
    elif kind == "local":
        h = LocalHarness(wrapped, tmp_path / "root")
    elif kind.startswith("s3"):
        h = S3Harness(wrapped, kind == "s3-lean", request.getfixturevalue("s3"),
                      request.getfixturevalue("endpoint"))
    else:
        h = ListGetHarness(wrapped, tmp_path / "served", request.getfixturevalue("listget_server"))
    yield h
    h.cleanup()


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_contract(harness: Harness, case: Case) -> None:
    run_or_skip(harness, case)


# ------------------------------------------------------------------------------------ the wrapper


@pytest.mark.unit
def test_wrapper_retries_injected_faults_and_forwards_declarations():
    """The retry wrapper around the memory store: transient faults are retried and counted, a
    missing key is not retried, everything the contract names is forwarded."""
    name = f"contract-{uuid.uuid4().hex[:12]}"
    b = memory.bucket(name)
    b.put("k", b"data")

    async def go() -> None:
        inner = memory.MemoryStore(Location("memory", name, "", f"memory://{name}/"))
        store = wrap(inner, ResilienceOptions(retries=3, backoff_base=0.001))
        try:
            b.inject("get", "k", times=2)
            assert await read_all(store, "k") == b"data"
            assert store.stats.retries == 2 and b.calls["get"] == 3
            with pytest.raises(NotFound):
                await read_all(store, "missing")
            assert b.calls["get"] == 4  # a missing key is final: one call
            b.inject("get", "k", times=-1)
            with pytest.raises(Exception) as err:
                await read_all(store, "k")
            assert "injected" in str(err.value) and b.calls["get"] == 4 + 4
            assert store.unwrap() is inner and store.features is inner.features and store.ordered
        finally:
            await store.close()
            memory.drop(name)

    asyncio.run(go())


@pytest.mark.unit
def test_a_wrapper_claims_no_more_than_it_forwards():
    """A wrapper's features are its inner store's masked by the protocols it forwards (rclone's
    Mask): one that forwards nothing claims no capability, one that forwards all is the inner's."""
    from dataclasses import replace

    from s3bulk.stores.features import CAPABILITIES, features_of, mask

    name = f"contract-{uuid.uuid4().hex[:12]}"
    inner = memory.MemoryStore(Location("memory", name, "", f"memory://{name}/"))
    assert inner.features == features_of(inner, inner.traits)
    assert mask(inner.features, object()) == replace(inner.features, **{c: False for c, _ in CAPABILITIES})
    assert mask(inner.features, wrap(inner, ResilienceOptions())) is inner.features


# ------------------------------------------------------------------------------------ a store from outside
# Written as a store author outside the project would: against the protocols of s3bulk.stores and
# the public s3bulk.testing, nothing private. Objects live in a dict per place.

_PLACES: dict[str, dict[str, tuple[bytes, float]]] = {}


class DictStore:
    """Ordered listing, whole and multipart writes (an upload dies with the process: no id),
    deletes; no read_into, no resumable uploads, no server-side copy."""

    ordered = True
    features = Features(ordered=True, write=True, keeps_mtime=True, mtime_precision=1e-6)

    def __init__(self, name: str) -> None:
        self.name = name
        self.location = Location("dict", name, "", f"dict://{name}/")

    def _objects(self, op: str, key: str = "") -> dict[str, tuple[bytes, float]]:
        objects = _PLACES.get(self.name)
        if objects is None:
            raise NotFound("no such place", op=op, url=self.location.raw, key=key)
        return objects

    def _one(self, op: str, key: str) -> tuple[bytes, float]:
        found = self._objects(op, key).get(key)
        if found is None:
            raise NotFound("no such key", op=op, url=self.location.raw + key, key=key)
        return found

    def _keys(self, keys: list[str]) -> list[str]:
        return keys

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        objects = self._objects("list", prefix)
        keys = sorted(k for k in objects if k.startswith(prefix) and (unit.after is None or k > unit.after)
                      and (unit.until is None or k <= unit.until))  # str order is UTF-8 byte order
        page = self._keys(keys[:limit])
        entries = [ObjectInfo(k, len(objects[k][0]), objects[k][1]) for k in page]
        return Page(entries, next_after=keys[limit - 1] if len(keys) > limit else None)

    async def head(self, key: str) -> ObjectInfo:
        data, mtime = self._one("head", key)
        return ObjectInfo(key, len(data), mtime)

    async def get(self, key: str, opts: GetOptions = WHOLE) -> GetResult:
        data = self._one("get", key)[0]
        if opts.first is not None:
            return GetResult(data[:opts.first], len(data))
        if opts.range is None:
            return GetResult(data, len(data))
        part = data[opts.range[0]:opts.range[1]]
        if opts.sink is not None:  # handed over in one go (no read_to declared)
            opts.sink.begin()
            opts.sink.write(memoryview(part))
            return GetResult(b"")
        return GetResult(part)  # bytes of its own: no read_into declared

    async def close(self) -> None:
        pass

    async def prepare(self) -> None:
        _PLACES.setdefault(self.name, {})

    async def put(self, key: str, data: bytes, mtime: float | None = None, *, props: Any = None) -> None:
        self._objects("put", key)[key] = (bytes(data), time.time() if mtime is None else mtime)

    async def start_multipart(self, key: str, size: int, part_size: int, mtime: float | None = None, *,
                              props: Any = None) -> "DictUpload":
        return DictUpload(self, key, mtime)

    async def delete_many(self, keys: Sequence[str]) -> list[tuple[str, str]]:
        for key in keys:
            self._objects("delete", key).pop(key, None)
        return []


class DictUpload:
    upload_id = None

    def __init__(self, store: DictStore, key: str, mtime: float | None) -> None:
        self.store, self.key, self.mtime = store, key, mtime
        self.parts: dict[int, bytes] = {}

    async def put_part(self, number: int, offset: int, data: bytes) -> None:
        self.parts[number] = bytes(data)  # the caller reuses its buffer

    async def complete(self) -> None:
        await self.store.put(self.key, b"".join(self.parts[n] for n in sorted(self.parts)), self.mtime)

    async def abort(self) -> None:
        self.parts.clear()


class DictHarness(Harness):
    kind = location_kind = "dict"

    def __init__(self, store: type[DictStore] = DictStore, wrapped: bool = False) -> None:
        super().__init__(wrapped)
        self.store, self.name = store, f"place-{uuid.uuid4().hex[:12]}"
        _PLACES[self.name] = {}

    def seed(self, objects: dict[str, bytes]) -> None:
        _PLACES[self.name].update((k, (v, time.time())) for k, v in objects.items())

    async def make_store(self) -> DictStore:
        return self.store(self.name)

    async def make_missing_store(self) -> DictStore:
        return self.store(f"missing-{uuid.uuid4().hex[:12]}")

    def cleanup(self) -> None:
        _PLACES.pop(self.name, None)


@pytest.mark.unit
@pytest.mark.parametrize("wrapped", [False, True], ids=["dict", "dict+retry"])
@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_a_store_from_outside_runs_every_case(case: Case, wrapped: bool) -> None:
    """What the module docstring of s3bulk.testing tells a store author to write, run as written:
    the dict store passes every case it declares and is skipped, after the check, on the rest."""
    harness = DictHarness(wrapped=wrapped)
    try:
        run_or_skip(harness, case)
    finally:
        harness.cleanup()


class ListsOutOfOrder(DictStore):
    def _keys(self, keys: list[str]) -> list[str]:
        return keys[::-1]


class ClaimsReadInto(DictStore):
    features = Features(ordered=True, write=True, read_into=True, keeps_mtime=True, mtime_precision=1e-6)


class HidesItsWrites(DictStore):
    features = Features(ordered=True, keeps_mtime=True, mtime_precision=1e-6)


class KeepsBufferReferences(DictStore):
    async def start_multipart(self, key: str, size: int, part_size: int, mtime: float | None = None, *,
                              props: Any = None) -> DictUpload:
        return UploadKeepingReferences(self, key, mtime)


class UploadKeepingReferences(DictUpload):
    async def put_part(self, number: int, offset: int, data: bytes) -> None:
        self.parts[number] = data  # a reference to the caller's buffer, which it reuses


@pytest.mark.unit
@pytest.mark.parametrize("store, case, says", [
    (ListsOutOfOrder, "lists_every_key_once_in_utf8_order_page_by_page", ""),
    (ClaimsReadInto, "declares_its_features", ""),
    (HidesItsWrites, "put_read_back_and_replace", "declares no write but is a Writer"),
    (KeepsBufferReferences, "multipart_upload_in_any_order", ""),
], ids=["out-of-order", "claims-read-into", "hides-writes", "keeps-buffer-refs"])
def test_the_cases_fail_a_store_that_breaks_the_contract(store: type[DictStore], case: str, says: str) -> None:
    """Each broken variant of the dict store fails its case with AssertionError (an undeclared
    capability the store has anyway is a failure too, not a skip)."""
    harness = DictHarness(store)
    try:
        with pytest.raises(AssertionError, match=says or None):
            run_case(harness, CASES[case])
    finally:
        harness.cleanup()


# ------------------------------------------------------------------------------------ the module's cost


@pytest.mark.unit
def test_the_contract_module_imports_without_pytest() -> None:
    """A store's tests may use another runner: s3bulk.testing must not need pytest."""
    code = ("import sys; sys.modules['pytest'] = None; import s3bulk.testing as t; "
            "assert 'pytest' not in {m.split('.')[0] for m in sys.modules if sys.modules[m] is not None}; "
            "print(len(t.CASES))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(CASES) >= 16


def _imported(path: Path, package: Path) -> set[str]:
    """Every module the file imports, anywhere in it (imports inside functions count), relative
    imports resolved."""
    here = list(path.relative_to(package.parent).parts[:-1])  # the package a relative import starts from
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[:len(here) - node.level + 1] if node.level else [])
            mod = ".".join(p for p in (base, node.module or "") if p)
            names.add(mod)
            names |= {f"{mod}.{a.name}" for a in node.names}
    return names


@pytest.mark.unit
def test_the_tool_never_imports_the_contract_module() -> None:
    """The cases are for store authors' tests: no module of the tool imports them, so they cost
    a command nothing."""
    package = Path(__file__).resolve().parent.parent / "s3bulk"
    importers = [str(p.relative_to(package)) for p in package.rglob("*.py")
                 if "testing" not in p.relative_to(package).parts
                 and any(n == "s3bulk.testing" or n.startswith("s3bulk.testing.") for n in _imported(p, package))]
    assert importers == []
