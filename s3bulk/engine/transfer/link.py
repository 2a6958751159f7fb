"""How big the parts of one object are, and how many move at once, from what the link gives.

Fixed sizes tuned on one link are wrong on another: on loopback one connection moves over 1 GB/s
and big ranges save requests, while through real S3 one connection moves ~85-90 MB/s and through a
home uplink far less, so an object read in one big range crawls along on one connection. Here:

- The part size (`part_size`) follows the object: it is cut into about PARTS_PER_OBJECT parts,
  within bounds: a download into a local file in ranges of at least 1 MiB, and small enough that
  the first round of lanes has a part each (a 24 MiB object: 8 ranges of 3 MiB) up to
  SMALL_RANGE, so a mid-size object is not read in dozens of requests where the link is fast; a
  part S3 must take at least 5 MiB (an upload's object is cut into about PARTS_PER_UPLOAD: each
  round of growing its lanes costs a part's time, so smaller parts grow them sooner); at most the
  --part-size default of 8 MiB for a part held in a buffer, or LARGEST_RANGE for a download
  written into the file as it arrives (sinks.py). Parts of one object are all the same size (but
  the last): a resumed upload or file, the CRC of a download and the ETag `sync` compares with all
  count parts that way.
- The parts in flight (`Lanes`) start at TransferOptions.part_concurrency (8), or for an upload
  cut into parts smaller than --part-size at twice the bytes that many hold (`start_lanes`), and
  grow while the link gives more: once every lane has finished a part, the bytes per second of
  that round are compared with the round before; while twice the lanes move GROW_IF times the
  bytes a second or more (each connection is held back by the link, not by a bottleneck they
  share) they double, up to the ceiling (TransferOptions.part_concurrency_ceiling, and the parts
  the worker's byte budget holds); once
  they do not, growth stops, and the lanes go back if the last step made things slower. The
  worker remembers (`LinkModel`) how many lanes paid off, and its next object starts there.
  A download whose parts are written into the file as they arrive (sinks.py) holds no buffer per
  lane, so it starts with them all (up to the ceiling and the byte budget): each round of growing
  costs a part's time, most of a mid-size object's on a link that holds each connection back.

An explicit --part-size (TransferOptions.auto_part_size False) is used as given, and a fixed part
concurrency (max_part_concurrency equal to part_concurrency) never grows.
"""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable

from ...stores.base import (MAX_PARTS, MIN_PART as MIN_S3_PART, Multipart, PartTasks, complete_or_abort,
                           part_size_for)

MiB = 1024 * 1024
# an object is cut into about this many parts: enough for the lanes to grow to the default ceiling
# (32) on a slow link; on loopback the ranges of a 1 GiB download stay LARGEST_RANGE
PARTS_PER_OBJECT = 32
# an upload's object (its parts held in buffers, S3's 5 MiB minimum) is cut into about this many:
# smaller parts make each round of growing the lanes shorter, and the lanes start wider for them
# (start_lanes). 256 MiB at 25 MB/s a connection + 10 ms: 52 parts of 5 MiB from 25 lanes
# (START_ROUNDS_AHEAD), not 32 of 8 MiB from 8 (each round of growing cost ~0.34 s there); a 1 GiB
# object keeps the --part-size default of 8 MiB, and its lanes and memory, as before
PARTS_PER_UPLOAD = 64
SMALLEST_RANGE = 1 * MiB  # a download into a local file (ranges have no minimum at S3)
SMALL_RANGE = 4 * MiB     # ranges are this big (or one for each first lane) before they are smaller
# The range one GET reads at most where the parts are written into the file as they arrive: a part
# no longer costs its size in memory, and each request has a cost of its own (signing, the task,
# the server's set-up of the answer). 1 GiB from versitygw on loopback into tmpfs: 0.99 / 0.92 CPU
# s of the client (task-clock, median of 4) with 8 / 32 MiB ranges, and 1,075 / 1,129 / 1,209 MB/s
# with 8 / 16 / 32 MiB (median of 5, shared machine; s5cmd 1,080).
LARGEST_RANGE = 32 * MiB
# a round of twice the lanes must move this many times the bytes a second of the round before for
# the lanes to double again: 2 where each connection is held back by the link alone, about 1 where
# something they share is the limit (the CPU, the whole link). Not just "faster": the first round
# also pays for opening connections, so the second is faster whatever the lanes (2-core machine
# under load, 25 MB/s a connection through toxiproxy: 72 then 86 MB/s with 8 then 16 lanes)
GROW_IF = 1.5
# The first round of lanes has no round before it to compare with, so it always doubles them: an
# upload cut into parts smaller than --part-size (so each part holds less) starts that doubling
# ahead, with no round's wait (at 25 MB/s a connection a round of 5 MiB parts is ~0.21 s of a
# 256 MiB object's ~1.7 s). Not for parts of --part-size (a 1 GiB upload): a loaded loopback
# server holds 16 x 8 MiB lanes no faster than 8, at 288 MiB of RSS against 160.
START_ROUNDS_AHEAD = 1


