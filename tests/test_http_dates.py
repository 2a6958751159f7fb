"""http/dates.py reads IMF-fixdate itself and gives email.utils' answer for every date, any form."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime

import pytest

from s3bulk.http.dates import http_date_seconds, http_datetime

pytestmark = pytest.mark.unit


def test_fixdates_read_as_email_utils_reads_them() -> None:
    rng = random.Random(35)
    stamps = [0, 951782400, 951868799, 4107542399, 1700000000] + [rng.randrange(0, 2**32) for _ in range(2000)]
    for stamp in stamps:
        text = format_datetime(datetime.fromtimestamp(stamp, timezone.utc), usegmt=True)
        assert http_date_seconds(text) == parsedate_to_datetime(text).timestamp() == stamp, text
        assert http_datetime(text) == parsedate_to_datetime(text), text
        assert http_datetime(text).tzinfo is timezone.utc


@pytest.mark.parametrize("text", [
    "Sun, 06 Nov 1994 08:49:37 +0000",  # other forms: email.utils' answers
    "Sun, 06 Nov 1994 08:49:37 -0000",
    "Sunday, 06-Nov-94 08:49:37 GMT",
    "Sun Nov  6 08:49:37 1994",
    "Sun, 06 Nov 1994 10:49:37 +0200",
    "Sun, 6 Nov 1994 08:49:37 GMT",
    "Thu, 01 Jan 1969 00:00:00 GMT",
])
def test_other_forms_go_to_email_utils(text: str) -> None:
    assert http_date_seconds(text) == parsedate_to_datetime(text).timestamp()
    assert http_datetime(text) == parsedate_to_datetime(text)


@pytest.mark.parametrize("text", [
    "Tue, 29 Feb 2100 00:00:00 GMT", "Mon, 31 Apr 2024 00:00:00 GMT", "Mon, 01 Apr 2024 24:00:00 GMT",
    "Mon, 01 Apr 2024 00:60:00 GMT", "Mon, 01 Xyz 2024 00:00:00 GMT", "Mon, 0x 2024 00:00:00 GMT", "", "garbage",
])
def test_bad_dates_raise_as_email_utils_does(text: str) -> None:
    with pytest.raises((ValueError, TypeError)) as theirs:
        parsedate_to_datetime(text)
    with pytest.raises(theirs.type):
        http_date_seconds(text)
    with pytest.raises(theirs.type):
        http_datetime(text)
