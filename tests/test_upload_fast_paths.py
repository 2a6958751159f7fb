"""What the small-object upload path computes once and reuses must answer as the slow way would:
the Content-Type guessed per suffix (stores/content_types.py) as `mimetypes` guesses it per name,
and x-amz-meta-mtime cut from the digits (stores/file_times.py) as the divmod form writes it."""

from __future__ import annotations

import mimetypes
import random

import pytest

from s3bulk.stores import content_types
from s3bulk.stores.file_times import format_mtime, parse_mtime

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def _mimetypes(key: str) -> str | None:
    kind, encoding = mimetypes.guess_type(key, strict=False)
    return kind if kind and not encoding else ("application/gzip" if encoding == "gzip" else kind)


CHOSEN = ["a.TXT", "a.Txt", "x.tar.gz", "x.tgz", "y.tar.GZ", "z.svgz", "p.Z", "x.tar.bz2", ".bashrc", "a/..b",
          "a.b/c", "a/.b.txt", "..txt", "a..txt", "a/b.", "a.", "a/b/.c", ".x.html", "", "/", "abc", "a/b",
          "data:text/html,x", "DATA:text/plain,x", "x:y.html", "a.html?x", "a.html#y", "a;b.html", "a.%2e",
          "file.JPG", "d0000/f00000001", "photos/2026/IMG_0001.jpeg", "page.html", "notes.md", "x.json"]


def test_content_type_per_suffix_is_mimetypes_per_name():
    content_types._BY_SUFFIX.clear()
    rng = random.Random(35)
    keys = CHOSEN + ["".join(rng.choice("ab./.:?#;%GZgzTXtx-") for _ in range(rng.randint(0, 10)))
                     for _ in range(20_000)]
    for key in keys + keys:  # the second time from the cache
        assert content_types.content_type_for(key) == _mimetypes(key), key


def _fixed_point(micros: int) -> str:
    """rclone's text of a time (Go's FormatFloat 'f', -1): a sign, then the digits; -1.25 s is
    "-1.25" (a floored divmod would write "-2.75", which reads back 1.5 s off)."""
    whole, frac = divmod(abs(micros), 1_000_000)
    text = f"{whole}.{frac:06d}".rstrip("0").rstrip(".") if frac else str(whole)
    return "-" + text if micros < 0 else text


@pytest.mark.parametrize("mtime", [1764300000.1234567, 1700000000.0, 1700000000.5, 1.000001, 1.0, 0.5, 0.0,
                                   -1.25, -0.000001, 1e6 + 0.1, 4102444800.999999, 1700000000.9999996])
def test_mtime_text_is_rclones_fixed_point(mtime):
    micros = round(mtime * 1_000_000)
    assert format_mtime(mtime) == _fixed_point(micros)
    assert parse_mtime(format_mtime(mtime)) == pytest.approx(micros / 1e6, abs=1e-6)  # before 1970 too


def test_mtime_text_many():
    rng = random.Random(32)
    for _ in range(50_000):
        mtime = rng.uniform(-1e9, 5e9) if rng.random() < 0.5 else rng.randint(0, 5 * 10**9) + rng.randint(0, 999_999) / 1e6
        micros = round(mtime * 1_000_000)
        assert format_mtime(mtime) == _fixed_point(micros)
