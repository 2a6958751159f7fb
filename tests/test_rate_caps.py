"""--max-rps and --max-bandwidth hold for the whole run, however the work is spread over the workers:
every worker takes its turns on one schedule per store, kept in the run's shared file. Checked on the
schedule itself (the times each request may go at), not on a clock, so a busy machine cannot fail it."""

from __future__ import annotations

import os

import pytest

from s3bulk.stores.resilient import Limiter, ResilienceOptions, Stats, shared_name

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def limiter(name: str, **opts) -> Limiter:
    return Limiter(ResilienceOptions(workers=2, shared_name=name, **opts), Stats())


@pytest.mark.parametrize("cap", ["rps", "bandwidth"])
def test_one_schedule_for_all_workers(cap):
    name = shared_name(f"{os.getpid()}-test-{cap}", "s3:bucket")
    a, b = limiter(name, max_rps=1.0, max_bandwidth=1.0), limiter(name, max_rps=1.0, max_bandwidth=1.0)
    which, cost = (2, 1.0) if cap == "rps" else (3, 1.0)
    try:
        # one worker alone gets the whole cap: one request (or byte) a second, not half of it
        alone = [a.shared.take_slot(which, cost) for _ in range(5)]
        assert [round(y - x, 6) for x, y in zip(alone, alone[1:])] == [1.0] * 4
        # two workers together share it: their turns interleave on one schedule, one a second in all
        both = sorted([a.shared.take_slot(which, cost) for _ in range(5)] + [b.shared.take_slot(which, cost) for _ in range(5)])
        assert both[0] == pytest.approx(alone[-1] + 1.0)
        assert [round(y - x, 6) for x, y in zip(both, both[1:])] == [1.0] * 9
    finally:
        a.close()
        b.close()


def test_without_a_shared_file_each_worker_takes_its_share():
    a = limiter("", max_rps=10.0)
    assert a._share() == 2
