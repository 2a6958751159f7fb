"""HTTP dates (Last-Modified, Retry-After): the one form servers send read here, any other by
email.utils, imported only then.

Why: `email.utils.parsedate_to_datetime` was the only reason a one-object copy imported the
`email` package (email.utils, email.charset, calendar...: ~4.5 ms of a start-up's CPU), and it
parses every date by a general RFC 2822 tokenizer (~10 us). Servers send IMF-fixdate, RFC 9110's
preferred form (`Sun, 06 Nov 1994 08:49:37 GMT`); that one is read here exactly, with the same
answer (a UTC time, ValueError for an impossible day or hour). Anything else (obsolete forms,
other zones, `-0000`'s naive local time) goes to email.utils as before, so the results and the
errors stay email.utils' own.
"""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["http_date_seconds", "http_datetime"]

MONTHS = {"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6, "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10,
          "Nov": 11, "Dec": 12}
_DAYS_IN = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # February's leap day checked apart


def _fixdate(value: str) -> tuple[int, int, int, int, int, int] | None:
    """(year, month, day, hour, minute, second) of an IMF-fixdate in GMT, or None for any other
    text (including an impossible date: email.utils then raises what it raises)."""
    # "Sun, 06 Nov 1994 08:49:37 GMT": 29 characters at fixed places
    if (len(value) != 29 or value[3:5] != ", " or value[7] != " " or value[11] != " " or value[16] != " "
            or value[19] != ":" or value[22] != ":" or value[25:] != " GMT"):
        return None
    month = MONTHS.get(value[8:11])
    digits = value[5:7] + value[12:16] + value[17:19] + value[20:22] + value[23:25]
    if month is None or not (digits.isascii() and digits.isdigit()):
        return None
    day, year = int(value[5:7]), int(value[12:16])
    hour, minute, second = int(value[17:19]), int(value[20:22]), int(value[23:25])
    if not 1 <= day <= _DAYS_IN[month] or hour > 23 or minute > 59 or second > 59 or year < 1970:
        return None
    if month == 2 and day == 29 and not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
        return None
    return year, month, day, hour, minute, second


def _days_since_epoch(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to this date of the proleptic Gregorian calendar (H. Hinnant's
    days_from_civil)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def http_date_seconds(value: str) -> float:
    """An HTTP date as seconds since the epoch: `parsedate_to_datetime(value).timestamp()`."""
    fields = _fixdate(value)
    if fields is None:
        from email.utils import parsedate_to_datetime

        return parsedate_to_datetime(value).timestamp()
    year, month, day, hour, minute, second = fields
    return float(_days_since_epoch(year, month, day) * 86400 + hour * 3600 + minute * 60 + second)


def http_datetime(value: str) -> datetime:
    """An HTTP date as a datetime: `parsedate_to_datetime(value)` (aware, UTC, for a GMT date)."""
    fields = _fixdate(value)
    if fields is None:
        from email.utils import parsedate_to_datetime

        return parsedate_to_datetime(value)
    return datetime(*fields, tzinfo=timezone.utc)
