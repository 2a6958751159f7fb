"""Splitting key ranges (engine/listing/units.py): whatever the keys and whatever is split or joined when, the
units cover the key space exactly once, in S3's order (UTF-8 bytes), and splitting does make the
listing parallel for the key shapes people have. In-memory, milliseconds."""

from __future__ import annotations

import bisect
import random

import pytest

from s3bulk.engine.listing.units import join_units, split_points, split_unit
from s3bulk.model import ObjectInfo, Page, WorkUnit

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def list_page(keys: list[str], prefix: str, unit: WorkUnit, limit: int) -> Page:
    """What an ordered store does: up to `limit` keys under prefix after unit.after, cut at unit.until,
    asked under the prefix the unit's keys share (as the S3 store asks: a prefix too long loses keys)."""
    prefix = unit.shared_prefix(prefix)
    i = bisect.bisect_right(keys, unit.after) if unit.after is not None else bisect.bisect_left(keys, prefix)
    out = []
    while i < len(keys) and len(out) < limit and keys[i].startswith(prefix):
        out.append(keys[i])
        i += 1
    truncated = i < len(keys) and keys[i].startswith(prefix)
    if unit.until is not None and out and out[-1] > unit.until:
        return Page([ObjectInfo(k) for k in out if k <= unit.until])
    if not truncated or not out:
        return Page([ObjectInfo(k) for k in out])
    return Page([ObjectInfo(k) for k in out], next_after=out[-1])


def run(keys: list[str], prefix: str, limit: int, rng: random.Random, cap: int = 64,
        slots: int = 16, coarse: bool = False) -> tuple[list[str], int, int]:
    """List everything as the engine does (units in any order, random split/join decisions); returns
    the keys seen, the number of list requests and the number of rounds of `slots` requests sent at
    once that it took (for a single chain: one round per page)."""
    keys = sorted(keys)
    pending = [WorkUnit()]
    seen: list[str] = []
    requests = rounds = 0
    while pending:
        rounds += 1
        batch = [pending.pop(rng.randrange(len(pending))) for _ in range(min(slots, len(pending)))]
        for unit in batch:
            requests += 1
            _list_one(keys, prefix, limit, rng, cap, unit, pending, seen, coarse)
    return seen, requests, rounds


def _list_one(keys: list[str], prefix: str, limit: int, rng: random.Random, cap: int, unit: WorkUnit,
              pending: list[WorkUnit], seen: list[str], coarse: bool = False) -> None:
    page = list_page(keys, prefix, unit, limit)
    seen.extend(e.key for e in page.entries)
    rest = unit.rest(page)
    if rest is None:
        return
    pieces = split_unit(rest, prefix, [e.key for e in page.entries], coarse=coarse)
    assert pieces[0].after == rest.after and pieces[-1].until == rest.until
    for a, b in zip(pieces, pieces[1:]):
        assert a.until == b.after and a.after < a.until
    if len(pending) + len(pieces) > cap or rng.random() < 0.2:
        pieces = [join_units(pieces)]
    pending.extend(pieces)


ALPHABET = ["a", "b", "z", "/", "-", "0", "9", "é", "\u00ff", "\u4e2d", "\U0001F600", "\U0010FFFD", "~", " "]


def random_keys(rng: random.Random, n: int, prefix: str) -> list[str]:
    keys = set()
    while len(keys) < n:
        length = rng.randint(0, 12)
        k = prefix + "".join(rng.choice(ALPHABET) for _ in range(length))
        keys.add(k)
        if rng.random() < 0.2:  # keys that are prefixes of other keys
            keys.add(k + rng.choice(ALPHABET))
    return sorted(keys)[:n]


@pytest.mark.parametrize("seed", range(60))
def test_units_cover_every_key_exactly_once(seed: int) -> None:
    """Coarse splits (`ls`: ranges with an end cut evenly by their estimated length) alternate
    with the journal's fine ones by seed."""
    rng = random.Random(seed)
    prefix = rng.choice(["", "p/", "a", "\U0001F600/", "日"])
    keys = random_keys(rng, rng.randint(0, 3000), prefix)
    others = random_keys(rng, 50, "zz-outside") if prefix else []  # keys not under the prefix
    limit = rng.choice([1, 2, 7, 50, 1000])
    seen, _, _ = run(keys + others, prefix, limit, rng, coarse=seed % 2 == 1)
    assert sorted(seen) == sorted(keys)
    assert len(seen) == len(set(seen))


def test_utf8_byte_order_is_code_point_order() -> None:
    rng = random.Random(1)
    keys = random_keys(rng, 2000, "")
    assert sorted(keys) == sorted(keys, key=lambda k: k.encode("utf-8"))


def test_split_points_are_inside_the_range_and_increasing() -> None:
    rng = random.Random(2)
    for _ in range(2000):
        keys = random_keys(rng, rng.randint(1, 40), "")
        last = keys[-1]
        until = rng.choice([None, last + rng.choice(ALPHABET), rng.choice(keys) + "~"])
        if until is not None and until <= last:
            continue
        for coarse in (False, True):
            pts = split_points(last, until, "", keys, coarse=coarse)
            assert pts == sorted(set(pts))
            assert all(p > last and (until is None or p < until) for p in pts)


SHAPES = {
    "dated": lambda i: f"year={2020 + i // 36500}/month={(i // 3000) % 12 + 1:02d}/day={(i // 100) % 30 + 1:02d}/part-{i:06d}.parquet",
    "flat": lambda i: f"obj-{i:07d}",
    "hashed": lambda i: f"{(i * 2654435761) % 2**32:08x}/obj-{i}",
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_splitting_lists_in_parallel(shape: str) -> None:
    """100,000 keys of each shape, 16 listings at a time: a single chain needs 100 round trips; split
    units need a fraction of that, at the price of a bounded number of extra (mostly empty) listings."""
    keys = sorted({SHAPES[shape](i) for i in range(100_000)})
    seen, requests, rounds = run(keys, "", 1000, random.Random(3), cap=64, slots=16)
    assert sorted(seen) == keys
    print(f"{shape}: {requests} list requests in {rounds} round trips (a chain: 100 in 100)")
    assert rounds <= 35  # a quarter of the chain's wall time at worst; 6-7 would be perfect balance
    assert requests <= 400  # empty ranges cost a request each: at most 4x the chain's requests
