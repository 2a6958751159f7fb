"""The standard library's `inspect` imported on its first use, not at start-up: ~10 ms a run.

Why: `dataclasses` and `asyncio` import `inspect` (which imports dis, ast, tokenize, linecache...)
but a one-object copy never reads from it: dataclasses reads it only to write a docstring for a
class that has none (every dataclass s3bulk creates at start-up has one), asyncio only in debug
mode, a repr or an odd awaitable. `defer()` puts a stand-in in sys.modules; the first attribute
read from it (`inspect.signature`, `from inspect import ...`) imports the real module, puts that in
sys.modules, and hands it to every module that holds the stand-in, so from then on all is as
without it. (importlib.util.LazyLoader does not serve: on 3.11 a second `import inspect` of a lazy
module reads its __spec__, which loads it.) Only the CLI's and the Lambda handler's entries call
it: `import s3bulk` by a library user leaves that process's modules alone.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any


class _Inspect(ModuleType):
    """`inspect` until something reads from it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # importlib's and copy's probes (__path__, __file__...): not a use
            raise AttributeError(name)
        real = _load(self)
        return getattr(real, name)


def _load(stand_in: ModuleType) -> ModuleType:
    import importlib

    if sys.modules.get("inspect") is stand_in:
        del sys.modules["inspect"]
    real = importlib.import_module("inspect")
    for module in list(sys.modules.values()):  # once: dataclasses, asyncio.coroutines, tasks...
        if getattr(module, "inspect", None) is stand_in:
            setattr(module, "inspect", real)
    return real


def defer() -> None:
    """Put the stand-in for `inspect` in sys.modules; nothing when `inspect` is imported already."""
    if "inspect" not in sys.modules:
        sys.modules["inspect"] = _Inspect("inspect")
