"""The download's mark in the file's atime (stores/file_times.py atime_mark): a re-sync S3 -> local
reads it from the listing's stat, with no getxattr a file, and falls back to the COPY_OF xattr
wherever the atime proves nothing, so nothing that the xattr decided right is decided otherwise."""

from __future__ import annotations

import asyncio
import os
import pickle

import pytest

from s3bulk.config.urls import parse_location
from s3bulk.engine.sync.march import Comparator
from s3bulk.model import ObjectInfo, WorkUnit
from s3bulk.stores import file_times
from s3bulk.stores.file_times import Listed
from s3bulk.stores.local.store import LocalStore

pytestmark = pytest.mark.unit

LAST_MODIFIED = 1_764_300_000.125  # the object's, as an S3 listing gives it (to the millisecond)
STORED = 1_700_000_000.123456  # its x-amz-meta-mtime: the file's time


class S3ish:
    class features:
        props = "s3"


def _downloaded(tmp_path, data: bytes = b"abc") -> tuple[LocalStore, Comparator]:
    """A file as a download of an object whose stored time is older than its LastModified leaves it."""
    dst = LocalStore(parse_location(f"{tmp_path}/"))
    asyncio.run(dst.put_marked("k", data, STORED, LAST_MODIFIED))
    return dst, Comparator("default", S3ish(), dst, None)


def _listed(dst: LocalStore) -> ObjectInfo:
    (entry,) = dst.list_page_sync("", WorkUnit(), 1000).entries
    return entry


def _xattrs(dst: LocalStore) -> bool:
    return dst.copy_of("k") is not None


def _no_getxattr(dst: LocalStore, monkeypatch) -> None:
    def read(key):
        raise AssertionError("the atime proves the mark: no getxattr")

    monkeypatch.setattr(dst, "copy_of", read)


def test_a_download_marks_the_atime_and_a_resync_needs_no_xattr(tmp_path, monkeypatch) -> None:
    dst, comparator = _downloaded(tmp_path)
    st = os.stat(tmp_path / "k")
    assert st.st_mtime == STORED  # the stored time to the microsecond, as before
    assert st.st_atime_ns == file_times.atime_mark(LAST_MODIFIED, STORED)
    d = _listed(dst)
    assert isinstance(d, Listed) and d.atime_ns == st.st_atime_ns
    assert d == ObjectInfo("k", 3, st.st_mtime, None)  # the public type's value, unchanged
    _no_getxattr(dst, monkeypatch)
    s = ObjectInfo("k", 3, LAST_MODIFIED, "etag")
    assert comparator.differs_now(s, d) is False
    assert comparator.differs_now(ObjectInfo("k", 4, LAST_MODIFIED, "etag"), d) is True  # size: copied


def test_the_object_rewritten_since_is_copied_again(tmp_path) -> None:
    dst, comparator = _downloaded(tmp_path)
    d = _listed(dst)
    newer = ObjectInfo("k", 3, LAST_MODIFIED + 60, "etag2")
    verdict = comparator.differs_now(newer, d)
    assert verdict is (True if _xattrs(dst) else None)  # no mark of it: copied, or S3 asked


def test_an_atime_moved_by_a_read_falls_back_to_the_xattr(tmp_path) -> None:
    dst, comparator = _downloaded(tmp_path)
    st = os.stat(tmp_path / "k")
    os.utime(tmp_path / "k", ns=(st.st_atime_ns + 3_600 * 10**9 + 17, st.st_mtime_ns))  # as relatime would
    calls = []
    real = dst.copy_of

    def copy_of(key):
        calls.append(key)
        return real(key)

    dst.copy_of = copy_of  # type: ignore[method-assign]
    d = _listed(dst)
    verdict = comparator.differs_now(ObjectInfo("k", 3, LAST_MODIFIED, "etag"), d)
    assert calls == ["k"]
    assert verdict is (False if _xattrs(dst) else None)  # the xattr's mark; without xattrs S3 is asked


