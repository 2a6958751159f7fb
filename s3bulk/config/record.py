"""Record: the base of a frozen, slotted record class whose methods are written once, here (in
config, the lowest layer that both cli/groups.py and engine/messages.py import, and a light one).

Why not @dataclass(frozen=True, slots=True): dataclasses writes each class's __init__, __repr__,
__eq__, __hash__, __setattr__ and __delattr__ as source text and compiles it when the class is
created, ~0.5 ms a class, and with slots=True builds the class twice. At ~65 classes that was a
quarter of the CPU of a one-object copy's start-up (its imports). A Record subclass names its
fields in __slots__ and writes its own __init__ (with `_set`, as a frozen dataclass's does); the
rest is these generic methods, which behave as the dataclass's: equal when of the same class with
equal fields, a hash of the fields, `Name(field=value, ...)` as repr, FrozenInstanceError on
assignment, and pickling by the fields (the records cross process boundaries).
"""

from __future__ import annotations

from typing import Any, NoReturn, Self

__all__ = ["Record", "set_field"]

set_field = object.__setattr__
"""What a Record's __init__ sets its fields with (its own __setattr__ refuses)."""


def _frozen(name: str, verb: str) -> NoReturn:
    from dataclasses import FrozenInstanceError  # only here, on a bug's path

    raise FrozenInstanceError(f"cannot {verb} field {name!r}")


class Record:
    """Frozen and slotted; its fields are the class's __slots__, in order (see the module's doc)."""

    __slots__ = ()

    def _fields(self) -> tuple[Any, ...]:
        names: tuple[str, ...] = self.__slots__
        return tuple(getattr(self, name) for name in names)

    def as_dict(self) -> dict[str, Any]:
        """The fields by name (dataclasses.asdict's job, without its deep copy: nothing here nests)."""
        names: tuple[str, ...] = self.__slots__
        return {name: getattr(self, name) for name in names}

    def replaced(self, **changes: Any) -> Self:
        """A copy with these fields changed: dataclasses.replace's job."""
        fields = self.as_dict()
        fields.update(changes)
        return type(self)(**fields)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record) and other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        names: tuple[str, ...] = self.__slots__
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        _frozen(name, "assign to")

    def __delattr__(self, name: str) -> None:
        _frozen(name, "delete")

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), self._fields()
