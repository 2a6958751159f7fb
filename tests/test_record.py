"""config/record.py: a Record behaves as the frozen, slotted dataclass it replaced (equality, hash,
repr, refused assignment, pickling), and a worker's messages are Records."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from s3bulk.engine import messages
from s3bulk.config.record import Record

pytestmark = pytest.mark.unit


@dataclasses.dataclass(frozen=True, slots=True)
class _AsDataclass:
    wid: int
    message: str
    exit_code: int


def test_a_record_behaves_as_its_dataclass() -> None:
    rec, dc = messages.Fatal(1, "boom", 3), _AsDataclass(1, "boom", 3)
    assert repr(rec) == repr(dc).replace("_AsDataclass", "Fatal")
    assert rec == messages.Fatal(wid=1, message="boom", exit_code=3) and rec != messages.Fatal(1, "boom", 4)
    assert rec != dc and hash(rec) == hash(messages.Fatal(1, "boom", 3))
    for attempt in (lambda: setattr(rec, "wid", 2), lambda: delattr(rec, "wid")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            attempt()
    with pytest.raises(AttributeError):
        rec.other = 1  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(rec)) == rec
    assert rec.replaced(exit_code=4) == messages.Fatal(1, "boom", 4) and rec.exit_code == 3


def test_defaults_and_every_message_pickle() -> None:
    done = messages.UnitDone(0, None, None, 1, 2, 0)  # type: ignore[arg-type]
    assert done.object_log is None
    assert messages.Deletes(0, [("k", 1)]).dst_seen == 0
    records = [c for c in vars(messages).values() if isinstance(c, type) and issubclass(c, Record) and c is not Record]
    assert len(records) == 11
    for cls in records:
        values = [object.__class__.__name__] * len(cls.__slots__)
        assert pickle.loads(pickle.dumps(cls(*values))) == cls(*values)
