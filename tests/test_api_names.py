"""The Python API's names: every operation has a synchronous form and an `*_async` twin named
alike, each with a typed result; the older names are gone (not advertised, not there); `import
s3bulk` stays cheap; the package is marked typed. Runs on the in-memory store (in-process)."""

from __future__ import annotations

import asyncio
import importlib.resources
import inspect
import io
import pathlib
import subprocess
import sys
import typing

import pytest

import s3bulk
from s3bulk import api
from s3bulk.engine.plan import TransferOptions

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

ONE = TransferOptions(workers=1, concurrency=4)
OPERATIONS = ["copy", "sync", "move", "check", "ls", "du", "rm", "upload_stream", "download_stream"]
OLD_NAMES = {"acopy": "copy_async", "async_sync": "sync_async", "alist": "ls_async", "mv": "move"}


@pytest.fixture
def two(two_memory_buckets):
    return two_memory_buckets  # conftest.py's


def test_every_operation_has_an_async_twin_and_every_public_name_resolves():
    for name in OPERATIONS:
        assert name in s3bulk.__all__ and f"{name}_async" in s3bulk.__all__, name
        assert not inspect.iscoroutinefunction(getattr(s3bulk, name)), name
        twin = getattr(s3bulk, f"{name}_async")
        assert twin.__name__ == f"{name}_async"
        if name != "ls":  # ls_async is an async iterator, not a coroutine
            assert inspect.iscoroutinefunction(twin), name
            assert inspect.signature(twin) == inspect.signature(getattr(s3bulk, name)), name
    for name in s3bulk.__all__:
        assert getattr(s3bulk, name) is not None, name
    for name in api.__all__:
        assert hasattr(api, name), name
    assert set(s3bulk.__all__) - {"errors"} <= set(api.__all__)
    assert not set(OLD_NAMES) & set(s3bulk.__all__), "the deprecated names are not advertised"
    assert set(s3bulk.__all__) <= set(dir(s3bulk))


def _mentions_any(hint: object) -> bool:
    return hint is typing.Any or any(_mentions_any(arg) for arg in typing.get_args(hint))


def test_no_public_function_returns_any():
    for name in api.__all__:
        fn = getattr(api, name)
        if inspect.isfunction(fn):
            returns = typing.get_type_hints(fn).get("return")
            assert returns is not None and not _mentions_any(returns), (name, returns)


def test_the_package_is_marked_typed():
    assert importlib.resources.files("s3bulk").joinpath("py.typed").is_file()


def test_import_stays_cheap():
    """`import s3bulk` loads none of its modules (nor rich, typer, aiobotocore, the process pool)
    until a name is used."""
    out = subprocess.run([sys.executable, "-c", "import s3bulk, sys; print(sorted(m for m in sys.modules if "
                          "m.startswith(('s3bulk.', 'rich', 'typer', 'aiobotocore', 'multiprocessing', 'asyncio'))))"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_the_async_twins_inside_a_running_loop(two, tmp_path):
    s, sb, d, db = two
    for i in range(6):
        sb.put(f"in/k{i}", bytes([i]) * (i + 1))

    async def main():
        copied = await s3bulk.copy_async(f"memory://{s}/in/", f"memory://{d}/a/", options=ONE)
        synced = await s3bulk.sync_async(f"memory://{s}/in/", f"memory://{d}/a/", options=ONE)
        checked = await s3bulk.check_async(f"memory://{s}/in/", f"memory://{d}/a/", options=ONE)
        listed = [o.key async for o in s3bulk.ls_async(f"memory://{d}/a/")]
        counted = await s3bulk.du_async(f"memory://{d}/a/")
        up = await s3bulk.upload_stream_async(io.BytesIO(b"streamed"), f"memory://{d}/s.bin", options=ONE)
        out = io.BytesIO()
        down = await s3bulk.download_stream_async(f"memory://{d}/s.bin", out, options=ONE)
        moved = await s3bulk.move_async(f"memory://{d}/a/", f"memory://{d}/b/", options=ONE)
        removed = await s3bulk.rm_async(f"memory://{d}/b/")
        return copied, synced, checked, listed, counted, up, out.getvalue(), down, moved, removed

    copied, synced, checked, listed, counted, up, data, down, moved, removed = asyncio.run(main())
    assert copied.ok and copied.counters.done == 6
    assert synced.counters.skipped == 6 and synced.counters.done == 0
    assert checked.identical and checked.identical_objects == 6
    assert listed == [f"a/k{i}" for i in range(6)]
    assert (counted.objects, counted.bytes) == (6, sum(range(1, 7)))
    assert (up.bytes, down.bytes, data) == (8, 8, b"streamed")
    assert moved.ok and moved.counters.done == 6
    assert removed.ok and removed.deleted == 6
    assert set(db.keys_after("", None)) == {"s.bin"}
