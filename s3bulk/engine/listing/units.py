"""Splitting a key range into several, so that one bucket is listed through many chains at once.

A unit is the key range `(after, until]`. Listing it is a chain: each page says where the next one
starts, so one unit is listed at one page per round trip (75-300 ms on real S3: 3,000-13,000 keys/s,
days for a billion keys). Any strictly increasing keys `m1 < m2 < ...` strictly inside the range
cut it into `(after, m1], (m1, m2], ..., (mk, until]`, which cover exactly the same keys, each key
once, whatever the keys are; the split points are only guesses about where keys lie, and a bad
guess costs an empty listing (one request), never a wrong result. Python compares strings by code
point, which is the UTF-8 byte order S3 lists in, so the ranges mean the same thing on both sides.

Where to cut, from one listed page and nothing else (no extra requests):
- The page's first and last keys first differ at position d: keys just beyond the page are likely
  to vary there or to its left, and ranges cut at positions left of d-1 hold more than a page each.
- For every position j from max(d - 2, len(prefix)) down to len(prefix), and every character c
  greater than last[j] that is likely there (of last[j]'s class when that is a digit or an ASCII
  letter, or seen at position j in the page), `last[:j] + c` is a split point. These come
  out in increasing order, fine ones first: ranges of roughly one page, ten pages, a hundred, ...,
  up to the whole remaining prefix space. For date-partitioned paths this cuts at days, months and
  years; for numbered names at each decimal digit; for hashed names at the first hex digits.
- A range that still turns out large is split again when its own first page comes back truncated
  (adaptive), so one hot prefix cannot serialize a run. For `ls` (`coarse`), a range with an end
  is cut evenly by how many pages it still holds, judged from its page (density.py), when its
  names are counters or hashes. The coordinator caps how many units exist
  at once, so memory and wasted listings stay bounded.
"""

from __future__ import annotations

from typing import Sequence

from ...model import WorkUnit
from .dates import date_cuts
from .density import even_cuts, first_difference, hex_letters, in_word

MAX_PIECES = 32  # split points proposed per split, at most
PER_POSITION = 2  # successors of a digit or letter tried at one position: more are mostly empty ranges


def split_points(last: str, until: str | None, prefix: str, sample: Sequence[str],
                 max_points: int = MAX_PIECES - 1, coarse: bool = False, idle: bool = False) -> list[str]:
    """Increasing keys strictly between `last` and `until` (None: no upper bound), all starting with
    `prefix`, guessed from `sample` (the keys of the page just listed, in order, ending at `last`).
    `coarse` (`ls`): start one position further left, so that no range is likely smaller than a page
    (a range cut where the page's keys vary holds a fraction of a page and costs a whole request:
    half the requests on 1M hashed keys), two on numbered names (see below), cut at every likely
    character at the first position after the prefix (the remaining range fans out in one round,
    not two pieces a round), and not at the next letters of fixed text (`month=`: `montj`)."""
    if max_points <= 0 or not last.startswith(prefix):
        return []
    first = sample[0] if sample else last
    dated = date_cuts(first, last, until, max_points) if coarse else None
    if coarse and until is not None and dated is None:
        # a range with an end: cut evenly by how many pages it still holds, or not at all
        cuts = even_cuts(sample or [last], until, max_points)
        if cuts is not None:
            return [c for c in cuts if c.startswith(prefix)]
    d = varies = first_difference(first, last)
    numbered = False
    if coarse:
        # one position left of where the page varies; two when the page spans every value of its
        # class there (numbered names: `...000` to `...999`): cuts one position left would each
        # hold exactly one page, and a range that ends exactly at a page's end costs one more
        # request to learn that nothing follows (1M flat keys: 600 such requests)
        numbered = _spans_class(first, last, d)
        d = max(d - (2 if numbered else 1), 0)
    finest = min(max(d, len(prefix)), len(last) - 1)
    # the position right after where the range's end differs from the page's last key: a range
    # inside one value of a field (`(d13/..., d2]`: days 14-19) has it where the page varies
    within = first_difference(last, until) + 1 if coarse and until is not None else -1
    # hex letters after a digit at the first position only where the page's names show them (hashes)
    hex_seen = coarse and hex_letters(sample[::50], len(prefix), len(last))
    points: list[str] = []
    for j in range(finest, len(prefix) - 1, -1):
        here = last[j]
        stop = False
        wide = coarse and j == len(prefix)
        # left of d every key of the page has last[j] there: nothing to learn from the sample
        column = {k[j] for k in sample if len(k) > j} if j >= varies else set()
        # not at the next letters of fixed text (`obj-`: `obk`, ..., `z` each held no key), even at
        # the first position: what lies past it is one open range, cut when its first page shows it
        by_class = not (coarse and in_word(last, j))
        for c in _likely_after(here, column, wide, by_class, numbered, hex_seen):
            cand = last[:j] + c
            if until is not None and cand >= until:
                stop = True  # every later candidate is larger still
                break
            points.append(cand)
        if stop:
            break
    if dated is not None:
        # the rest of the page's year at its days (dates.py), then the coarser cuts from its next year
        days, next_year = dated
        return (days + [p for p in points if p >= next_year and p > last])[:max_points]
    if len(points) > max_points:
        # keep the coarsest (they bound the big ranges) and spread the rest evenly
        step = len(points) / max_points
        points = [points[min(len(points) - 1, int(round((i + 1) * step)) - 1)] for i in range(max_points)]
        points = sorted(set(points))
    points = [p for p in points if p > last and (until is None or p < until)]
    if coarse and numbered and len(points) > 1:
        # the finest cut is right after the page: on numbered names a page ends where that digit
        # rolls over (`...0999`, cut `...1`), so (last, cut] is empty and costs a request; the range
        # that keeps listing on from the page takes it (1M flat keys: 517 empty listings -> 117).
        # Elsewhere it is kept: a dated page ends mid-field (`day=02`), so (last, `day=1`] holds
        # days 03-09 and the month fans out in three ranges, not two; hashed pages do not end at
        # a rollover either (200k hashed keys: 255 -> 250 requests, simulated)
        points = points[1:]
    if idle and within == varies and until is not None:
        # the range lies inside one value of the field the page varies in (`(d13/..., d2]`: days
        # 14-19, the page held two days): cut it every 1.5 pages' worth of that field's values, so
        # each piece is two requests and none ends where a full page does (a chain of 3-5 pages
        # was the last rounds of a dated listing)
        points = (_strides(first, last, until, varies) + points)[:max_points]
    return points


