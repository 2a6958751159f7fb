"""`dataclass`, made with half the compiling: the same classes (`dataclasses.fields`, `replace`,
`asdict`, `is_dataclass`, pickling, `__match_args__`, the same __init__) with __repr__, __eq__ and
__hash__ written once, here, instead of compiled from source text for each class.

Why: `dataclasses.dataclass` writes each method of each class as source text and compiles it
when the class is created (on 3.11 one `exec` a method: __init__, __repr__, __eq__, __hash__,
and a frozen class's __setattr__ and __delattr__). ~40 dataclasses are created when a one-object
copy starts (model, engine/events, engine/plan...), ~30 ms of its ~120 ms of imports, ~70% of it
those compiles. The __init__ (its signature, defaults, default factories, __post_init__, the
errors of a wrong call) and a frozen class's __setattr__/__delattr__ (which that __init__ goes
around) are still dataclasses' own; __repr__, __eq__ and __hash__ are the generic ones below,
which behave as the generated ones do: the fields with repr=True as `QualName(f=value, ...)`
("..." for a recursive one), equal only to an instance of the very same class with equal fields
(compare=True, compared as tuples), and for a frozen class a hash of the hashed fields' tuple;
a class that is not frozen stays unhashable, as with eq=True. `__dataclass_params__` says what
was asked (repr, eq). A class that asks for order, unsafe_hash or writes its own __repr__,
__eq__ or __hash__ is handed to `dataclasses.dataclass` unchanged.

Modules import it as `dataclass` under `if not TYPE_CHECKING`, so type checkers read the real
decorator and check every class as a dataclass.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, Callable

__all__ = ["dataclass"]

_OWN = ("__repr__", "__eq__", "__hash__")


def dataclass(cls: Any = None, /, **params: Any) -> Any:
    """dataclasses.dataclass with the same parameters (see the module's doc for what differs: nothing seen)."""
    if cls is None:
        return lambda c: dataclass(c, **params)
    if (params.get("order") or params.get("unsafe_hash") or params.get("repr") is False
            or params.get("eq") is False or any(name in cls.__dict__ for name in _OWN)):
        return dataclasses.dataclass(cls, **params)
    made = dataclasses.dataclass(cls, **dict(params, repr=False, eq=False))
    fields = dataclasses.fields(made)
    made.__repr__ = _repr([f.name for f in fields if f.repr])
    compared = _values([f.name for f in fields if f.compare])
    made.__eq__ = _eq(compared)
    if params.get("frozen"):
        made.__hash__ = _hash(_values([f.name for f in fields if (f.compare if f.hash is None else f.hash)]))
    else:
        made.__hash__ = None  # as eq=True without frozen
    made.__dataclass_params__.repr = True
    made.__dataclass_params__.eq = True
    return made


def _values(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of these fields' values (attrgetter answers one name with the bare value)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _repr(names: list[str]) -> Callable[[Any], str]:
    @recursive_repr()
    def __repr__(self: Any) -> str:
        shown = ", ".join([f"{name}={getattr(self, name)!r}" for name in names])
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _eq(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__
