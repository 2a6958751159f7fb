"""How many transfers a worker keeps in flight: more while requests are slow, not while CPU is short.

Why: a worker starts with `concurrency` transfers (64). Against a remote region (50-100 ms a request)
and small objects that caps a worker at ~1,300 objects/s while its core is mostly idle: the time goes
to waiting for answers. Against a nearby server (LocalStack, versitygw) the same 64 already keep the
CPU (the client's or the server's) busy, and more would only cost memory and connections. So the
count grows only on evidence, checked once a tick (TICK seconds):

- work was waiting (objects queued while every transfer was busy): more could start at once;
- the worker's thread spent less than BUSY of the tick on the CPU: latency, not CPU, is the limit;
- transfers took no more than QUEUED times the shortest one seen (the round trip, as BBR's min RTT):
  their time goes to the distance, not to waiting in a busy server's queue. Against a server on the
  same machine (versitygw: ~1 ms at best, ~30 ms on average with 64 in flight) nothing grows:
  more in flight would only wait longer in its queue, and cost connections;
- the last growth paid: objects/s rose by RISE at least (a server that is the bottleneck, or that
  slows down with more in flight, stops the growth for good after STRIKES growths that did not);
- the request limiter (AIMD on SlowDown, stores/resilient.py) has room: throttling is its business.

It grows by half (twice when the thread used less than half of BUSY and the last growth paid
PAID_WELL; the first step is always by half) up to the ceiling (TransferOptions.concurrency_ceiling:
512 by default, less under --max-memory: engine/memory_budget.py), and never shrinks: transfers beyond what the
server takes wait in the request limiter, which halves what is in flight on SlowDown.
"""

from __future__ import annotations

import time
from typing import Callable

TICK = 0.2       # seconds between two looks
BUSY = 0.7       # share of a tick on the CPU above which the worker counts as CPU-bound
RISE = 1.1       # objects/s after a growth over before it, for the growth to count as paid
STRIKES = 2      # growths that did not pay before the count is left as it is (one is noise on a busy machine)
PAID_WELL = 1.3  # a growth that raised objects/s this much may be followed by a doubling
QUEUED = 4.0     # mean transfer time over the shortest seen above which requests queue at the server
WARM = 3         # ticks before the first growth: the first burst of requests queues at any server, so
                 # the shortest transfer seen is a round trip only after a few hundred of them


class InFlight:
    """The target number of transfers in flight for one worker (its consumer tasks)."""

    __slots__ = ("target", "ceiling", "_cpu", "_clock", "_last_cpu", "_last_at", "_last_done", "_before",
                 "_strikes", "_ticks", "_paid")

    def __init__(self, start: int, ceiling: int, *, cpu: Callable[[], float] = time.thread_time,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.target = start
        self.ceiling = max(start, ceiling)
        self._cpu, self._clock = cpu, clock
        self._last_cpu, self._last_at, self._last_done = cpu(), clock(), 0
        self._before: float | None = None  # objects/s in the tick before the last growth (None: none yet)
        self._strikes = 0
        self._ticks = 0
        self._paid = 0.0  # how much the last growth raised objects/s (0: no growth yet)

    @property
    def fixed(self) -> bool:
        """Nothing left to decide: at the ceiling, or growth stopped paying."""
        return self.target >= self.ceiling or self._strikes >= STRIKES

    def tick(self, done: int, waiting: bool, room: int | None = None, mean: float = 0.0,
             shortest: float = 0.0) -> int:
        """One look: `done` objects finished so far (a running total), `waiting` whether objects were
        queued with every transfer busy, `room` what the request limiter lets this worker have in
        flight (None: no limit), `mean` the seconds a transfer took on average over the tick and
        `shortest` the least any took so far. Returns the new target (never lower than before)."""
        now, cpu = self._clock(), self._cpu()
        wall = max(1e-6, now - self._last_at)
        share = (cpu - self._last_cpu) / wall
        rate = (done - self._last_done) / wall
        self._last_cpu, self._last_at, self._last_done = cpu, now, done
        self._ticks += 1
        if self.fixed:
            return self.target
        if not waiting:  # the listing did not keep up: nothing to learn about transfers in flight, and
            self._before = None  # the next tick's objects/s starts from an empty queue: a growth unjudged
            return self.target
        if self._before is not None:  # the first busy tick after a growth: did it pay?
            self._paid = rate / max(1e-9, self._before)
            if self._paid < RISE:
                self._strikes += 1
            self._before = None
            if self._strikes >= STRIKES:
                return self.target
        if self._ticks < WARM or share >= BUSY:  # start-up: the listing, and a first burst that queues
            return self.target
        if shortest > 0 and mean > QUEUED * shortest:  # queued at the server (or behind our CPU)
            return self.target
        double = share < BUSY / 2 and self._paid >= PAID_WELL
        grown = min(self.ceiling, self.target * 2 if double else self.target * 3 // 2)
        if room is not None:
            grown = min(grown, max(self.target, room))
        if grown > self.target:
            self._before = rate
            self.target = grown
        return self.target
