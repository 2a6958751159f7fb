"""The link model's decisions (engine/transfer/link.py), fed measured rounds on a made-up clock:
parts in flight double while each round of parts moves more bytes a second, stop (or step back)
when they do not; part sizes follow the object unless --part-size was given. The transfers that
use it against real servers are in test_link_parts.py."""

from __future__ import annotations


import pytest

from s3bulk.engine.plan import TransferOptions
from s3bulk.engine.transfer.link import Lanes, LinkModel, part_size, start_lanes

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

MiB = 1024 * 1024


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def round_of(lanes: Lanes, clock: Clock, seconds: float, part: int = 8 * MiB) -> None:
    """Every lane finishes one part, the round having taken `seconds`."""
    clock.now += seconds
    for _ in range(lanes.lanes):
        lanes.done(part)


def test_lanes_grow_while_each_connection_is_the_limit_and_stop_at_the_ceiling():
    """A link that gives each connection the same rate (25 MB/s): every round of twice the lanes
    takes as long, so moves twice the bytes a second, and the lanes double up to the ceiling."""
    clock, model = Clock(), LinkModel()
    lanes = Lanes(8, 32, model, clock=clock)
    lanes.begin()
    seen = [lanes.lanes]
    for _ in range(4):
        round_of(lanes, clock, 0.34)
        seen.append(lanes.lanes)
    assert seen == [8, 16, 32, 32, 32]
    assert not lanes.growing and model.lanes == 32
    assert Lanes(8, 32, model, clock=clock).lanes == 32  # the worker's next object starts there


def test_lanes_stop_growing_when_the_bytes_a_second_do_not_and_step_back_when_they_fell():
    """A shared bottleneck (the CPU, the whole link): twice the lanes take twice as long a round."""
    clock = Clock()
    lanes = Lanes(8, 32, clock=clock)
    lanes.begin()
    round_of(lanes, clock, 0.1)
    assert lanes.lanes == 16
    round_of(lanes, clock, 0.25)  # 16 parts in 0.25 s: slower than 8 in 0.1 s
    assert lanes.lanes == 8 and not lanes.growing
    round_of(lanes, clock, 0.01)
    assert lanes.lanes == 8


def test_lanes_stay_but_stop_growing_when_more_only_helped_a_little():
    """Twice the lanes, 1.2 times the bytes a second (the first round paid for new connections):
    kept, but no further doubling."""
    clock = Clock()
    lanes = Lanes(8, 32, clock=clock)
    lanes.begin()
    round_of(lanes, clock, 0.2)
    round_of(lanes, clock, 0.2 * 2 / 1.2)
    assert lanes.lanes == 16 and not lanes.growing


def test_fixed_part_concurrency_never_grows():
    clock = Clock()
    lanes = Lanes(4, 4, clock=clock)
    lanes.begin()
    round_of(lanes, clock, 0.1)
    assert lanes.lanes == 4 and not lanes.growing


def test_part_sizes_follow_the_object_unless_one_was_given():
    auto = TransferOptions()
    down = dict(local_dst=True, sinks=True)
    up = dict(local_dst=False, sinks=False)
    assert part_size(24 * MiB, auto, **down) == 3 * MiB        # 8 ranges: one for each first lane
    assert part_size(20 * MiB, auto, **down) == 5 * MiB // 2   # 8 ranges
    assert part_size(256 * MiB, auto, **down) == 8 * MiB       # 32 ranges: room for the lanes to grow
    assert part_size(1024 * MiB, auto, **down) == 32 * MiB     # big ranges where they are written as they come
    assert part_size(1024 * MiB, auto, local_dst=True, sinks=False) == 8 * MiB  # held in buffers
    assert part_size(24 * MiB, auto, **up) == 5 * MiB          # S3's minimum
    assert part_size(1024 * MiB, auto, **up) == 8 * MiB
    assert part_size(200_000 * MiB, auto, **up) == 20 * MiB    # 10,000 parts at most
    given = TransferOptions(part_size="8MiB", auto_part_size=False)
    assert part_size(24 * MiB, given, **down) == 8 * MiB
    assert part_size(1024 * MiB, given, **down) == 8 * MiB
    assert part_size(200_000 * MiB, given, **up) == 20 * MiB
    assert part_size(24 * MiB, TransferOptions(part_size="16MiB"), **down) == 16 * MiB  # the API's, given


def test_an_upload_is_cut_finer_and_starts_wider_at_the_same_bytes_held():
    """Each round of growing costs a part's time: an upload's parts are cut from the object into
    about 64 (S3's 5 MiB at least, --part-size's 8 MiB at most), and its lanes start with the
    bytes part_concurrency parts of --part-size hold."""
    auto = TransferOptions()
    up = dict(local_dst=False, sinks=False)
    assert part_size(256 * MiB, auto, **up) == 5 * MiB     # 52 parts, not 32 of 8 MiB
    assert part_size(384 * MiB, auto, **up) == 6 * MiB
    assert part_size(512 * MiB, auto, **up) == 8 * MiB
    assert start_lanes(auto, 5 * MiB) == 25                 # 125 MiB held: the first doubling ahead
    assert start_lanes(auto, 8 * MiB) == 8                  # a 1 GiB upload: as before
    assert start_lanes(auto, 32 * MiB) == 8
    assert start_lanes(auto, 6 * MiB) == 21
    assert start_lanes(TransferOptions(part_concurrency=4), 5 * MiB) == 12
    assert start_lanes(TransferOptions(part_size="5MiB", auto_part_size=False), 5 * MiB) == 8
    clock = Clock()  # 25 lanes of 5 MiB at 25 MB/s a connection: one round to the ceiling
    lanes = Lanes(start_lanes(auto, 5 * MiB), 32, clock=clock)
    lanes.begin()
    seen = [lanes.lanes]
    for _ in range(2):
        round_of(lanes, clock, 0.21, 5 * MiB)
        seen.append(lanes.lanes)
    assert seen == [25, 32, 32]


def test_the_part_concurrency_ceiling_is_the_auto_one_unless_fixed():
    assert TransferOptions().part_concurrency_ceiling() == 32
    assert TransferOptions(part_concurrency=4, max_part_concurrency=4).part_concurrency_ceiling() == 4
    assert TransferOptions(part_concurrency=40).part_concurrency_ceiling() == 40