def test_the_right_atime_with_another_mtime_is_not_the_mark(tmp_path) -> None:
    """A file rewritten after its download (same size) and its mtime set back, its atime kept, as
    `touch -m -d` leaves it: not taken as the object's copy."""
    dst, comparator = _downloaded(tmp_path)
    st = os.stat(tmp_path / "k")
    (tmp_path / "k").write_bytes(b"xyz")
    for shift_us in (3, 7, 999_999, 3_600_000_000):  # (the xattr allows 2 us: a float's error)
        os.utime(tmp_path / "k", ns=(st.st_atime_ns, st.st_mtime_ns - shift_us * 1000))
        d = _listed(dst)
        assert isinstance(d, Listed) and d.atime_ns == st.st_atime_ns
        verdict = comparator.differs_now(ObjectInfo("k", 3, LAST_MODIFIED, "etag"), d)
        assert verdict is (True if _xattrs(dst) else None), shift_us  # copied, or S3 asked


def test_a_file_modified_after_its_download_is_copied_only_as_the_times_say(tmp_path) -> None:
    """Written after the download (its mtime now, newer than the object): the default rule keeps it,
    as before the marks (the source is not newer); --exact-timestamps copies it."""
    dst, _ = _downloaded(tmp_path)
    (tmp_path / "k").write_bytes(b"xyz")
    d = _listed(dst)
    s = ObjectInfo("k", 3, LAST_MODIFIED, "etag")
    assert d.mtime is not None and d.mtime > LAST_MODIFIED
    assert Comparator("default", S3ish(), dst, None).differs_now(s, d) is False
    assert Comparator("exact-timestamps", S3ish(), dst, None).differs_now(s, d) is not False


def test_a_big_downloads_mark_by_path_keeps_the_mtime_to_the_ns(tmp_path, monkeypatch) -> None:
    dst = LocalStore(parse_location(f"{tmp_path}/"))
    (tmp_path / "k").write_bytes(b"abc")
    os.utime(tmp_path / "k", (STORED, STORED))  # as the multipart file's complete() sets it
    before = os.stat(tmp_path / "k").st_mtime_ns
    dst.mark_copy_of("k", LAST_MODIFIED, STORED)
    assert os.stat(tmp_path / "k").st_mtime_ns == before
    comparator = Comparator("default", S3ish(), dst, None)
    d = _listed(dst)
    _no_getxattr(dst, monkeypatch)
    assert comparator.differs_now(ObjectInfo("k", 3, LAST_MODIFIED, "etag"), d) is False


def test_only_a_comparator_reading_marks_lists_atimes(tmp_path) -> None:
    dst, _ = _downloaded(tmp_path)
    plain = LocalStore(parse_location(f"{tmp_path}/"))
    entry = _listed(plain)
    assert type(entry) is ObjectInfo  # off: the listing is as it was
    Comparator("default", plain, plain, None)  # local -> local: no marks read
    assert type(_listed(plain)) is ObjectInfo
    listed = _listed(dst)
    assert pickle.loads(pickle.dumps(listed)).atime_ns == listed.atime_ns  # type: ignore[attr-defined]


def test_the_atime_check_tells_close_mtimes_apart() -> None:
    for lm in (LAST_MODIFIED, 0.0, -86_400.5, 4_102_444_800.999):
        for t in (STORED, -1.25, 0.0, 1.000001):
            a = file_times.atime_mark(lm, t)
            assert abs(a / 1e9 - lm) < 1e-3  # a time near the object's LastModified
            assert file_times.atime_proves(a, lm, t)
            assert not file_times.atime_proves(a, lm + 0.001, t)
            assert not any(file_times.atime_proves(a, lm, t + us / 1e6) for us in range(1, 2000))
            assert not any(file_times.atime_proves(a, lm, t + us / 1e6) for us in range(-2000, 0))
