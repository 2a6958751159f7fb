"""How long a bounded key range still is, judged from its first page, and where to cut it evenly.

`ls` lists a bucket through many key ranges at once (split.py); a range cut at a character
boundary (units.py) can hold one page or a hundred. Listed one page a round trip, a range of ten
pages takes ten rounds while the ranges beside it are done: at 200k numbered keys, after the
second round only ~20 requests were in flight. Cutting every range finer costs one request per
range (the request that learns it is over), so finer cuts everywhere cost more than they save.

Here a range's pages tell how long it is: the page's keys, read as numbers in the alphabet its
names use (digits, hex, letters), cover some width of key space; the rest of the range, up to its
end, covers some more; their ratio is about how many pages are left, where keys spread evenly
over the range: numbered and hashed names. (Dated paths are left to units.py's cuts at each
field's next values: days and months fill only part of their digits' space.) A range that holds
more than about 1.5 pieces is cut into pieces of about `PAGES_PER_PIECE` pages, each cut half a page away from where a page
is expected to end, so a piece does not end exactly where a full page ends (that costs a request
to learn nothing follows). A wrong guess costs requests, never keys: any cuts cover the range
exactly (units.py).
"""

from __future__ import annotations

from itertools import zip_longest
from typing import Sequence

PAGES_PER_PIECE = 4  # pieces: one request each to learn they ended, so ~1/4 more requests at most
DIGITS = "0123456789"
HEX = "0123456789abcdef"
LOWER = "abcdefghijklmnopqrstuvwxyz"
ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
PRINTABLE = "".join(chr(c) for c in range(0x20, 0x7f))
_ALPHABETS = (DIGITS, HEX, LOWER, DIGITS + LOWER, ALNUM, PRINTABLE)


def even_cuts(sample: Sequence[str], until: str, most: int, per_piece: int = PAGES_PER_PIECE) -> list[str] | None:
    """At most `most` increasing keys strictly between the last key of `sample` (a full page, in
    order) and `until`, cutting that range into pieces of about `per_piece` pages; [] when the range
    is short enough to list on as it is, None when its length cannot be judged (names outside
    printable ASCII, a page of one key)."""
    first, last = sample[0], sample[-1]
    if not first < last < until:
        return None
    cp = first_difference(first, until)
    d = first_difference(first, last)
    digits = _digits(sample, until, cp, d, d + 2)  # enough positions to see the page's width, and finer
    if digits is None:
        return None
    lo, hi, end = (_value(k, cp, digits) for k in (first, last, until))
    width = hi - lo
    if width <= 0 or end <= hi:
        return None
    pages = (end - hi) / width
    pieces = min(int(pages / per_piece + 0.5), most + 1)
    if pieces < 2:
        return []
    step = pages / pieces
    cuts: list[str] = []
    for k in range(1, pieces):
        # half a page past where a page is expected to end: a piece that ends exactly where a full
        # page ends needs one more request to learn that nothing follows
        cut = _key(hi + width * (k * step + 0.5), first[:cp], digits[:d + 2 - cp])
        if last < cut < until and (not cuts or cut > cuts[-1]):
            cuts.append(cut)
    return cuts


