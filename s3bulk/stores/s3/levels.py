"""One level of a bucket (`ls --no-recursive`): ListObjectsV2 with delimiter "/", on either data path.

The answer holds Contents (the objects directly under the prefix) and CommonPrefixes (one per
"directory" below it). It is read by the reference parser (xml_reference.py), not the listing's
regexes: a level is browsed by a person a page at a time, so expat's cost per page does not
matter, and the regexes know nothing of CommonPrefixes. A key XML cannot carry (a control
character some servers refuse to write) is asked again url-encoded, as the recursive listing does.

Pages are continued by `start-after`, not by the server's continuation token: LocalStack fails
(500) on a delimiter listing's token that stands for a key outside ASCII, and a key to start after
works on every server the recursive listing runs on. The page token is the last key or prefix
given; after a prefix ("a/") the listing starts after "a/" + U+10FFFF, the highest character, so
no key under it comes again (a prefix the server gives again all the same is dropped).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from ...errors import ListingBroken, Transient
from ...model import ObjectInfo
from ..base import LevelPage
from . import xml_reference
from .pages import botocore_entries


def read_level(body: bytes, encoded: bool) -> tuple[list[ObjectInfo], list[str], bool, str | None]:
    """A ListObjectsV2 answer with CommonPrefixes: (entries, prefixes, truncated, the server's token)."""
    entries, truncated, token = xml_reference.listing(body, encoded)
    root, relaxed = xml_reference.parse(body)
    prefixes = []
    for holder in xml_reference.children(root, "CommonPrefixes"):
        value = xml_reference.text(xml_reference.child(holder, "Prefix"), relaxed)
        if value is not None:
            prefixes.append(unquote(value) if encoded else value)
    return entries, prefixes, truncated, token


_TOP = "\U0010ffff"


def start_after(prefix: str, token: str | None) -> str | None:
    """Where the page after `token` (the last key or prefix given) starts."""
    if token is None:
        return None
    return token + _TOP if token.endswith("/") and token.find("/", len(prefix)) == len(token) - 1 else token


def level_page(entries: list[ObjectInfo], prefixes: list[str], truncated: bool, token: str | None,
               url: str) -> LevelPage:
    """The page, continued after the last key or prefix it gives when the answer is truncated."""
    if token is not None and prefixes and prefixes[0] == token:
        del prefixes[0]  # a key under the last page's last prefix, rolled up into it again
    if not truncated:
        return LevelPage(entries, prefixes)
    last = max(entries[-1].key if entries else "", prefixes[-1] if prefixes else "")
    if not last:
        raise ListingBroken("listing answer says more keys follow (IsTruncated) but gives none",
                            op="list", url=url)
    return LevelPage(entries, prefixes, last)


async def lean_level(wire: Any, prefix: str, token: str | None, limit: int, url: str) -> LevelPage:
    """One page on the lean path (wire.py signs and sends it)."""
    params = {"list-type": "2", "max-keys": str(limit), "delimiter": "/"}
    if prefix:
        params["prefix"] = prefix
    after = start_after(prefix, token)
    if after is not None:
        params["start-after"] = after
    for encoded in (False, True):
        if encoded:
            params["encoding-type"] = "url"
        resp = await wire._send("GET", wire.list_path, params, {}, None, "list", url, "")
        if resp.status != 200:
            err = wire._error(resp, "list", url, "")
            if not encoded and isinstance(err, Transient):
                continue  # some servers fail with a 5xx on keys XML cannot carry: ask url-encoded
            raise err
        try:
            entries, prefixes, truncated, _ = read_level(bytes(resp.body), encoded)
            return level_page(entries, prefixes, truncated, token, url)
        except xml_reference.Malformed as exc:  # cut off, or not S3's answer: retried
            raise Transient(f"listing answer is not S3 XML ({exc})", op="list", url=url) from None
    raise AssertionError("the url-encoded answer returns or raises")


async def botocore_level(client: Any, bucket: str, prefix: str, token: str | None, limit: int,
                         url: str) -> LevelPage:
    """One page through aiobotocore; its exceptions are the caller's to translate."""
    params: dict[str, Any] = {"Bucket": bucket, "MaxKeys": limit, "Delimiter": "/"}
    if prefix:
        params["Prefix"] = prefix
    after = start_after(prefix, token)
    if after is not None:
        params["StartAfter"] = after
    encoded = False
    try:
        resp = await client.list_objects_v2(**params)
    except Exception as exc:
        if type(exc).__name__ not in ("ResponseParserError", "ParseError"):
            raise
        encoded = True  # a key the XML cannot carry: once more with url-encoded keys
        resp = await client.list_objects_v2(EncodingType="url", **params)
    entries = botocore_entries(resp.get("Contents", ()), encoded)
    prefixes = [unquote(p["Prefix"]) if encoded else p["Prefix"] for p in resp.get("CommonPrefixes", ())]
    return level_page(entries, prefixes, bool(resp.get("IsTruncated")), token, url)
