"""Which keys a run touches: every filter of copy, sync, mv, rm, ls and du, compiled once into the
predicates the per-key loops call.

A key is kept only when every filter given keeps it (they compose by AND, each one independent):

- `rules`, --include / --exclude with aws-cli's semantics: everything is included to begin with,
  each filter in the order given decides for the keys its glob matches, and the last match wins;
- `include_from`, --include-from FILE: the key matches one of the file's globs (rclone's meaning:
  only these);
- `exclude_from`, --exclude-from FILE: the key matches none of the file's globs;
- `filter_rules`, --filter-from FILE: rclone's `+ glob` / `- glob` lines, the first that matches
  decides, a key no line matches is kept;
- `max_depth`: at most N "/"-separated levels below the source prefix (1: directly under it);
- `exclude_if_present`: a local directory holding a file of this name is left out, and all below it;
- `min_size` / `max_size`, `min_age` / `max_age`: the listing entry's size and time (rclone's
  semantics: --max-age 1d keeps what was modified within the last day).

Why AND rather than one ordered list as rclone has: --include / --exclude are last-match-wins and
rule files first-match-wins, so no single order could hold both; with AND each filter means what
it says alone, and a key some filter leaves out is never touched.

Globs match the key relative to SRC (or DST), `*` matches across "/" as in aws-cli; a rule file's
leading "/" (rclone's root anchor) is dropped, since every glob here is anchored at the root.

Two predicates, so that a filter not given costs nothing: `allows(rel_key)` checks the name rules
(the only call where no size or age rule is set), `keeps(entry, rel_key)` also the entry's size and
time; `select(entries, cut)` picks whichever the filters need. A size or time the listing does not
give (a list/get server's, a delete marker's) is not filtered on.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import field, replace
from fnmatch import translate
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, TypeVar

from ..errors import UsageError

if TYPE_CHECKING:
    from dataclasses import dataclass
    from .urls import Location
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ..quick_dataclass import dataclass

Age = tuple[bool, float]
"""An age limit: (True, seconds) is that long before the filters are compiled ("7d"), (False,
epoch seconds) a fixed time ("2026-11-01")."""


class Entry(Protocol):
    """What the filters read of a listing entry (ObjectInfo, ObjectVersion)."""

    @property
    def key(self) -> str: ...
    @property
    def size(self) -> int | None: ...
    @property
    def mtime(self) -> float | None: ...


E = TypeVar("E", bound=Entry)


@dataclass(frozen=True, slots=True)
class Filters:
    """A run's key filters as given (--include/--exclude and their files, sizes, ages, depth), before
    they are compiled for a listing."""

    rules: tuple[tuple[bool, str], ...] = ()  # (include?, glob), --include / --exclude in order given
    include_from: tuple[str, ...] = ()
    exclude_from: tuple[str, ...] = ()
    filter_rules: tuple[tuple[bool, str], ...] = ()  # (include?, glob), first match wins
    max_depth: int | None = None
    exclude_if_present: str | None = None
    min_size: int | None = None
    max_size: int | None = None
    min_age: Age | None = None
    max_age: Age | None = None
    # the local SRC directory --exclude-if-present looks in (set by `located`; not what the user asked)
    local_base: str | None = field(default=None, compare=False)

    def __bool__(self) -> bool:
        return bool(self.rules or self.include_from or self.exclude_from or self.filter_rules
                    or self.max_depth is not None or self.exclude_if_present is not None or self.by_entry)

    @property
    def by_entry(self) -> bool:
        """Whether a rule needs the listing entry (its size or time), not only the key."""
        return (self.min_size is not None or self.max_size is not None or self.min_age is not None
                or self.max_age is not None)

    def identity(self) -> Any:
        """What a journal records to tell two runs apart: the globs alone as before when only
        --include / --exclude are given (older journals still resume), else every filter."""
        rules = [list(r) for r in self.rules]
        if not (self.include_from or self.exclude_from or self.filter_rules or self.max_depth is not None
                or self.exclude_if_present is not None or self.by_entry):
            return rules
        return {"rules": rules, "include_from": list(self.include_from), "exclude_from": list(self.exclude_from),
                "filter_rules": [list(r) for r in self.filter_rules], "max_depth": self.max_depth,
                "exclude_if_present": self.exclude_if_present, "min_size": self.min_size,
                "max_size": self.max_size, "min_age": list(self.min_age) if self.min_age else None,
                "max_age": list(self.max_age) if self.max_age else None}

    def located(self, src: Location) -> Filters:
        """These filters for a run whose source is `src`: --exclude-if-present looks in a local
        SRC's directories, and is refused (UsageError) for any other kind of source."""
        if self.exclude_if_present is None:
            return self
        self.check_source(src)
        return replace(self, local_base=os.path.join(src.root, src.prefix) if src.prefix else src.root)

    def check_source(self, src: Location) -> None:
        """Refuse (UsageError) what no source of this kind can do, before any request is made."""
        if self.exclude_if_present is not None and not src.is_local:
            raise UsageError(f"--exclude-if-present needs a local source directory, not {src.raw}")

    def compiled(self, now: float | None = None) -> "CompiledFilters":
        """The predicates; ages are counted back from `now` (this moment unless given)."""
        return CompiledFilters(self, time.time() if now is None else now)