def _strides(first: str, last: str, until: str, j: int) -> list[str]:
    """Cuts at position j, every 1.5 times the values a page spanned there, past `last`, below
    `until`, within the class (digits, letters) of last[j]."""
    if j >= len(first) or j >= len(last):
        return []
    cls = next((c for c in _CLASSES if last[j] in c and first[j] in c), None)
    if cls is None:
        return []
    width = cls.index(last[j]) - cls.index(first[j]) + 1
    step = max(2, (3 * width + 1) // 2)
    out = []
    for i in range(cls.index(last[j]) + 1 + step, len(cls), step):
        cut = last[:j] + cls[i]
        if cut >= until:
            break
        out.append(cut)
    return out


_CLASSES = ("0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _spans_class(first: str, last: str, d: int) -> bool:
    """The page's keys run through every value of their character class at position d."""
    if d >= min(len(first), len(last)):
        return False
    for cls in _CLASSES:
        if first[d] == cls[0] and last[d] == cls[-1]:
            return True
    return False


def _likely_after(here: str, column: set[str], wide: bool = False, by_class: bool = True,
                  all_digits: bool = False, hex_seen: bool = True) -> list[str]:
    """Characters greater than `here` that keys probably have at its position: the rest of its class
    (digits, lower or upper ASCII letters; `wide`: all of it, else the next PER_POSITION; none
    without `by_class`), and whatever the page showed at that position. `wide` also adds the hex
    letters after a digit where the page's names vary in hex letters (`hex_seen`: hashes): the
    first position after the prefix is where a big remaining range must fan out at once; a cut
    there that holds no key costs one request (after a date's or a counter's digits: 6 such).
    `all_digits` (numbered names): every following digit, so that the remaining range fans out
    into ranges of ten pages, a hundred, ... in one round."""
    likely = {c for c in column if c > here}
    for cls in _CLASSES if by_class else ():
        if here in cls:
            every = wide or (all_digits and cls is _CLASSES[0])
            likely.update(cls[cls.index(here) + 1:][:None if every else PER_POSITION])
    if wide and by_class and hex_seen and here in _CLASSES[0]:
        likely.update("abcdef")
    return sorted(likely)


def split_unit(rest: WorkUnit, prefix: str, sample: Sequence[str], max_pieces: int = MAX_PIECES,
               coarse: bool = False, idle: bool = False) -> list[WorkUnit]:
    """`rest` (what follows a listed page, starting after its last key) as contiguous pieces covering
    exactly the same keys; [rest] when no split point is found or the unit is token-paged."""
    if rest.token is not None or rest.after is None or max_pieces < 2:
        return [rest]
    points = split_points(rest.after, rest.until, prefix, sample, max_pieces - 1, coarse, idle)
    if not points:
        return [rest]
    bounds = [rest.after, *points, rest.until]
    return [WorkUnit(after=bounds[i], until=bounds[i + 1], seq=rest.seq) for i in range(len(bounds) - 1)]


def join_units(pieces: Sequence[WorkUnit]) -> WorkUnit:
    """Contiguous pieces back into one unit (when the run already has enough units)."""
    return WorkUnit(after=pieces[0].after, until=pieces[-1].until, token=pieces[0].token, seq=pieces[0].seq)
