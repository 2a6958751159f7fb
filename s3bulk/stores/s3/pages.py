"""A listed page checked against the unit that asked for it, before anything downstream sees it.

Everything after the listing (units split for parallel listing, the resume journal's key ranges,
sync's march, the worker's copies) assumes what S3 promises: a page's keys are strictly increasing,
all above the `start-after` it was asked with, and each page of a unit moves the listing on. A
server that breaks that promise (a broken gateway, a proxy that caches pages, a bug) used to have
the same key copied twice at once by two units, or the journal fed a range that ends before it
begins. Here each page is held to the promise:

- a key at or below the unit's start (`after`) was listed before, by this unit or an earlier one:
  dropped, so a key listed twice is copied once;
- a key equal to the one before it on the page: dropped likewise;
- a key below the one before it: the listing is out of key order, and nothing that depends on the
  order can be trusted: refused (`ListingBroken`), with one line naming the two keys;
- a key above the unit's end (`until`): another unit's; the page ends there (as it always did);
- a truncated page whose keys were all dropped and that carries no continuation token cannot move
  on: refused ("listing does not advance"), instead of asking the same page forever;
- empty truncated pages are followed by their tokens inside one `list_page` call, at most
  `EMPTY_PAGES_LIMIT` in a row; a token seen before in that chain is a loop, refused naming it.
  (Real S3 may answer an empty page that goes on, rarely and a few in a row; a thousand is not
  a listing but a server that never ends.)

A refusal is a `ListingBroken`: a StoreError that is not retried (asking again gets the same
answer) and stops the run with one line.
"""

from __future__ import annotations

from typing import Any, Iterable
from urllib.parse import unquote

from ...errors import ListingBroken
from ...model import ObjectInfo, Page

EMPTY_PAGES_LIMIT = 1000  # empty truncated pages in a row that one unit follows before refusing


def botocore_entries(contents: Iterable[dict[str, Any]], encoded: bool) -> list[ObjectInfo]:
    """A botocore listing's `Contents` as entries (keys url-decoded when the listing was asked with
    EncodingType=url, for a key XML cannot carry): the one reading of both listings' answers."""
    entries = []
    for c in contents:
        etag = c.get("ETag")
        entries.append(ObjectInfo(unquote(c["Key"]) if encoded else c["Key"], c["Size"],
                                  c["LastModified"].timestamp(), etag.strip('"') if etag else None,
                                  c.get("StorageClass")))
    return entries


def checked_page(entries: list[ObjectInfo], after: str | None, until: str | None, truncated: bool,
                 token: str | None, url: str) -> Page:
    """The page the unit `(after, until]` may use from one listed answer, with where the next starts."""
    kept = _in_order(entries, after, url)
    if until is not None and kept and kept[-1].key > until:
        return Page([e for e in kept if e.key <= until])
    if not truncated:
        return Page(kept)
    if kept:
        return Page(kept, next_after=kept[-1].key)
    if token:
        return Page(kept, next_token=token)
    if entries:
        raise ListingBroken(f"listing does not advance: the server answered keys at or before "
                            f"{after!r} again, and more to come", op="list", url=url)
    raise ListingBroken("listing answer says more keys follow (IsTruncated) but gives no continuation token",
                        op="list", url=url)


def _in_order(entries: list[ObjectInfo], after: str | None, url: str) -> list[ObjectInfo]:
    """The entries above `after`, each key once; refused when a key comes below the one before it."""
    last = after
    kept: list[ObjectInfo] | None = None  # a copy only once something is dropped (the usual page keeps all)
    for i, e in enumerate(entries):
        key = e.key
        if last is None or key > last:
            last = key
            if kept is not None:
                kept.append(e)
            continue
        # at the page's start, keys at or below `after` repeat an earlier page; later, a key equal
        # to the one before it is listed twice: either way, once is enough
        if key == last or last == after:
            if kept is None:
                kept = list(entries[:i])
            continue
        raise ListingBroken(f"listing out of key order from the server: {key!r} after {last!r}",
                            op="list", url=url)
    return entries if kept is None else kept


def check_token(token: str, seen: set[str], empties: int, url: str) -> None:
    """Before following `token` from an empty truncated page: refuse a loop or a listing without end."""
    if token in seen:
        raise ListingBroken(f"listing continuation tokens loop: the server gave token {token!r} again",
                            op="list", url=url)
    if empties >= EMPTY_PAGES_LIMIT:
        raise ListingBroken(f"listing never ends: {empties} empty pages in a row, each saying more keys follow",
                            op="list", url=url)
    seen.add(token)
