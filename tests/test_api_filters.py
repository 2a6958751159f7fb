"""The Python API's filter keywords, the same on every call that filters (copy, sync, move, rm,
ls, du, check): each reaches the engine, sync's delete spares what they leave out, ages take a
timedelta or a datetime; and `ls(url, recursive=False)`, one level as objects and prefixes. No
server: the in-memory store and local directories."""

from __future__ import annotations

import inspect
import time
from datetime import datetime, timedelta, timezone

import pytest

import s3bulk
from s3bulk import api
from s3bulk.errors import UsageError

pytestmark = pytest.mark.unit

ONE = s3bulk.TransferOptions(workers=1)
OLD = time.time() - 10 * 86400  # ten days ago


@pytest.fixture
def filled(two_memory_buckets):
    """SRC holds small and big objects, one of them old; returns (src url, dst url, src, dst buckets)."""
    s, sb, d, db = two_memory_buckets
    sb.put("t/small.txt", b"x")
    sb.put("t/big.bin", b"y" * 5000)
    sb.put("t/d/old.bin", b"z" * 3000, mtime=OLD)
    return f"memory://{s}/t/", f"memory://{d}/t/", sb, db


def test_every_filtering_call_takes_the_same_filter_keywords():
    names = ("include", "exclude", "filters", "min_size", "max_size", "min_age", "max_age", "include_from",
             "exclude_from", "filter_from", "max_depth", "exclude_if_present")
    for fn in (s3bulk.copy, s3bulk.sync, s3bulk.watch, s3bulk.move, s3bulk.check, s3bulk.rm, s3bulk.ls,
               s3bulk.ls_pages, s3bulk.du, api.copy_versions, api.du_groups, api.ls_rendered):
        params = inspect.signature(fn).parameters
        assert [n for n in names if n not in params] == [], fn.__name__


def test_copy_and_move_keep_only_what_the_size_and_age_filters_keep(filled):
    src, dst, sb, db = filled
    assert s3bulk.copy(src, dst, options=ONE, min_size="1KiB", max_age=timedelta(days=1)).ok
    assert sorted(db.contents("t/")) == ["big.bin"]
    assert s3bulk.move(src, dst, options=ONE, max_size=100).ok
    assert sorted(db.contents("t/")) == ["big.bin", "small.txt"] and "t/small.txt" not in sb.objects


def test_sync_delete_spares_what_a_filter_leaves_out(filled):
    src, dst, sb, db = filled
    db.put("t/extra-small", b"e")
    db.put("t/extra-big.bin", b"e" * 4000)
    summary = s3bulk.sync(src, dst, delete=True, options=ONE, min_size="2KiB")
    assert summary.ok
    assert sorted(db.contents("t/")) == ["big.bin", "d/old.bin", "extra-small"], "extra-small is not SRC's business"


def test_rm_with_a_rules_file_and_a_depth(filled, tmp_path):
    src, _, sb, _ = filled
    rules = tmp_path / "rules"
    rules.write_text("# keep the text\n- *.txt\n+ *\n")
    result = s3bulk.rm(src, filter_from=rules, max_depth=1)
    assert result.ok and result.deleted == 1
    assert sorted(sb.contents("t/")) == ["d/old.bin", "small.txt"]


def test_ls_and_du_count_only_what_the_filters_keep(filled):
    src, _, _, _ = filled
    long_ago = datetime.fromtimestamp(OLD + 3600, timezone.utc)
    assert [o.key for o in s3bulk.ls(src, min_age=long_ago)] == ["t/d/old.bin"]
    assert [o.key for o in s3bulk.ls(src, min_age="1d")] == ["t/d/old.bin"]
    assert [o.key for page in s3bulk.ls_pages(src, exclude=["d/*", "*.txt"]) for o in page] == \
        ["t/big.bin"]
    du = s3bulk.du(src, min_size=1000)
    assert (du.objects, du.bytes) == (2, 8000)
    assert s3bulk.du(src, filters=[("exclude", "*"), ("include", "*.txt")]).objects == 1


def test_a_naive_datetime_is_utc(filled):
    src, _, _, _ = filled
    cut = datetime.fromtimestamp(OLD + 60, timezone.utc).replace(tzinfo=None)
    assert [o.key for o in s3bulk.ls(src, min_age=cut)] == ["t/d/old.bin"]


def test_check_compares_only_what_the_filters_keep(filled):
    src, dst, sb, db = filled
    assert s3bulk.copy(src, dst, options=ONE).ok
    db.put("t/only-in-dst.tmp", b"t")
    sb.put("t/only-in-src.tmp", b"t")
    assert not s3bulk.check(src, dst, options=ONE).identical
    result = s3bulk.check(src, dst, options=ONE, exclude=["*.tmp"])
    assert result.identical, result
    assert s3bulk.check(src, dst, options=ONE, max_size=10).only_in_src == 1


def test_bad_filter_keywords_are_one_usage_error(filled):
    src, dst, _, _ = filled
    with pytest.raises(UsageError, match="--min-size"):
        s3bulk.copy(src, dst, min_size="lots")
    with pytest.raises(UsageError, match="--max-age"):
        s3bulk.du(src, max_age="someday")
    with pytest.raises(UsageError, match="min_age takes"):
        s3bulk.du(src, min_age=3.5)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="--max-depth"):
        list(s3bulk.ls(src, max_depth=0))


def test_ls_one_level_gives_objects_and_prefixes_in_key_order(two_memory_buckets, tmp_path):
    s, sb, _, _ = two_memory_buckets
    for key in ("p/a.txt", "p/b/1", "p/b/2", "p/c.txt", "p/d/e/f"):
        sb.put(key, b"1")
    rows = list(s3bulk.ls(f"memory://{s}/p/", recursive=False))
    assert [r if isinstance(r, str) else r.key for r in rows] == ["p/a.txt", "p/b/", "p/c.txt", "p/d/"]
    assert all(r.size == 1 for r in rows if not isinstance(r, str))
    (tmp_path / "x" / "y").mkdir(parents=True)
    (tmp_path / "x" / "f").write_bytes(b"ff")
    local = list(s3bulk.ls(str(tmp_path / "x"), recursive=False))
    assert [r if isinstance(r, str) else (r.key, r.size) for r in local] == [("f", 2), "y/"]
    with pytest.raises(UsageError, match="takes no filters"):
        list(s3bulk.ls(f"memory://{s}/p/", recursive=False, include=["*.txt"]))


def test_ls_async_one_level(two_memory_buckets):
    import asyncio

    s, sb, _, _ = two_memory_buckets
    sb.put("q/a", b"1")
    sb.put("q/z/b", b"1")

    async def listed() -> list[object]:
        return [r if isinstance(r, str) else r.key async for r in s3bulk.ls_async(f"memory://{s}/q/", recursive=False)]

    assert asyncio.run(listed()) == ["q/a", "q/z/"]
