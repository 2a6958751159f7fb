"""A file's modification time carried through S3 as user metadata, as rclone and mc keep it.

S3 keeps no file time: an object's LastModified is when it was written. rclone stores the file's
time in `x-amz-meta-mtime` as seconds since the epoch in fixed point with up to nine decimals and
the trailing zeros dropped ("1700000000.123456789", "1700000000" for a whole second: the swift
library's TimeToFloatString); mc keeps it among `x-amz-meta-mc-attrs` ("atime:...#ns/mtime:SECONDS#NS/...").
s3bulk writes rclone's key, so each tool reads the other's uploads, and reads both.

A download that set a file's time from the metadata marks the file (`COPY_OF`, a user xattr
holding the object's LastModified and the time set): S3's listing carries no metadata, so a later
sync sees LastModified (newer than the file) and would copy the object again; the mark tells it,
without a request, that the file is that very object (engine/sync/march.py Comparator).

The download also writes the mark where the listing already looks, so a re-sync needs no getxattr a
file: the file's atime is set to the object's LastModified to the millisecond, its nanoseconds
below the millisecond a check of the two (`atime_mark`). The local listing hands the atime on
(`Listed`) when the comparator asks for it; an atime that proves nothing (moved by a read under
relatime, cut by a filesystem's coarser times, another tool's file) leaves the xattr to decide.
"""

from __future__ import annotations

import re
from typing import Mapping, Protocol, runtime_checkable

from ..model import ObjectInfo, ObjectProps

MTIME_KEY = "mtime"          # x-amz-meta-mtime, rclone's
MC_ATTRS_KEY = "mc-attrs"    # x-amz-meta-mc-attrs, mc's --preserve
COPY_OF = "user.s3bulk.copy-of"  # on a downloaded file: "<object's LastModified> <mtime set>"



@runtime_checkable
class CopyMarks(Protocol):
    """A store whose files keep the mark (COPY_OF) of the object each was downloaded from: the
    local store. Asked by the sync's comparator (engine/sync/march.py) and the transfer."""

    def mark_copy_of(self, key: str, last_modified: float, mtime: float) -> None: ...

    async def put_marked(self, key: str, data: bytes, mtime: float, last_modified: float, *,
                         props: ObjectProps | None = None) -> None:
        """put() of a downloaded object's file, marked (mark_copy_of) as it is written, not after."""
        ...

    def copy_of(self, key: str) -> tuple[float, float] | None: ...

    def list_atimes(self) -> None:
        """From now on, list files as `Listed` (with their atimes): asked by a comparator that reads marks."""
        ...


class Listed(ObjectInfo):
    """A local file as listed for a comparator that reads marks: an ObjectInfo (equal to one, the
    public type unchanged) that also holds the file's atime in ns, where the download's mark may be
    (`atime_mark`). Store-private: only a local store lists these, and only once asked (list_atimes)."""

    atime_ns: int


_FIXED = re.compile(r"-?\d{1,12}(?:\.\d{0,30})?")
_MC_MTIME = re.compile(r"(?:^|/)mtime:(\d{1,12})(?:#(\d{1,9}))?(?:/|$)")


def format_mtime(mtime: float) -> str:
    """rclone's form of a time: fixed point, to the microsecond (a float of seconds holds no more
    at today's dates), trailing zeros dropped."""
    micros = round(mtime * 1_000_000)
    if micros >= 1_000_000:  # every upload's (after 1970-01-01 00:00:01): cut from the digits, no divmod
        digits = str(micros)
        decimals = digits[-6:].rstrip("0")
        return f"{digits[:-6]}.{decimals}" if decimals else digits[:-6]
    sign = "-" if micros < 0 else ""  # before 1970: divmod floors (-1.25 s would read -2 + 0.75)
    whole, frac = divmod(abs(micros), 1_000_000)
    return f"{sign}{whole}.{frac:06d}".rstrip("0").rstrip(".") if frac else f"{sign}{whole}"


def parse_mtime(text: str) -> float | None:
    """Seconds since the epoch from rclone's fixed-point string or a plain integer; None when the
    value is anything else (a user's own `mtime` key in another form is left alone)."""
    text = text.strip()
    if not _FIXED.fullmatch(text):
        return None
    return float(text)


def stored_mtime(metadata: tuple[tuple[str, str], ...] | None) -> float | None:
    """The file time an object's user metadata carries (rclone's key first, then mc's), or None."""
    if not metadata:
        return None
    mc: float | None = None
    for key, value in metadata:
        k = key.lower()
        if k == MTIME_KEY:
            found = parse_mtime(value)
            if found is not None:
                return found
        elif k == MC_ATTRS_KEY and mc is None:
            m = _MC_MTIME.search(value)
            if m is not None:
                mc = int(m.group(1)) + (int(m.group(2).ljust(9, "0")) / 1e9 if m.group(2) else 0.0)
    return mc


_MTIME_HEADER, _MC_ATTRS_HEADER = "x-amz-meta-" + MTIME_KEY, "x-amz-meta-" + MC_ATTRS_KEY


_fixed = _FIXED.fullmatch


def from_headers(h: Mapping[str, str]) -> float | None:
    """The file time an answer's headers (lower-case names) carry: what stored_mtime reads from
    the metadata, without parsing the rest of the object's properties (a download's hot path:
    parse_mtime's test made here, not in a call of its own)."""
    value = h.get(_MTIME_HEADER)
    if value is not None and _fixed(value := value.strip()):
        return float(value)
    mc = h.get(_MC_ATTRS_HEADER)
    return None if mc is None else stored_mtime(((MC_ATTRS_KEY, mc),))


def mark_value(last_modified: float, mtime: float) -> bytes:
    """COPY_OF's value: "<LastModified> <mtime>" in seconds to the microsecond, which the reader
    (float() of each) compares within a millisecond and 2 us (engine/sync/march.py). Fixed point,
    not repr(): a float's shortest repr costs ~1 us (bignum arithmetic), once per download."""
    return b"%.6f %.6f" % (last_modified, mtime)


_MS = 1_000_000  # ns in a millisecond: the atime's part above it is LastModified, below it the check
_CHECK = 999_983  # a prime below _MS: mtimes less than ~1 s apart never share a check


def mtime_ns(mtime: float) -> int:
    """The ns a download gives its file as mtime: the stored time to the microsecond (what it
    carries: format_mtime), so the file's st_mtime reads back as the very float that was stored."""
    return round(mtime * 1_000_000) * 1000


def atime_mark(last_modified: float, mtime: float) -> int:
    """The atime (ns) that marks a file as the copy of the object whose LastModified is
    `last_modified`, its mtime set to `mtime` (mtime_ns): LastModified to the millisecond (a
    listing's precision), and below it a check of both, so that the same atime with another mtime
    is not the mark (unless the two mtimes are a multiple of ~1 s apart and the check collides:
    1 in _CHECK)."""
    ms = round(last_modified * 1000)
    return ms * _MS + (ms * 7919 + round(mtime * 1_000_000)) % _CHECK


def atime_proves(atime_ns: int, last_modified: float, mtime: float) -> bool:
    """Whether a file's atime is atime_mark(last_modified, mtime): the file is that object's copy,
    as the COPY_OF xattr would say, without reading it."""
    return atime_ns == atime_mark(last_modified, mtime)
