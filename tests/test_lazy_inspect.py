"""lazy_inspect: `inspect` is imported on its first use, and then is the real module everywhere;
engine/loop.plain_loop_for: one small object runs on asyncio's own loop (no uvloop import)."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

CHILD = """
import sys
from s3bulk import lazy_inspect
lazy_inspect.defer()
import dataclasses, asyncio

@dataclasses.dataclass(frozen=True)
class Documented:
    "has a docstring: dataclasses reads nothing of inspect"
    a: int

assert type(sys.modules["inspect"]).__name__ == "_Inspect", "read at import"
assert "dis" not in sys.modules

@dataclasses.dataclass
class Bare:
    a: int

assert Bare.__doc__ == "Bare(a: int)", Bare.__doc__  # the first use loads the real module
import inspect
assert type(inspect).__name__ == "module" and inspect.signature is not None
assert dataclasses.inspect is inspect and sys.modules["asyncio.coroutines"].inspect is inspect
from inspect import isfunction
assert isfunction(lambda: 0)
print("ok")
"""


def test_inspect_is_imported_on_first_use_then_is_the_real_module():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_defer_leaves_an_imported_inspect_alone():
    import inspect

    from s3bulk import lazy_inspect

    lazy_inspect.defer()
    assert sys.modules["inspect"] is inspect


def test_one_small_object_gets_asyncios_own_loop(tmp_path):
    from s3bulk.config.urls import Location
    from s3bulk.engine.loop import SMALL_RUN_BYTES, plain_loop_for
    from s3bulk.engine.plan import Found, KeyMap, Plan
    from s3bulk.model import ObjectInfo

    (tmp_path / "small").write_bytes(b"x")
    (tmp_path / "big").write_bytes(b"")
    with open(tmp_path / "big", "r+b") as f:
        f.truncate(SMALL_RUN_BYTES + 1)
    src = Location("local", str(tmp_path), "", str(tmp_path))
    dst = Location("memory", "b", "", "memory://b/")

    def plan(single: str | None, found: Found | None = None, source: Location = src) -> Plan:
        return Plan(src=source, dst=dst, keymap=KeyMap("", ""), single_key=single, found=found)

    assert plain_loop_for(plan("small"))
    assert not plain_loop_for(plan("big"))
    assert not plain_loop_for(plan("gone"))
    assert not plain_loop_for(plan(None))
    remote = Location("memory", "b", "", "memory://b/")
    small, big = (Found(ObjectInfo("k", n), None, 0, {}) for n in (100, SMALL_RUN_BYTES + 1))
    assert plain_loop_for(plan("k", small, remote))
    assert not plain_loop_for(plan("k", big, remote))
    assert not plain_loop_for(plan("k", None, remote))