def first_difference(a: str, b: str) -> int:
    """The index of the first character where a and b differ (the shorter's length if none)."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _digits(sample: Sequence[str], until: str, cp: int, d: int, depth: int) -> list[str] | None:
    """The alphabet of each position cp..depth-1: one character where the names hold fixed text
    there (`/`, `-`, `day=`: the page's keys all have it, and it is no digit or letter of a
    counter), else the smallest known alphabet holding every varying character (digits, hex, ...)."""
    seen = [*sample[::50], sample[-1]]
    columns = [{k[j] for k in seen if len(k) > j} for j in range(cp, depth)]
    if columns and cp < len(until):
        columns[0].add(until[cp])
    fixed = [len(col) == 1 and not _counter(seen[0], j) for j, col in zip(range(cp, depth), columns)]
    varying = set().union(*(col for col, f in zip(columns, fixed) if not f)) if columns else set()
    alphabet = next((a for a in _ALPHABETS if varying.issubset(a)), None)
    if alphabet is None:
        return None
    if any(fixed):
        # fixed text where the range and the page vary (`month=01/day=05/part-`): fields like
        # days and months fill only part of their digits' space, and a page's width in them says
        # little, so even cuts would mostly fall where no key is (dated paths: 1.2-1.8x the
        # requests); units.py's cuts at each field's next values are better there. Hashes cut
        # into directories (`ab/cd/abcd1234...`) fill every value of each field: cut evenly there
        # (without: 1M such keys took 16 chains of ~60 pages each, 15 rounds at 200k)
        # (the range's end may be past the hex digits: `g`, a cut after `f`)
        separators = all(f is False or not c.isalnum() for col, f in zip(columns, fixed) for c in col)
        listed = {k[j] for k in seen for j, f in zip(range(cp, depth), fixed) if not f and len(k) > j}
        if not separators or not listed.issubset(HEX) or not hex_letters(seen, cp, depth + 8):
            return None
        alphabet = HEX
    return [next(iter(col)) if f else alphabet for col, f in zip(columns, fixed)]


def hex_letters(seen: Sequence[str], cp: int, depth: int) -> bool:
    """The keys vary in hex digits, letters among them, somewhere in positions cp..depth-1: hashed
    names (a date's or a counter's fields vary in decimal digits only). The positions' columns come
    from one transposition in C (zip_longest, a short key's missing positions as ""), not a set
    comprehension a position: ran once a page over ~50 positions, 5% of a dated `ls`'s CPU."""
    for column in zip_longest(*[k[cp:depth] for k in seen], fillvalue=""):
        col = set(column)
        col.discard("")
        if len(col) > 1 and col.issubset(HEX) and not col.issubset(DIGITS):
            return True
    return False


def _counter(key: str, j: int) -> bool:
    """key[j] could be a digit of a counter or hash: a digit or a letter not in a word (a run of
    three letters or more: `part`, `day`)."""
    if j >= len(key):
        return False
    c = key[j]
    if c.isdigit():
        return c.isascii()
    return c.isascii() and c.isalpha() and not in_word(key, j)


def in_word(key: str, j: int) -> bool:
    """key[j] is an ASCII letter in a run of three or more (`year=`, `month=`, `part-`): fixed text,
    whose next letters are ranges that hold no key (dated paths, 1M keys: ~500 empty listings).
    Hex digits of hashed names rarely run three letters long."""
    if not key[j].isascii() or not key[j].isalpha():
        return False
    a = b = j
    while a > 0 and key[a - 1].isascii() and key[a - 1].isalpha():
        a -= 1
    while b + 1 < len(key) and key[b + 1].isascii() and key[b + 1].isalpha():
        b += 1
    return b - a >= 2


def _value(key: str, cp: int, digits: list[str]) -> float:
    """key[cp:] as a fraction in [0, 1), one digit of each position's alphabet (a fixed position
    counts nothing; a shorter key sorts before its extensions: missing positions count as zero)."""
    v, scale = 0.0, 1.0
    for c, alphabet in zip(key[cp:], digits):
        if len(alphabet) == 1:
            if c != alphabet:  # fixed text ends here: the rest tells nothing more
                v += scale * (0.0 if c < alphabet else 1.0)
                break
            continue
        scale /= len(alphabet)
        i = alphabet.find(c)
        if i < 0:  # past the alphabet (`g` after hex digits): the end of this position's space
            v += scale * (len(alphabet) if c > alphabet[-1] else 0)
            break
        v += scale * i
    return v


def _key(v: float, head: str, digits: list[str]) -> str:
    """The key `head` + the digits of `v` (a fraction), one per position's alphabet, without
    trailing zero digits (they add nothing to where it cuts)."""
    out = []
    for alphabet in digits:
        if len(alphabet) == 1:
            out.append(alphabet)
            continue
        v *= len(alphabet)
        i = min(int(v), len(alphabet) - 1)
        out.append(alphabet[i])
        v -= i
    return head + "".join(out).rstrip(digits[-1][0] if len(digits[-1]) > 1 else "")
