"""Cuts at calendar days for date-partitioned keys (`year=2024/month=03/day=17/...`,
`2024/03/17/...`, `dt=2024-03-17/...`), all fields at once.

Why: cut character by character (units.py), a dated key space fans out one field a round: the
first page shows days 01-02 of January, so the rest is cut at `day=1`, `day=2`, `month=02`,
`month=1`, `year=2021`...; each month's range is cut into days only when its own first page comes
back, and each ten days' range into pieces only when its page does. A 200,000-key listing (400
days of 500 keys) took 9 rounds where 5-6 would do at 64 requests in flight. A page that shows a
date in each key tells how many days a page holds, so the rest of that year can be cut at once,
every 1.5 pages' worth of days: each piece is two requests, a full page and a part of one (a piece
of exactly a page costs a second request to learn nothing follows). Later years are found by the
cuts at the year's digits (units.py), each cut into days when its first page comes back.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

# a 4-digit year, a 2-digit month and a 2-digit day, each apart by a little fixed text
_DATE = re.compile(r"(?<!\d)(\d{4})(\D{1,12})(\d{2})(\D{1,12})(\d{2})(?!\d)")


def date_cuts(first: str, last: str, until: str | None, most: int) -> tuple[list[str], str] | None:
    """(increasing cuts after `last` and below `until`, at days of last's year every 1.5 pages'
    worth of days; the key where last's next year starts) when the page from `first` to `last`
    holds dated keys (the same layout at the same place in both); None otherwise. At most `most`."""
    found = _date_at(last)
    if found is None:
        return None
    start, when, seps = found
    before = _date_at(first)
    if before is None or before[0] != start or before[2] != seps or first[:start] != last[:start] \
            or before[1] > when:
        return None
    days = (when - before[1]).days + 1  # days the page touched, its first and last in part
    step = max(1, (3 * days) // 2)
    head = last[:start]
    next_year = f"{head}{when.year + 1:04d}"
    year = f"{head}{when.year:04d}{seps[0]}"
    cuts: list[str] = []
    # the first piece: what is left of the last day and `step` days more (a page of two whole days
    # ends where its second day does, and a piece of the next two would be exactly a page)
    day = when + timedelta(days=step + 1)
    month_end = (when.replace(day=28) + timedelta(days=4)).replace(day=1)  # the next month's first day
    # the rest of the page's month at days; the last piece runs to the month's end, at least `step`
    # days long (a shorter one would be a request more for what its neighbour lists with its own)
    while day + timedelta(days=step) <= month_end:
        cuts.append(f"{year}{day.month:02d}{seps[1]}{day.day:02d}")
        day += timedelta(days=step)
    # the later months each a range of its own: cut at days when its own first page shows it holds
    # keys; a month with none costs one request (the last year of a bucket is rarely whole)
    cuts.extend(f"{year}{month:02d}" for month in range(when.month + 1, 13))
    return [c for c in cuts if until is None or c < until][:most], next_year


def _date_at(key: str) -> tuple[int, date, tuple[str, str]] | None:
    """(where the key's last date starts, the date, the text between its fields), or None."""
    found = None
    for m in _DATE.finditer(key):
        found = m
    if found is None:
        return None
    try:
        when = date(int(found.group(1)), int(found.group(3)), int(found.group(5)))
    except ValueError:  # not a date: a month 13, a day 45
        return None
    return found.start(), when, (found.group(2), found.group(4))
