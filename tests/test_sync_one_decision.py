"""A sync decides each object once (engine/run/worker.py _sort_now / _sort_later): the request-free
look (Comparator.differs_now: sizes, times, a download's mark, one getxattr for a file) is made
once an object, and what it leaves open is asked once (differs_later), never decided again."""

from __future__ import annotations

import pytest

from s3bulk.engine.sync.march import Comparator
from test_engine_memory import _sync_fixture, run_sync

pytestmark = pytest.mark.unit


@pytest.fixture
def buckets(memory_buckets):
    return memory_buckets


def _counting(monkeypatch, now_answer, later_answer) -> dict[str, list[str]]:
    asked: dict[str, list[str]] = {"now": [], "later": []}

    def differs_now(self, s, d):
        asked["now"].append(s.key)
        return now_answer(s)

    async def differs_later(self, s, d):
        asked["later"].append(s.key)
        return later_answer(s)

    monkeypatch.setattr(Comparator, "differs_now", differs_now)
    monkeypatch.setattr(Comparator, "differs_later", differs_later)
    return asked


def test_an_object_the_request_free_look_cannot_settle_is_looked_at_once_and_asked_once(buckets, monkeypatch):
    """A file without its mark: differs_now says None. Before, the worker's _sorted_now asked
    differs_now, then _copy_if_different's differs() asked it again (a second getxattr)."""
    asked = _counting(monkeypatch, lambda s: None, lambda s: s.key == "newer")
    s, sb, d, db = _sync_fixture(buckets)
    summary = run_sync(f"memory://{s}/", f"memory://{d}/")
    assert summary.ok
    both = sorted(["same", "resized", "newer", "older"])  # "missing": DST lacks it, nothing to compare
    assert sorted(asked["now"]) == both and sorted(asked["later"]) == both
    c = summary.counters
    assert (c.done, c.skipped) == (2, 3)  # newer (asked: differs) and missing copied
    assert db.contents()["newer"] == b"abcd" and db.contents()["resized"] == b"short"


def test_what_the_request_free_look_settles_is_never_asked(buckets, monkeypatch):
    asked = _counting(monkeypatch, lambda s: s.key in ("resized", "newer"), lambda s: True)
    s, sb, d, db = _sync_fixture(buckets)
    summary = run_sync(f"memory://{s}/", f"memory://{d}/")
    assert summary.ok and asked["later"] == []
    assert len(asked["now"]) == 4
    assert (summary.counters.done, summary.counters.skipped) == (3, 2)
