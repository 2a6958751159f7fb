"""Where `ls` cuts a key range, from the keys its pages showed (engine/listing/units.py, density.py):
hashes under directories of their first digits (`ab/cd/abcd1234...`) are cut evenly like flat
hashes, and the open range after the first page is not probed at values its names never show
(the next letters of a word, hex letters after the digits of a date or counter)."""

from __future__ import annotations

import hashlib

import pytest

from s3bulk.engine.listing.density import even_cuts
from s3bulk.engine.listing.units import split_points

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def _hashdirs(n: int) -> list[str]:
    hashes = sorted(hashlib.md5(str(i).encode()).hexdigest()[:16] for i in range(n))
    return [f"{h[:2]}/{h[2:4]}/{h}" for h in hashes]


def test_hashes_under_directories_are_cut_evenly() -> None:
    keys = _hashdirs(200_000)
    start = next(i for i, k in enumerate(keys) if k >= "01/4")
    page = keys[start:start + 1000]
    cuts = even_cuts(page, "2", 31)
    assert cuts, "a range of ~20 pages of hashed names with `/` between their fields is cut"
    assert all(page[-1] < c < "2" for c in cuts) and cuts == sorted(set(cuts))
    held = [sum(1 for k in keys if lo < k <= hi) for lo, hi in zip([page[-1], *cuts], [*cuts, "2"])]
    assert max(held) <= 8 * 1000  # pieces of a few pages each, not one chain of ~20


def test_a_range_ending_past_the_hex_digits_is_cut_too() -> None:
    keys = _hashdirs(200_000)
    start = next(i for i, k in enumerate(keys) if k >= "f1/4")
    page = keys[start:start + 1000]
    cuts = even_cuts(page, "g", 31)  # `g`: a cut after `f` at the first position
    assert cuts and all(page[-1] < c < "g" for c in cuts)


def test_dated_paths_are_still_left_to_field_cuts() -> None:
    page = [f"2024/01/{d:02d}/part-{j:04d}.parquet" for d in (1, 2) for j in range(500)]
    assert even_cuts(page, "2024/02", 31) is None


@pytest.mark.parametrize("page, hex_after", [
    ([f"obj-{i:07d}" for i in range(1000)], False),
    ([f"2024/01/{d:02d}/part-{j:04d}.parquet" for d in (1, 2) for j in range(500)], False),
    (sorted(hashlib.md5(str(i).encode()).hexdigest()[:8] + f"/obj-{i}" for i in range(100_000))[:1000], True),
])
def test_the_open_range_is_probed_only_where_names_go(page: list[str], hex_after: bool) -> None:
    points = split_points(page[-1], None, "", page, coarse=True)
    assert points == sorted(set(points)) and all(p > page[-1] for p in points)
    firsts = {p[0] for p in points if len(p) == 1}
    assert bool(firsts & set("abcdef")) == hex_after
    if page[0].startswith("obj"):
        assert not any(p[0] > "o" for p in points)  # `p`...`z` after the word `obj`: no key there


def test_a_dated_page_inside_a_month_cuts_the_month_at_days() -> None:
    """A dated page of two days (engine/listing/dates.py): the rest of its month is cut every three
    days at once (each piece a page and a half: two requests), the first piece holding three days
    after the page's last, none at or past the range's end."""
    page = [f"year=2020/month=02/day={d:02d}/part-{j:06d}.parquet" for d in (1, 2) for j in range(500)]
    points = split_points(page[-1], "year=2020/month=03", "", page, coarse=True)
    assert points == [f"year=2020/month=02/day={d:02d}" for d in range(6, 30, 3)]


def test_a_dated_page_cuts_its_month_at_days_and_the_later_months_and_years_once_each() -> None:
    page = [f"2024/01/{d:02d}/part-{j:04d}.parquet" for d in (1, 2) for j in range(500)]
    points = split_points(page[-1], None, "", page, coarse=True)
    days = [f"2024/01/{d:02d}" for d in range(6, 28, 3)]  # the last piece, days 27-31, runs to the month's end
    months = [f"2024/{m:02d}" for m in range(2, 13)]
    assert points[:len(days) + len(months)] == days + months
    assert points == sorted(set(points)) and "2025" in points and all(p > page[-1] for p in points)


@pytest.mark.parametrize("first, last", [
    ("obj-2024/13/01/a", "obj-2024/13/02/a"),  # no month 13: not a date
    ("x/2024/01/01/a", "y/2024/01/02/a"),  # the text before the date differs
    ("2024/01/01/a", "2024-01-02/a"),  # another layout
    ("2024/01/03/a", "2024/01/02/a"),  # going back in time
])
def test_keys_that_are_not_one_dated_layout_get_no_date_cuts(first: str, last: str) -> None:
    from s3bulk.engine.listing.dates import date_cuts

    assert date_cuts(first, last, None, 100) is None


def test_numbered_names_still_skip_the_empty_cut_after_a_rollover() -> None:
    """Numbered names: the finest cut is left to the range that lists on from the page (unchanged)."""
    page = [f"obj-{i:07d}" for i in range(1000)]
    points = split_points(page[-1], None, "", page, coarse=True)
    assert points[0] == "obj-002" and all(p > page[-1] for p in points)


def test_hex_letters_reads_each_position_of_keys_of_any_length() -> None:
    """hex_letters (columns by one transposition) against the position-by-position reading, on keys
    of unequal lengths (a short key has no character at a position), empty samples and ranges."""
    import random

    from s3bulk.engine.listing.density import DIGITS, HEX, hex_letters

    def reference(seen: list[str], cp: int, depth: int) -> bool:
        for j in range(cp, depth):
            col = {k[j] for k in seen if len(k) > j}
            if len(col) > 1 and col.issubset(HEX) and not col.issubset(DIGITS):
                return True
        return False

    rng = random.Random(3)
    found = 0
    for _ in range(2000):
        seen = ["".join(rng.choice("0123456789abcdefgz/-=") for _ in range(rng.randint(0, 12)))
                for _ in range(rng.randint(0, 6))]
        cp, depth = rng.randint(0, 6), rng.randint(0, 14)
        assert hex_letters(seen, cp, depth) == reference(seen, cp, depth), (seen, cp, depth)
        found += reference(seen, cp, depth)
    assert 100 < found < 1900  # both answers were tried
