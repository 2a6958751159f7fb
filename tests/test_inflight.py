"""Transfers in flight grow while requests are slow (engine/run/inflight.py), within --max-memory, and an
explicit --concurrency N stays N.

Why a user relies on it: against a remote region (50 ms a request) 64 transfers a worker cap a copy of
small objects at ~1,300 objects/s while the CPU idles; against a nearby server more in flight only
costs memory; and someone who asks for -c 16 to spare a server must get 16."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

from s3bulk.engine.memory_budget import fit_to_memory
from s3bulk.engine.run.inflight import BUSY, QUEUED, STRIKES, InFlight
from s3bulk.engine.plan import AUTO_MAX_CONCURRENCY, MiB, TransferOptions

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import slow_s3  # noqa: E402


class Ticks:
    """A clock and a CPU counter the test moves: each look is TICK seconds of wall time later."""

    def __init__(self) -> None:
        self.now = 0.0
        self.cpu_used = 0.0

    def step(self, wall: float, busy: float) -> None:
        self.now += wall
        self.cpu_used += wall * busy


def _grower(start: int = 64, ceiling: int = 512) -> tuple[InFlight, Ticks]:
    t = Ticks()
    return InFlight(start, ceiling, cpu=lambda: t.cpu_used, clock=lambda: t.now), t


def _run(g: InFlight, t: Ticks, ticks: int, busy: float, rate_of, waiting: bool = True,
         room: int | None = None, mean: float = 0.05, shortest: float = 0.05) -> list[int]:
    """`ticks` looks, objects/s given by rate_of(target), transfers taking `mean` seconds on average
    and `shortest` at least; returns the targets after each."""
    done, seen = 0, []
    for _ in range(ticks):
        t.step(0.2, busy)
        done += int(rate_of(g.target) * 0.2)
        seen.append(g.tick(done, waiting, room, mean, shortest))
    return seen


@pytest.mark.unit
def test_grows_to_the_ceiling_while_latency_bound():
    g, t = _grower()
    seen = _run(g, t, 10, busy=0.1, rate_of=lambda n: n / 0.05)  # 50 ms a request: rate follows in flight
    assert seen[-1] == 512 and g.fixed
    assert seen == sorted(seen)  # never shrinks


@pytest.mark.unit
def test_does_not_grow_when_the_cpu_is_the_limit():
    g, t = _grower()
    assert _run(g, t, 10, busy=BUSY + 0.05, rate_of=lambda n: 5000) == [64] * 10


@pytest.mark.unit
def test_does_not_grow_when_requests_queue_at_the_server():
    """A server on the same machine: ~1 ms at best, 30 ms on average with 64 in flight."""
    g, t = _grower()
    assert _run(g, t, 10, busy=0.1, rate_of=lambda n: 2000, mean=0.030, shortest=0.030 / (QUEUED + 1)) == [64] * 10


@pytest.mark.unit
def test_does_not_grow_when_nothing_waits():
    g, t = _grower()
    assert _run(g, t, 10, busy=0.1, rate_of=lambda n: 1000, waiting=False) == [64] * 10


@pytest.mark.unit
def test_stops_when_growth_does_not_pay():
    """A server that is the bottleneck: objects/s stay flat whatever is in flight."""
    g, t = _grower()
    seen = _run(g, t, 20, busy=0.1, rate_of=lambda n: 1000)
    assert g.fixed and seen[-1] == seen[-2] and len(set(seen)) == STRIKES + 1  # 64 and the growths that failed
    assert seen[-1] < 512


@pytest.mark.unit
def test_never_above_what_the_request_limiter_allows():
    g, t = _grower()
    assert max(_run(g, t, 10, busy=0.1, rate_of=lambda n: n / 0.05, room=100)) == 100


@pytest.mark.unit
def test_max_memory_bounds_the_growth():
    opts = TransferOptions()
    assert opts.concurrency_ceiling() == AUTO_MAX_CONCURRENCY
    assert TransferOptions(concurrency=16, max_concurrency=16).concurrency_ceiling() == 16
    assert TransferOptions(adaptive=False).concurrency_ceiling() == 64
    roomy = fit_to_memory(opts, 128 * MiB, "s3://b/", "/tmp/x")  # 32 MiB a worker beside the program
    assert roomy.workers == 1 and roomy.concurrency_ceiling() == 512 and roomy.pages_ahead == 2
    tight = fit_to_memory(opts, 110 * MiB, "s3://b/", "/tmp/x")  # 14 MiB, a quarter of it for transfers
    assert tight.concurrency == 56 and tight.concurrency_ceiling() == 224 and tight.pages_ahead == 1
    fixed = fit_to_memory(TransferOptions(concurrency=16, max_concurrency=16), 128 * MiB, "s3://b/", "/tmp/x")
    assert fixed.concurrency_ceiling() == 16


@pytest.fixture
def slow():
    srv = slow_s3.start_thread("hashed", keys=3000, size=100, delay_ms=50)
    yield srv
    srv.stop()


def _peak_in_flight(url: str) -> int:
    with urllib.request.urlopen(f"{url}/_slow_s3/stats?reset=1") as r:
        return json.load(r)["peak_inflight"]


def _copy(cli, url: str, dst: Path, *extra: str):
    run = cli("copy", "s3://b/", f"{dst}/", "--endpoint-url", url, "--json", "--no-journal", "--workers", "1",
              *extra, env={"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"})
    assert run.code == 0, run
    assert run.summary["copied"] == 3000 and len(list(dst.rglob("obj-*"))) == 3000
    return run.summary


def test_slow_requests_get_more_transfers_in_flight(cli, slow, tmp_path):
    _peak_in_flight(slow.url)
    summary = _copy(cli, slow.url, tmp_path / "auto")
    peak = _peak_in_flight(slow.url)
    # a fixed 64 transfers and 2 listings never have more than 66 requests at the server
    assert peak > 66 and summary["final_concurrency"] > 64 + 8, (peak, summary)


def test_explicit_concurrency_is_exact(cli, slow, tmp_path):
    _peak_in_flight(slow.url)
    summary = _copy(cli, slow.url, tmp_path / "fixed", "-c", "100")  # 1.5 s at 50 ms: room to grow
    peak = _peak_in_flight(slow.url)
    assert peak <= 100 + 2 and summary["final_concurrency"] <= 100 + 8, (peak, summary)
