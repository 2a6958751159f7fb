"""Split points remembered from the previous run of a source (engine/listing/hints.py), on the in-memory
store: a run that lists to the end leaves a thinned sample of where its pages ended; the next run
of the same source starts from units cut there, and copies every key exactly once even when the
hints are stale (keys added and removed since)."""

from __future__ import annotations

import asyncio
import json
import os
import uuid

import pytest

from s3bulk.engine.listing import hints
from s3bulk.engine.plan import TransferOptions
from s3bulk.engine.job import Job
from s3bulk.engine.planner import build_plan
from s3bulk.engine.run.launch import run_plan
from s3bulk.stores import memory
from s3bulk.config.urls import parse_location

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

OPTS = TransferOptions(workers=1, concurrency=8, page_size=20)


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("S3BULK_HINTS", raising=False)
    names: list[str] = []

    def make() -> tuple[str, memory.MemoryBucket]:
        names.append(f"h-{uuid.uuid4().hex[:10]}")
        return names[-1], memory.bucket(names[-1])

    yield make
    for n in names:
        memory.drop(n)


def copy(src: str, dst: str):
    return run_plan(asyncio.run(build_plan(Job("copy", src, dst, options=OPTS))))


def test_a_finished_run_leaves_hints_and_the_next_run_starts_from_them(state):
    (s, sb), (d1, db1), (d2, db2) = state(), state(), state()
    for i in range(1500):
        sb.put(f"p/{i:05d}", b"x")
    first = copy(f"memory://{s}/p/", f"memory://{d1}/")
    assert first.counters.done == 1500
    path = hints.hints_path(parse_location(f"memory://{s}/p/"))
    keys = json.load(open(path))["keys"]
    assert len(keys) >= 10 and keys == sorted(keys) and all(k.startswith("p/") for k in keys)
    units = hints.start_units(parse_location(f"memory://{s}/p/"), 8)
    assert units is not None and len(units) == 8 and units[0].after is None and units[-1].until is None
    assert all(a.until == b.after for a, b in zip(units, units[1:]))  # contiguous: the whole key space

    # stale hints: keys removed inside hinted ranges, others added before, between and after them
    for i in range(0, 1500, 7):
        sb.remove(f"p/{i:05d}")
    for extra in ("p/!", "p/00000a", "p/00750-", "p/zzz", "p/\U0001F600"):
        sb.put(extra, b"y")
    sb.calls.clear()
    second = copy(f"memory://{s}/p/", f"memory://{d2}/")
    assert db2.contents() == sb.contents("p/")
    assert second.counters.done == len(sb.contents("p/"))


def test_no_hints_when_turned_off_or_unreadable(state, monkeypatch):
    (s, sb), (d, _) = state(), state()
    for i in range(100):
        sb.put(f"k{i:03d}", b"x")
    loc = parse_location(f"memory://{s}/")
    monkeypatch.setenv("S3BULK_HINTS", "0")
    copy(f"memory://{s}/", f"memory://{d}/")
    assert not os.path.exists(hints.hints_path(loc))
    monkeypatch.delenv("S3BULK_HINTS")
    os.makedirs(os.path.dirname(hints.hints_path(loc)), exist_ok=True)
    open(hints.hints_path(loc), "w").write("{not json")
    assert hints.start_units(loc, 8) is None
    assert copy(f"memory://{s}/", f"memory://{d}/").counters.done == 100  # and it still runs


def test_boundary_sample_stays_bounded_and_spread():
    sample = hints.BoundarySample(keep=16)
    for i in range(10_000):
        sample.add(f"{i:06d}")
    keys = sample.sample()
    assert 16 <= len(keys) < 32
    assert keys[0] < "001000" and keys[-1] > "009000"  # spread over the whole range


def test_ls_leaves_hints_and_lists_in_order_from_them(state):
    from s3bulk.api import ls

    s, sb = state()
    keys = [f"d/{i:04d}" for i in range(900)] + ["d/\U0001F600", "d/é/x"]
    for k in keys:
        sb.put(k, b"x")
    url = f"memory://{s}/d/"
    assert [o.key for o in ls(url, page_size=25)] == sorted(keys)
    assert os.path.exists(hints.hints_path(parse_location(url)))
    for i in range(0, 900, 5):  # stale hints
        sb.remove(f"d/{i:04d}")
    sb.put("d/0450a", b"y")
    want = sorted(k for k in sb.contents("d/"))
    assert [o.key[len("d/"):] for o in ls(url, page_size=25)] == want
    assert sorted(o.key[len("d/"):] for o in ls(url, page_size=25, ordered=False)) == want