def _always(rel_key: str) -> bool:
    return True


def _any_of(globs: Sequence[str]) -> Callable[[str], Any]:
    """One regex for many globs: a match is one C call however many lines a rules file has."""
    return re.compile("|".join(f"(?:{translate(g)})" for g in globs)).match


class CompiledFilters:
    """`allows(rel_key)`: the name rules; `keeps(entry, rel_key)`: every rule; `by_entry`: whether
    keeps checks more than allows."""

    __slots__ = ("allows", "by_entry", "_min_size", "_max_size", "_newest", "_oldest")

    def __init__(self, filters: Filters, now: float) -> None:
        checks = [c for c in (_last_match(filters.rules), _matches(filters.include_from, True),
                              _matches(filters.exclude_from, False), _first_match(filters.filter_rules),
                              _depth(filters.max_depth), _marked_dirs(filters)) if c is not None]
        self.allows: Callable[[str], bool] = _all(checks)
        self.by_entry = filters.by_entry
        self._min_size = filters.min_size if filters.min_size is not None else 0
        self._max_size = filters.max_size if filters.max_size is not None else float("inf")
        # kept: an mtime in [_oldest, _newest]: --max-age bounds how old, --min-age how recent
        self._oldest = _cutoff(filters.max_age, now) if filters.max_age is not None else float("-inf")
        self._newest = _cutoff(filters.min_age, now) if filters.min_age is not None else float("inf")

    def keeps(self, entry: Entry, rel_key: str) -> bool:
        size = entry.size
        if size is not None and not self._min_size <= size <= self._max_size:
            return False
        mtime = entry.mtime
        if mtime is not None and not self._oldest <= mtime <= self._newest:
            return False
        return self.allows(rel_key)

    def select(self, entries: list[E], cut: int) -> list[E]:
        """The entries kept, each key taken relative from its `cut`th character."""
        if self.by_entry:
            keeps = self.keeps
            return [e for e in entries if keeps(e, e.key[cut:])]
        allows = self.allows
        return [e for e in entries if allows(e.key[cut:])]


def _cutoff(age: Age, now: float) -> float:
    relative, value = age
    return now - value if relative else value


def _all(checks: list[Callable[[str], bool]]) -> Callable[[str], bool]:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]

    def allows(rel_key: str) -> bool:
        for check in checks:
            if not check(rel_key):
                return False
        return True
    return allows


def _last_match(rules: tuple[tuple[bool, str], ...]) -> Callable[[str], bool] | None:
    if not rules:
        return None
    compiled = [(include, re.compile(translate(glob)).match) for include, glob in rules]

    def allows(rel_key: str) -> bool:
        allowed = True
        for include, match in compiled:
            if match(rel_key):
                allowed = include
        return allowed
    return allows


def _first_match(rules: tuple[tuple[bool, str], ...]) -> Callable[[str], bool] | None:
    if not rules:
        return None
    compiled = [(include, re.compile(translate(glob)).match) for include, glob in rules]

    def allows(rel_key: str) -> bool:
        for include, match in compiled:
            if match(rel_key):
                return include
        return True
    return allows


def _matches(globs: tuple[str, ...], wanted: bool) -> Callable[[str], bool] | None:
    if not globs:
        return None
    match = _any_of(globs)
    if wanted:
        return lambda rel_key: match(rel_key) is not None
    return lambda rel_key: match(rel_key) is None


def _depth(max_depth: int | None) -> Callable[[str], bool] | None:
    """A folder marker "a/b/" is the directory a/b: as deep as a file in a/."""
    if max_depth is None:
        return None
    return lambda rel_key: rel_key.count("/", 0, len(rel_key) - 1) < max_depth


def _marked_dirs(filters: Filters) -> Callable[[str], bool] | None:
    """--exclude-if-present: whether any directory on the key's path, SRC's own included, holds
    the marker file; one stat per directory, remembered for the run."""
    name, base = filters.exclude_if_present, filters.local_base
    if name is None:
        return None
    if base is None:
        raise UsageError("--exclude-if-present needs a local source directory")
    marked: dict[str, bool] = {}

    def is_marked(directory: str) -> bool:
        known = marked.get(directory)
        if known is None:
            parent = directory.rpartition("/")[0] if directory else None
            known = (parent is not None and is_marked(parent)) or \
                os.path.lexists(os.path.join(base, directory, name))
            marked[directory] = known
        return known

    def allows(rel_key: str) -> bool:
        # a folder marker "a/b/" is the directory a/b itself
        return not is_marked(rel_key[:-1] if rel_key.endswith("/") else rel_key.rpartition("/")[0])
    return allows
