"""s3bulk/quick_dataclass.py: its classes behave as dataclasses' own (repr, eq, hash, frozen,
pickling, replace/asdict/fields), for the shapes the package uses, side by side with the same
class made by dataclasses.dataclass."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import field
from typing import Any

import pytest

from s3bulk.quick_dataclass import dataclass as quick

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def pair(decorate_kw: dict[str, Any]) -> tuple[type, type]:
    """The same class body made by dataclasses.dataclass and by quick, with these parameters."""
    made = []
    for dec in (dataclasses.dataclass, quick):
        class Point:
            """A point."""

            x: int
            y: Any = None
            tags: list[str] = field(default_factory=list)
            hidden: int = field(default=0, repr=False, compare=False)

        made.append(dec(**decorate_kw)(Point))
    return made[0], made[1]


@pytest.mark.parametrize("kw", [{}, {"frozen": True}, {"frozen": True, "slots": True}, {"slots": True}])
def test_same_behaviour_as_dataclasses(kw):
    ref, new = pair(kw)
    assert dataclasses.is_dataclass(new)
    assert [f.name for f in dataclasses.fields(new)] == [f.name for f in dataclasses.fields(ref)]
    a, b = new(1, "y", ["t"], hidden=5), new(1, "y", ["t"], hidden=6)
    r = ref(1, "y", ["t"], hidden=5)
    assert repr(a) == repr(r).replace(ref.__qualname__, new.__qualname__)
    assert a == b and not (a != b)  # hidden is not compared
    assert a != new(2) and a != r  # another class is never equal, not even one of the same shape
    assert (a == 1) is False
    nan = float("nan")
    assert (new(nan) == new(nan)) == (ref(nan) == ref(nan)) is True  # tuples: identity first, as dataclasses'
    assert dataclasses.asdict(a) == dataclasses.asdict(r)
    assert dataclasses.replace(a, x=3) == new(3, "y", ["t"])
    assert new.__match_args__ == ref.__match_args__
    assert new.__dataclass_params__.repr and new.__dataclass_params__.eq
    assert new.__dataclass_params__.frozen == ref.__dataclass_params__.frozen
    if kw.get("frozen"):
        assert hash(new(1, "y", ())) == hash(new(1, "y", (), hidden=9)) == hash(ref(1, "y", ()))
        with pytest.raises(dataclasses.FrozenInstanceError):
            a.x = 2
        with pytest.raises(dataclasses.FrozenInstanceError):
            del a.x
    else:
        assert new.__hash__ is None and ref.__hash__ is None
        a.x = 7
        assert a.x == 7


def test_recursive_repr_and_inheritance():
    @quick(frozen=True, slots=True)
    class Base:
        """A base."""

        a: int
        b: list[Any] = field(default_factory=list)

    @quick(frozen=True, slots=True)
    class Child(Base):
        """A child."""

        c: str = "c"

    loop = Base(1)
    loop.b.append(loop)
    assert repr(loop) == "test_recursive_repr_and_inheritance.<locals>.Base(a=1, b=[...])"
    assert Child(1, [], "x") != Base(1, [])
    assert Child(1, [], "x") == Child(1, [], "x")
    assert repr(Child(2)).endswith("Child(a=2, b=[], c='c')")


@quick(frozen=True, slots=True)
class Pickled:
    """Importable by name: pickling finds it."""

    name: str
    size: int = 0


def test_pickles_as_dataclasses_do():
    one = Pickled("k", 3)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(one, protocol)) == one


def test_own_methods_and_order_go_to_dataclasses():
    @quick(order=True)
    class Ordered:
        """Ordered."""

        n: int

    assert Ordered(1) < Ordered(2)

    @quick
    class OwnRepr:
        """Writes its own repr."""

        n: int

        def __repr__(self) -> str:
            return "own"

    assert repr(OwnRepr(1)) == "own"
    assert OwnRepr(1) == OwnRepr(1)
