"""Sync's decisions (engine/sync/march.py March) on plain sorted lists: which keys are copied, compared,
deleted, in milliseconds and without a store."""

from __future__ import annotations

import pytest

from s3bulk.engine.sync.march import Decision, March, march
from s3bulk.model import ObjectInfo

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def obj(key: str, size: int = 1) -> ObjectInfo:
    return ObjectInfo(key, size, 1.0, None)


def steps(decisions: list[Decision]) -> list[tuple[str, str]]:
    return [(d.step, d.rel) for d in decisions]


def test_src_only_copied_both_compared_dst_only_kept_without_delete():
    src = [obj("a"), obj("b"), obj("d")]
    dst = [obj("b"), obj("c"), obj("e")]
    assert steps(march(src, dst)) == [("copy", "a"), ("compare", "b"), ("copy", "d")]


def test_delete_removes_dst_only_keys_in_order():
    src = [obj("a"), obj("b"), obj("d")]
    dst = [obj("b"), obj("c"), obj("e")]
    got = march(src, dst, delete=True)
    assert steps(got) == [("copy", "a"), ("compare", "b"), ("delete", "c"), ("copy", "d"), ("delete", "e")]
    assert got[2].dst is not None and got[2].dst.key == "c" and got[2].src is None


def test_delete_spares_what_the_filters_exclude():
    dst = [obj("keep.log"), obj("x.txt")]
    got = march([], dst, delete=True, allows=lambda rel: not rel.endswith(".log"))
    assert steps(got) == [("delete", "x.txt")]


def test_prefixes_are_cut_before_comparing():
    src = [obj("in/a"), obj("in/b")]
    dst = [obj("out/b"), obj("out/c")]
    got = march(src, dst, "in/", "out/", delete=True)
    assert steps(got) == [("copy", "a"), ("compare", "b"), ("delete", "c")]
    assert got[1].src.key == "in/b" and got[1].dst.key == "out/b"


def test_dst_folder_marker_stays_while_src_has_that_folder():
    src = [obj("dir/x"), obj("other")]
    dst = [obj("dir/", 0), obj("gone/", 0), obj("other")]
    got = march(src, dst, delete=True)
    # "dir/" covers the source's dir/x (a local source lists files only); "gone/" covers nothing
    assert steps(got) == [("copy", "dir/x"), ("delete", "gone/"), ("compare", "other")]


def test_a_non_empty_dst_object_named_like_a_folder_is_not_a_marker():
    got = march([obj("dir/x")], [obj("dir/", 5)], delete=True)
    assert steps(got) == [("delete", "dir/"), ("copy", "dir/x")]


def test_src_folder_marker_equals_the_directory_it_became():
    src = [obj("dir/", 0), obj("dir/x")]
    got = march(src, [obj("p/dir/x")], "", "p/", has_folder=lambda key: key == "p/dir/")
    assert steps(got) == [("compare", "dir/"), ("compare", "dir/x")]
    marker = got[0].dst
    assert marker is not None and marker.key == "p/dir/" and marker.size == 0 and marker.mtime is None
    # without such a directory the marker is copied
    assert steps(march(src, [obj("dir/x")], has_folder=lambda key: False))[0] == ("copy", "dir/")


def test_keys_compare_as_utf8_bytes():
    # every store lists in UTF-8 byte order; "é" (C3 A9) sorts after "z" as bytes
    src = [obj("z"), obj("é")]
    dst = [obj("z"), obj("é")]
    assert steps(march(src, dst, delete=True)) == [("compare", "z"), ("compare", "é")]


def test_decisions_come_as_soon_as_the_destination_settles_them():
    """Fed a page at a time, nothing waits for the end of the destination's listing: the
    worker holds one page of each side, whatever the bucket's size."""
    m = March([obj("a"), obj("c"), obj("e")], "", "", delete=True)
    assert steps(m.dst(obj("b"))) == [("copy", "a"), ("delete", "b")]
    assert steps(m.dst(obj("c"))) == [("compare", "c")]
    assert steps(m.dst(obj("z"))) == [("copy", "e"), ("delete", "z")]
    assert steps(m.end()) == []
    assert steps(March([obj("a")], "", "").end()) == [("copy", "a")]
