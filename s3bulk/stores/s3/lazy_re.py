"""Regular expressions compiled the first time they are used, not when their module is imported.

Why: compiling the listing and XML patterns of stores/s3 took ~3 ms of every start-up, also of a
one-object copy or a Lambda cold start that never lists nor reads an XML answer. A `lazy(...)`
pattern stands where the compiled one stood (`_ENTRY.finditer(page)` unchanged): its first use
compiles it and keeps each method it hands out as an attribute of its own, so from the second use
on a lookup is a plain attribute read, as fast as the compiled pattern's own.
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast

__all__ = ["lazy"]


class _LazyPattern:
    """A stand-in for re.compile(source, flags), compiled on first use (see the module's doc)."""

    def __init__(self, source: str | bytes, flags: int) -> None:
        self._source = source
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        # only for what the instance does not hold yet: a method or attribute of the compiled pattern
        value = getattr(re.compile(self._source, self._flags), name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return f"lazy({self._source!r}, {self._flags})"


def lazy(source: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """re.compile(source, flags), compiled when first used; typed as the pattern it stands for."""
    return cast("re.Pattern[AnyStr]", _LazyPattern(source, flags))
