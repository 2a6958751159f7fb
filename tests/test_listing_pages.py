"""A listed page held to its unit (stores/s3/pages.py), as the S3 store applies it to every page on
both data paths: keys listed again are dropped, keys out of order, a page that cannot move on, a
token seen before and an endless run of empty pages are refused with one line. The whole
command line against servers that do these things: tests/test_hostile_suite.py (list-* modes)."""

from __future__ import annotations

import pytest

from s3bulk.errors import ListingBroken, StoreError
from s3bulk.model import ObjectInfo
from s3bulk.stores.s3.pages import EMPTY_PAGES_LIMIT, check_token, checked_page

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

URL = "s3://b/"


def infos(*keys: str) -> list[ObjectInfo]:
    return [ObjectInfo(k, 1, 0.0, "e") for k in keys]


def keys(page) -> list[str]:
    return [e.key for e in page.entries]


def test_an_ordinary_page_is_kept_whole_and_goes_on_after_its_last_key():
    page = checked_page(infos("a", "b", "c"), None, None, True, "tok", URL)
    assert keys(page) == ["a", "b", "c"] and page.next_after == "c" and page.next_token is None


def test_keys_at_or_before_the_units_start_repeat_an_earlier_page_and_are_dropped():
    page = checked_page(infos("b", "c", "d", "e"), "c", None, True, None, URL)
    assert keys(page) == ["d", "e"] and page.next_after == "e"


def test_a_key_twice_in_a_row_is_kept_once():
    assert keys(checked_page(infos("a", "b", "b", "c"), None, None, False, None, URL)) == ["a", "b", "c"]


def test_a_key_below_the_one_before_it_is_refused_as_out_of_order():
    with pytest.raises(ListingBroken, match="listing out of key order from the server: 'b' after 'c'"):
        checked_page(infos("a", "c", "b"), None, None, False, None, URL)


def test_a_repeat_after_new_keys_is_out_of_order_too():
    with pytest.raises(ListingBroken, match="out of key order"):
        checked_page(infos("d", "e", "b"), "c", None, True, None, URL)


def test_keys_past_the_units_end_are_another_units():
    page = checked_page(infos("a", "b", "x", "y"), None, "m", True, None, URL)
    assert keys(page) == ["a", "b"] and page.is_last


def test_a_truncated_page_of_repeats_without_a_token_cannot_advance():
    with pytest.raises(ListingBroken, match="does not advance"):
        checked_page(infos("a", "b"), "b", None, True, None, URL)


def test_truncated_without_a_token_or_a_key_is_refused_not_taken_for_the_end():
    with pytest.raises(ListingBroken, match="no continuation token"):
        checked_page([], None, None, True, None, URL)


def test_an_empty_truncated_page_goes_on_by_its_token():
    page = checked_page([], "a", None, True, "t1", URL)
    assert page.entries == [] and page.next_token == "t1"


def test_a_token_seen_before_is_a_loop_and_endless_empty_pages_are_stopped():
    seen: set[str] = set()
    check_token("A", seen, 1, URL)
    check_token("B", seen, 2, URL)
    with pytest.raises(ListingBroken, match="tokens loop: the server gave token 'A' again"):
        check_token("A", seen, 3, URL)
    with pytest.raises(ListingBroken, match=f"never ends: {EMPTY_PAGES_LIMIT} empty pages"):
        check_token("new", set(), EMPTY_PAGES_LIMIT, URL)


def test_a_refusal_is_final_and_names_the_listing():
    exc = ListingBroken("x", op="list", url=URL)
    assert isinstance(exc, StoreError) and not exc.retryable and str(exc) == "list s3://b/: x"
