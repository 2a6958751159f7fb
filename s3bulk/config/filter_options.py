"""The filter options as typed, read into `Filters`: sizes, ages, rule files. Shared by the command
line and the Python API, so a bad value is the same one-line UsageError (exit 2) from both.

Rule files (--include-from, --exclude-from, --filter-from) are read once, when the run starts: one
glob per line, blank lines and lines starting with "#" ignored; a --filter-from line is "+ GLOB"
or "- GLOB" as rclone writes them. What a file said is what the journal records, so a resume whose
file changed is refused as another run.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Optional, Sequence

from ..errors import UsageError
from .filters import Age, Filters
from .sizes import parse_size

_AGE_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "M": 30 * 86400,
              "y": 365 * 86400}
_AGE_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|M|y)")


def parse_age(text: str, option: str) -> Age:
    """rclone's ages: a duration back from now ("90m", "7d", "2w", "1h30m", "1.5d"; a number alone
    is seconds; M is 30 days, y 365) or a fixed time, ISO 8601 ("2026-11-01", "2026-11-01T12:00:00Z";
    no zone means UTC)."""
    s = text.strip()
    try:
        return True, float(s)
    except ValueError:
        pass
    parts = _AGE_PART.findall(s)
    if parts and "".join(n + u for n, u in parts) == s:
        return True, sum(float(n) * _AGE_UNITS[u] for n, u in parts)
    try:
        when = datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise UsageError(f"invalid {option} {text!r} (examples: 90m, 7d, 2w, 2026-11-01, "
                         "2026-11-01T12:00:00Z)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return False, when.timestamp()


def _lines(path: str, option: str) -> list[tuple[int, str]]:
    """(line number, text) of a rules file's rules: blank lines and # comments left out."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"{option} {path}: cannot read it ({why})") from None
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            out.append((number, line))
    return out


def _glob(text: str) -> str:
    """rclone anchors a glob starting with "/" at the root; here every glob is anchored so."""
    return text[1:] if text.startswith("/") else text


def read_globs(paths: Sequence[str], option: str) -> tuple[str, ...]:
    """Every glob of the files, in order."""
    return tuple(_glob(line) for path in paths for _, line in _lines(path, option))


def read_filter_rules(paths: Sequence[str]) -> tuple[tuple[bool, str], ...]:
    """(include?, glob) of each "+ GLOB" / "- GLOB" line, in order."""
    rules: list[tuple[bool, str]] = []
    for path in paths:
        for number, line in _lines(path, "--filter-from"):
            sign, _, glob = line.partition(" ")
            if sign not in ("+", "-") or not glob.strip():
                raise UsageError(f"--filter-from {path}:{number}: {line!r} is not a rule "
                                 "(write '+ GLOB' to keep or '- GLOB' to leave out)")
            rules.append((sign == "+", _glob(glob.strip())))
    return tuple(rules)


def build_filters(rules: Sequence[tuple[bool, str]] = (), *, include_from: Sequence[str] = (),
                  exclude_from: Sequence[str] = (), filter_from: Sequence[str] = (),
                  max_depth: Optional[int] = None, exclude_if_present: Optional[str] = None,
                  min_size: Optional[str | int] = None, max_size: Optional[str | int] = None,
                  min_age: Optional[str] = None, max_age: Optional[str] = None) -> Filters:
    """Filters from the options as typed (rule files read now); a UsageError names the first wrong one."""
    if max_depth is not None and max_depth < 1:
        raise UsageError(f"--max-depth must be 1 or more, not {max_depth}")
    if exclude_if_present is not None and (not exclude_if_present or "/" in exclude_if_present):
        raise UsageError(f"--exclude-if-present takes a file name, not {exclude_if_present!r}")

    def size(value: Optional[str | int], option: str) -> Optional[int]:
        if value is None or isinstance(value, int):
            return value
        return parse_size(value, option)

    return Filters(rules=tuple(rules), include_from=read_globs(include_from, "--include-from"),
                   exclude_from=read_globs(exclude_from, "--exclude-from"),
                   filter_rules=read_filter_rules(filter_from), max_depth=max_depth,
                   exclude_if_present=exclude_if_present,
                   min_size=size(min_size, "--min-size"), max_size=size(max_size, "--max-size"),
                   min_age=parse_age(min_age, "--min-age") if min_age is not None else None,
                   max_age=parse_age(max_age, "--max-age") if max_age is not None else None)
