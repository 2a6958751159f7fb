"""Human sizes both ways: "16MiB" -> 16777216 for options, 16777216 -> "16.0 MiB" for output."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
          "t": 1000**4, "tb": 1000**4, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}


if TYPE_CHECKING:
    class Size:
        """A size field of an options dataclass as a type checker sees it: given as bytes or as a
        string such as "16MiB", read as bytes (the dataclass's `__post_init__` parses it). Only a
        type checker sees this descriptor: at run time the field is a plain slot holding an int, so
        reading it costs nothing more."""

        def __get__(self, instance: object, owner: Any = None) -> int: ...
        def __set__(self, instance: object, value: int | str) -> None: ...

    def size_field(default: int) -> Size: ...
else:
    def size_field(default: int) -> int:
        """A size field's default (see `Size`): the plain int at run time."""
        return default


def parse_size(text: str, what: str = "size") -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise UsageError(f"invalid {what} {text!r} (examples: 8MiB, 64MB, 1GiB, 1048576)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def human_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str | float, what: str = "duration") -> float:
    """Seconds from "90", "90s", "30m", "6h", "1d" or "1h30m" (a number alone is seconds)."""
    s = str(text).strip().lower()
    parts = re.findall(r"(\d+(?:\.\d+)?)([smhd]?)", s)
    if not s or not parts or "".join(n + u for n, u in parts) != s or (len(parts) > 1 and not all(u for _, u in parts)):
        raise UsageError(f"invalid {what} {text!r} (examples: 90, 90s, 30m, 6h, 1d, 1h30m)")
    return sum(float(n) * _SECONDS[u] for n, u in parts)
