"""The local filesystem lists keys in S3's order (UTF-8 bytes of the whole key), page by page."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from conftest import write_tree
from s3bulk.model import WorkUnit
from s3bulk.stores.local.store import LocalStore
from s3bulk.config.urls import parse_location

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

TRICKY = ["a", "a-b", "a.b", "a/b-c", "a/b/c", "a/b.c", "a0", "a b", "a+b", "a%20b", "a?b", "a#b",
          "b/ü", "b/z", "b/é/x", "b/e\u0301", "日本/語", "Z", "_x", "~y", "zz/a/b/c/d/e"]


def _utf8_sorted(keys):
    return sorted(keys, key=lambda k: k.encode("utf-8"))


def _list_all(store: LocalStore, prefix: str = "", page: int = 1000, unit: WorkUnit | None = None):
    async def go():
        keys = []
        u = unit or WorkUnit()
        pages = 0
        while u is not None:
            p = await store.list_page(prefix, u, page)
            keys += [e.key for e in p.entries]
            pages += 1
            u = u.rest(p)
        return keys, pages
    return asyncio.run(go())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    # "a" is a directory here, so the file "a" of TRICKY lives elsewhere
    root = tmp_path / "src"
    write_tree(root, {k: k.encode() for k in TRICKY if k != "a"})
    return root


def test_listing_is_in_utf8_byte_order_of_the_whole_key(tree):
    keys, _ = _list_all(LocalStore(parse_location(str(tree))))
    expected = _utf8_sorted(k for k in TRICKY if k != "a")
    assert keys == expected


@pytest.mark.parametrize("page", [1, 2, 3, 7, 1000])
def test_paging_by_start_after_covers_every_key_once(tree, page):
    keys, pages = _list_all(LocalStore(parse_location(str(tree))), page=page)
    assert keys == _utf8_sorted(k for k in TRICKY if k != "a")
    assert pages >= len(keys) // page


def test_prefix_limits_listing(tree):
    store = LocalStore(parse_location(str(tree)))
    assert _list_all(store, "a/")[0] == _utf8_sorted(k for k in TRICKY if k.startswith("a/"))
    assert _list_all(store, "a/b")[0] == _utf8_sorted(k for k in TRICKY if k.startswith("a/b"))
    assert _list_all(store, "b/")[0] == _utf8_sorted(k for k in TRICKY if k.startswith("b/"))
    assert _list_all(store, "nothing/")[0] == []


def test_key_range_unit_stops_at_until(tree):
    store = LocalStore(parse_location(str(tree)))
    everything = _utf8_sorted(k for k in TRICKY if k != "a")
    after, until = everything[3], everything[12]
    keys, _ = _list_all(store, page=2, unit=WorkUnit(after=after, until=until))
    assert keys == everything[4:13]


def test_unfinished_temporary_files_are_not_listed(tree):
    (tree / "a" / ".s3bulk-123-4.s3bulk.part").write_bytes(b"partial")
    keys, _ = _list_all(LocalStore(parse_location(str(tree))))
    assert not any(".s3bulk-" in k for k in keys)


def test_symlinked_directories_are_not_followed(tree, tmp_path):
    os.symlink(tree, tree / "loop")
    keys, _ = _list_all(LocalStore(parse_location(str(tree))))
    assert not any(k.startswith("loop/") for k in keys)
