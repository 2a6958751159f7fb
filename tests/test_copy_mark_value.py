"""The copy mark's value (stores/file_times.py mark_value) and the re-sync's request-free look
(engine/sync/march.py Comparator.differs_now) that reads it back."""

from __future__ import annotations

import os
import random

import pytest

from s3bulk.engine.sync.march import Comparator
from s3bulk.model import ObjectInfo
from s3bulk.stores import file_times

pytestmark = pytest.mark.unit


def test_mark_value_reads_back_within_what_the_comparison_allows() -> None:
    rng = random.Random(7)
    for t in [0.0, 1.5, -1.5, -86400.25, 1_700_000_000.0, 1_764_300_000.123456, 4_102_444_800.999999]:
        for lm in (t, t + rng.uniform(0, 1e6)):
            a, b = (float(x) for x in file_times.mark_value(lm, t).split())
            assert abs(a - lm) < 1e-3 and abs(b - t) < 1e-6


def test_differs_now_answers_from_the_mark_and_leaves_an_unmarked_file_to_a_request(tmp_path) -> None:
    from s3bulk.config.urls import parse_location
    from s3bulk.stores.local.store import LocalStore

    if not hasattr(os, "setxattr"):
        pytest.skip("no xattrs here")
    dst = LocalStore(parse_location(f"{tmp_path}/"))
    (tmp_path / "k").write_bytes(b"abc")
    stored = 1_700_000_000.123456
    os.utime(tmp_path / "k", (stored, stored))
    d = ObjectInfo("k", 3, os.stat(tmp_path / "k").st_mtime, None)
    s = ObjectInfo("k", 3, 1_700_000_100.0, "etag")  # LastModified: later than the file's time

    class S3ish:
        class features:
            props = "s3"

    comparator = Comparator("default", S3ish(), dst, None)
    assert comparator.differs_now(s, d) is None  # no mark: differs_later asks S3 (a HEAD)
    try:
        dst.mark_copy_of("k", s.mtime, stored)
    except OSError:
        pytest.skip("this filesystem keeps no user xattrs")
    if dst.copy_of("k") is None:
        pytest.skip("this filesystem keeps no user xattrs")
    assert comparator.differs_now(s, d) is False  # the download's mark: the same object, no request
    newer = ObjectInfo("k", 3, 1_700_000_200.0, "etag2")
    assert comparator.differs_now(newer, d) is True  # the object changed since: copied again
