"""--include / --exclude with aws-cli's semantics: everything is included to begin with, each
filter in the order given decides for the keys its glob matches, and the last match wins. Globs
match the key relative to SRC (or DST), and `*` matches across "/" as it does in aws-cli."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import translate
import re


@dataclass(frozen=True, slots=True)
class Filters:
    rules: tuple[tuple[bool, str], ...] = ()  # (include?, glob)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def compiled(self) -> "CompiledFilters":
        return CompiledFilters(self)


class CompiledFilters:
    __slots__ = ("rules",)

    def __init__(self, filters: Filters) -> None:
        self.rules = [(include, re.compile(translate(glob)).match) for include, glob in filters.rules]

    def allows(self, rel_key: str) -> bool:
        allowed = True
        for include, match in self.rules:
            if match(rel_key):
                allowed = include
        return allowed