def part_size(size: int, options: Any, *, local_dst: bool, sinks: bool) -> int:
    """The part size for an object of `size` bytes: --part-size as given when the user gave it
    (raised to fit 10,000 parts), else from the object's size (see the module docstring).
    `local_dst`: the parts are ranges written into a local file (no 5 MiB minimum); `sinks`: they
    are written as they arrive (sinks.py), not held in buffers."""
    if not options.auto_part_size:
        return int(part_size_for(size, options.part_size))
    largest = max(options.part_size, LARGEST_RANGE) if sinks else options.part_size
    if local_dst:  # one range for each first lane, or SMALL_RANGE, whichever is smaller
        smallest = max(SMALLEST_RANGE, min(SMALL_RANGE, -(-size // max(1, options.part_concurrency))))
    else:
        smallest = MIN_S3_PART
    want = -(-size // (PARTS_PER_OBJECT if local_dst or sinks else PARTS_PER_UPLOAD))
    want = -(-want // MiB) * MiB
    part = max(smallest, min(largest, want))
    least = -(-size // MAX_PARTS)  # 10,000 parts at most
    if part < least:
        part = -(-least // MiB) * MiB
    return part


def start_lanes(options: Any, part: int) -> int:
    """The parts in flight a new object's lanes start with: part_concurrency at the --part-size
    default (a 1 GiB upload: 8 x 8 MiB, its memory as before); for parts cut smaller from the
    object's size, the lanes that hold the bytes of START_ROUNDS_AHEAD doublings of that (an
    upload of 256 MiB in 5 MiB parts: 25 lanes, 125 MiB, under the 32 x 8 MiB it could grow to
    before it was cut finer). A --part-size the user gave starts at part_concurrency as given."""
    if not options.auto_part_size or part >= options.part_size:
        return int(options.part_concurrency)
    held = options.part_concurrency * options.part_size << START_ROUNDS_AHEAD
    return max(int(options.part_concurrency), held // max(1, part))


class LinkModel:
    """What one worker has learnt of the link: the parts in flight that paid off for its last object
    moved in parts (0: nothing yet). Its next object starts there."""

    def __init__(self) -> None:
        self.lanes = 0


class Lanes:
    """How many parts of one object may be in flight, grown while the link gives more (see the
    module docstring). Used from one event loop."""

    def __init__(self, start: int, most: int, model: LinkModel | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.most = max(1, most)
        self.lanes = max(1, min(self.most, model.lanes if model is not None and model.lanes else start))
        self.model = model
        self.growing = self.lanes < self.most
        self._best = 0.0
        self._before = self.lanes
        self._round_began = clock()
        self._round_bytes = 0
        self._round_parts = 0

    def begin(self) -> None:
        """The first part is about to start: the first round's clock starts here."""
        self._round_began = self.clock()

    def done(self, n: int) -> None:
        """A part of `n` bytes was moved."""
        if not self.growing:
            return
        self._round_bytes += n
        self._round_parts += 1
        if self._round_parts < self.lanes:
            return
        now = self.clock()
        rate = self._round_bytes / max(now - self._round_began, 1e-6)
        if rate >= self._best * GROW_IF:
            self._best, self._before = rate, self.lanes
            self.lanes = min(self.most, self.lanes * 2)
            self.growing = self.lanes > self._before
        else:
            self.growing = False
            if rate < self._best:
                self.lanes = self._before  # the last step made it slower: back
        if self.model is not None:
            self.model.lanes = self.lanes
        self._round_began, self._round_bytes, self._round_parts = now, 0, 0


async def upload_in_lanes(upload: Multipart, size: int, part: int, lanes: Lanes,
                          do_part: Callable[[int, int, int], Awaitable[None]]) -> None:
    """stores.base.upload_in_parts with the parts in flight set by `lanes` as they go: do_part for
    each part, then complete the upload; on any failure let the parts in flight end (PartTasks),
    abort it and raise the first error itself."""
    async def one(number: int, start: int, end: int) -> None:
        await do_part(number, start, end)
        lanes.done(end - start)

    async def parts() -> None:
        async with PartTasks(upload) as tasks:
            lanes.begin()
            for number, start in enumerate(range(0, size, part), 1):
                await tasks.room(lambda: lanes.lanes)
                if tasks.failed:
                    break
                tasks.start(one(number, start, min(size, start + part)))

    await complete_or_abort(upload, parts)
