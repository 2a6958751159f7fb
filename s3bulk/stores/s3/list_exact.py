"""A ListObjectsV2 page in the exact layout S3 and versitygw write, read by one regex over the
page as text and one comprehension: the fast path of wire.py's listing reader.

Why a second regex beside wire.py's: a listing's CPU is mostly its page reading (~2 us a key of the
~3.3 us `ls --json` spends, bench/README "Listing: one regex over the page as text"), and of that
half is the general regex (optional whitespace, any element before <Size>, fields in any text) and
half turning its bytes into an entry (a decode for the key, one for the ETag, a cache lookup by
bytes). Here the page is decoded once (a C loop over its bytes), the pattern admits only what S3
and versitygw write (no whitespace, the checksum fields where they put them, the class or none,
no entity in a key), so a key, an ETag and a time come out of the match as the str the entry
holds: ~1.1 us a key against ~2.0.

A page this pattern does not read whole (an entity in a key, an Owner, a RestoreStatus, another
server's order or whitespace) is counted short (each entry is one `<Contents>...</Contents>` match
or none: nothing but the named elements and their text lies between) and handed back as None:
wire.py reads it its general way. tests/test_list_parse.py and test_xml_differential.py hold both
readings to the reference parser.
"""

from __future__ import annotations

import bisect
import calendar
from datetime import datetime
from operator import attrgetter
import re

from ...model import ObjectInfo

# Every field is `[^<]*`: one negated character is the regex engine's fastest loop (a class of
# two, `[^<&]`, costs ~0.2 us a key more); what it lets through is refused after the match: an
# entity (a '&' more than the ETags' quotes) by one count over the page, a time or a storage
# class that is not plain ASCII where each distinct one is first seen.
_CHECKSUMS = r"(?:<ChecksumAlgorithm>[^<]*</ChecksumAlgorithm>)?(?:<ChecksumType>[^<]*</ChecksumType>)?"
_CLASS = r"(?:<StorageClass>([^<]*)</StorageClass>)?</Contents>"
# S3's order: Key, LastModified, ETag, the checksum fields, Size, StorageClass
_S3_ORDER = (r"<Contents><Key>([^<]*)</Key><LastModified>([^<]*)</LastModified><ETag>{q}([^<]*){q}</ETag>"
             + _CHECKSUMS + r"<Size>([0-9]+)</Size>" + _CLASS)
# versitygw's: LastModified, the checksum fields, ETag, Key, Size, StorageClass
_GATEWAY_ORDER = (r"<Contents><LastModified>([^<]*)</LastModified>" + _CHECKSUMS
                  + r"<ETag>{q}([^<]*){q}</ETag><Key>([^<]*)</Key><Size>([0-9]+)</Size>" + _CLASS)
_QUOTES = ("&quot;", "&#34;", '"')  # around an ETag, as each server writes it
_PATTERNS: dict[tuple[bool, str], re.Pattern[str]] = {}  # compiled when a page first needs one
_KEY = attrgetter("key")
_TIMES: dict[str, float] = {}  # LastModified text -> seconds: objects written together share their second
_CLASSES: dict[str, str | None] = {"": None}  # one shared str a storage class, not one a key


def entries(body: bytes, versitygw_order: bool, until: str | None) -> list[ObjectInfo] | None:
    """Every <Contents> of a page as entries, or None when some entry is not in the exact layout.
    `until`: the entries end with the first key above it (kept, so the caller sees the page went
    past its range). ValueError for bytes that are not UTF-8."""
    first = body.find(b"<ETag>")
    quote = next((q for q in _QUOTES if body.startswith(q.encode(), first + 6)), None) if first >= 0 else None
    if quote is None:
        return None
    pattern = _PATTERNS.get((versitygw_order, quote))
    if pattern is None:
        pattern = _PATTERNS[versitygw_order, quote] = re.compile(
            (_GATEWAY_ORDER if versitygw_order else _S3_ORDER).replace("{q}", re.escape(quote)))
    # each match is one whole <Contents>...</Contents> (it holds the word twice), so every entry
    # was matched exactly when the page holds the word twice as often; and no field held an
    # entity when the '&'s among the entries are the ETags' quotes. Both counted first, with a
    # look at the first entry: a page of entity keys or another layout costs ~0.2 us a key here,
    # not a whole failed matching (~1.2 us)
    words = body.count(b"Contents")
    start = body.find(b"<Contents>")
    if body.count(b"&", start, body.rfind(b"</Contents>")) != (0 if quote == '"' else words):
        return None
    text = body.decode("utf-8")
    if pattern.match(text, len(body[:start].decode("utf-8"))) is None:
        return None
    found = pattern.findall(text)
    if 2 * len(found) != words:
        return None
    try:
        out = _made(found, versitygw_order, _TIMES, _CLASSES)
    except KeyError:  # a time or class first seen (or no longer remembered): this page's own tables
        column = 0 if versitygw_order else 1
        try:
            times = {lm: timestamp(lm) for lm in {f[column] for f in found}}
            classes = {sc: _class(sc) for sc in {f[4] for f in found}}
        except ValueError:  # a LastModified or class that is not plain: read the general way
            return None
        out = _made(found, versitygw_order, times, classes)
    if until is not None and out and out[-1].key > until:
        del out[bisect.bisect_right(out, until, key=_KEY) + 1:]
    return out


def _made(found: list[tuple[str, str, str, str, str]], versitygw_order: bool, times: dict[str, float],
          classes: dict[str, str | None]) -> list[ObjectInfo]:
    """The matches as entries; KeyError when a time or a class is not in the tables. Subscripts,
    not .get() with a fallback: ~70 ns a key less (a method call and a branch a field)."""
    new = tuple.__new__
    if versitygw_order:
        return [new(ObjectInfo, (key, int(size), times[lm], etag, classes[sc])) for lm, etag, key, size, sc in found]
    return [new(ObjectInfo, (key, int(size), times[lm], etag, classes[sc])) for key, lm, etag, size, sc in found]


def timestamp(text: str) -> float:
    """LastModified of a listing ("2026-11-23T01:02:03.000Z") in seconds, remembered: the calendar
    arithmetic is most of a key's cost otherwise."""
    v = _TIMES.get(text)
    if v is None:
        if not text.isascii():  # int() reads other scripts' digits; a time is ASCII
            raise ValueError(f"not a listing time: {text!r}")
        s = text
        if len(s) >= 20 and s[4] == "-" and s[10] == "T" and s[-1] == "Z" and s[19] in ".Z":
            v = calendar.timegm((int(s[0:4]), int(s[5:7]), int(s[8:10]), int(s[11:13]), int(s[14:16]),
                                 int(s[17:19]))) + (float("0" + s[19:-1]) if len(s) > 20 else 0.0)
        else:
            v = datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
        if len(_TIMES) >= 4096:
            _TIMES.clear()
        _TIMES[text] = v
    return v


def _class(text: str) -> str | None:
    """A storage class's one shared str (None: the entry names none)."""
    if not text.isascii() or "&" in text:
        raise ValueError(f"not a storage class: {text!r}")  # read the general way
    if not text or len(_CLASSES) >= 64:
        return text or None
    name = _CLASSES[text] = text
    return name
