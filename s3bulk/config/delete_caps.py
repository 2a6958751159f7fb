"""--max-delete N|P% and --max-delete-size, checked once for sync, watch and rm.

A cap is all-or-nothing (as rclone's --max-delete is for its deferred deletes): a run that would delete
more than it allows deletes nothing and says how many it would have (errors.TooManyDeletes, exit 4).
"""

from __future__ import annotations

from ..errors import TooManyDeletes, UsageError
from .sizes import human_bytes

__all__ = ["check_caps", "max_delete_count", "parse_max_delete"]


def max_delete_count(spec: str | None, seen: int) -> int | None:
    """--max-delete N -> N; P% -> P percent of the `seen` objects (rounded down); None: no cap."""
    if spec is None:
        return None
    if spec.endswith("%"):
        return int(float(spec[:-1]) * seen / 100)
    return int(spec)


def parse_max_delete(spec: str | int | None) -> str | None:
    """--max-delete's value checked: a count (0 and up) or a percentage (0% to 100%)."""
    if spec is None:
        return None
    text = str(spec).strip()
    try:
        if text.endswith("%"):
            value = float(text[:-1])
            if not 0 <= value <= 100:
                raise ValueError
            return text
        if int(text) < 0:
            raise ValueError
        return str(int(text))
    except ValueError:
        raise UsageError(f"--max-delete must be a count (10) or a percentage of DST's objects (1%), not {spec!r}") \
            from None


def check_caps(what: str, count: int, nbytes: int, seen: int, max_delete: str | None,
               max_delete_size: int | None) -> None:
    """Raise TooManyDeletes when `count` deletes (`nbytes` in all, of `seen` objects) exceed a cap."""
    limit = max_delete_count(max_delete, seen)
    if limit is not None and count > limit:
        of = f" ({limit:,} of the {seen:,} objects seen at DST)" if max_delete and max_delete.endswith("%") else ""
        raise TooManyDeletes(f"{what} would delete {count:,} objects, more than --max-delete {max_delete} "
                             f"allows{of}; nothing deleted")
    if max_delete_size is not None and nbytes > max_delete_size:
        raise TooManyDeletes(f"{what} would delete {human_bytes(nbytes)} ({count:,} objects), more than "
                             f"--max-delete-size {human_bytes(max_delete_size)}; nothing deleted")
