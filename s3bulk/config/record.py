"""Record: the base of a frozen, slotted record class whose methods are written once, here (in
config, the lowest layer that both cli/groups.py and engine/messages.py import, and a light one).

Why not @dataclass(frozen=True, slots=True): dataclasses writes each class's __init__, __repr__,
__eq__, __hash__, __setattr__ and __delattr__ as source text and compiles it when the class is
created, ~0.5 ms a class, and with slots=True builds the class twice. At ~65 classes that was a
quarter of the CPU of a one-object copy's start-up (its imports). A Record subclass declares its
fields as a dataclass does (annotations, defaults after them); the metaclass turns them into
__slots__ and a table of defaults, compiling nothing, and type checkers read the class as a
dataclass (PEP 681's dataclass_transform) so its constructor is checked. The methods are these
generic ones, which behave as the dataclass's: keyword or positional fields with their defaults,
equal when of the same class with equal fields, a hash of the fields, `Name(field=value, ...)` as
repr, FrozenInstanceError on assignment, and pickling by the fields (the records cross process
boundaries). Constructing one costs a loop over its fields: records are made a few a page of a
run, not a key.
"""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn, Self, dataclass_transform

__all__ = ["Record"]

_set = object.__setattr__  # what __init__ sets the fields with (a Record's own __setattr__ refuses)


def _frozen(name: str, verb: str) -> NoReturn:
    from dataclasses import FrozenInstanceError  # only here, on a bug's path

    raise FrozenInstanceError(f"cannot {verb} field {name!r}")


@dataclass_transform()
class _Fields(type):
    """Makes a Record subclass's annotated fields its __slots__, in order, and their default values
    its `_defaults` (class attributes would clash with the slots)."""

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any], **kw: Any) -> _Fields:
        names = tuple(ns.get("__annotations__", {})) if bases else ()  # Record itself has none
        ns["__slots__"] = names
        ns["_defaults"] = {n: ns.pop(n) for n in names if n in ns}
        return super().__new__(mcls, name, bases, ns, **kw)


class Record(metaclass=_Fields):
    """Frozen and slotted; its fields are the class's __slots__, in order (see the module's doc)."""

    __slots__: ClassVar[tuple[str, ...]]  # the fields, in order (set by the metaclass)
    _defaults: ClassVar[dict[str, Any]]  # the fields' defaults (set by the metaclass)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names: tuple[str, ...] = self.__slots__
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes {len(names)} fields, {len(args)} given")
        for name, value in zip(names, args):
            _set(self, name, value)
        defaults = self._defaults
        for name in names[len(args):]:
            if name in kwargs:
                _set(self, name, kwargs.pop(name))
            elif name in defaults:
                _set(self, name, defaults[name])
            else:
                raise TypeError(f"{type(self).__name__}() is missing its field {name!r}")
        if kwargs:
            raise TypeError(f"{type(self).__name__}() has no field {next(iter(kwargs))!r}")

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
