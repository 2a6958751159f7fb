"""S3's additional checksums (CRC32, CRC32C, CRC64NVME, SHA1, SHA256): computed on upload, checked
on download, compared by `sync --checksum`.

S3 sends and keeps them base64-encoded, big-endian: `x-amz-checksum-crc64nvme: <b64>`. An object
written whole (or in parts with ChecksumType FULL_OBJECT) carries the checksum of all its bytes; a
COMPOSITE multipart object carries the checksum of its parts' binary checksums, suffixed "-N".

CRC32 comes from zlib-ng when it is installed (a dependency), else from the standard library's
zlib: the system zlib's CRC32 measured 0.25 s a GiB on the benchmark machine against zlib-ng's 0.02 s,
and a multipart download checks the full-object CRC32 on the event loop's thread as the bytes arrive
(stores/files/filesink.py), where that quarter second was most of the gap to s5cmd on a 1 GiB
download. The SHAs come from the standard library. CRC32C and CRC64NVME come from awscrt
(`pip install 's3bulk[crc]'`), as botocore itself takes them: hardware-accelerated. A table-driven
pure-Python CRC64 was measured at about 1 MB/s, so without awscrt those two are refused in one line
instead of offered slowly.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import sys
import zlib
from typing import Any, Callable

from ..errors import UsageError

ALGORITHMS = ("CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256")
CRCS = ("CRC32", "CRC32C", "CRC64NVME")  # the ones S3 can keep as FULL_OBJECT for multipart uploads

Buffer = bytes | bytearray | memoryview


def parse_algorithm(value: str | None) -> str | None:
    """The canonical name of --checksum-algorithm's value; UsageError for anything else."""
    if value is None or value == "":
        return None
    name = value.upper().replace("-", "")
    if name not in ALGORITHMS:
        raise UsageError(f"--checksum-algorithm must be one of {', '.join(ALGORITHMS)}, not {value!r}")
    return name


def header(algorithm: str) -> str:
    """The request/response header that carries the checksum (lower case)."""
    return f"x-amz-checksum-{algorithm.lower()}"


def field(algorithm: str) -> str:
    """The botocore parameter / response field name (ChecksumCRC64NVME, ...)."""
    return f"Checksum{algorithm}"


@functools.cache
def _crt() -> object | None:
    """awscrt's checksums module, once per process (None when it is not installed)."""
    try:
        from awscrt import checksums
    except ImportError:
        return None
    return checksums if hasattr(checksums, "crc64nvme") else None


@functools.cache
def _crc32() -> Callable[[Buffer, int], int]:
    """zlib's CRC32 function, zlib-ng's when it is installed (same values, about 13x faster)."""
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        return zlib.crc32
    fast: Callable[[Buffer, int], int] = zlib_ng.crc32
    return fast


# a body at least this long takes its CRC32 from zlib-ng (crc32_of): 5 MiB parts of a 256 MiB
# upload, 0.25 s of system-zlib CRC a GiB on the sending thread. Below it the system zlib's (within
# 0.2 us of zlib-ng's for 100 bytes), so a process that sends only small bodies does not import
# zlib-ng (~3 ms: it imports gzip)
FAST_CRC32_FROM = 1024 * 1024


def crc32_of(data: Buffer, crc: int = 0) -> int:
    """zlib.crc32(data, crc), by zlib-ng for a body of FAST_CRC32_FROM bytes or more (see there)."""
    if len(data) >= FAST_CRC32_FROM:
        return _crc32()(data, crc)
    return zlib.crc32(data, crc)


@functools.cache
def _crc32_combine() -> Callable[[int, int, int], int] | None:
    """crc32_combine(crc1, crc2, len2): zlib-ng's, else awscrt's (importing awscrt loads a native
    library of its own, ~40 ms of a download's start-up; zlib-ng is loaded for CRC32 anyway)."""
    try:
        from zlib_ng import zlib_ng

        combine: Callable[[int, int, int], int] = zlib_ng.crc32_combine
        return combine
    except (ImportError, AttributeError):
        native = _crt()
        return getattr(native, "combine_crc32", None) if native is not None else None


def available(algorithm: str) -> bool:
    """Whether this process can compute `algorithm` (CRC32C and CRC64NVME need awscrt)."""
    return algorithm in ALGORITHMS and (algorithm not in ("CRC32C", "CRC64NVME") or _crt() is not None)


def require(algorithm: str | None) -> None:
    """UsageError (one line, exit 2) when `algorithm` needs awscrt and it is not installed: a
    pure-Python CRC32C/CRC64NVME runs at about 1 MB/s, too slow to offer."""
    if algorithm in ("CRC32C", "CRC64NVME") and _crt() is None:
        raise UsageError(f"{algorithm} needs awscrt: pip install 's3bulk[crc]' (or pip install awscrt)")


def combinable(algorithm: str) -> bool:
    """Whether part CRCs of `algorithm` can be combined into the whole object's here (zlib-ng
    for CRC32, awscrt for the others)."""
    if algorithm == "CRC32":
        return _crc32_combine() is not None
    return algorithm in CRCS and _crt() is not None


class PartCrcs:
    """A FULL_OBJECT CRC checked from parts read in any order: each part's CRC as it arrives, then
    combined in part order (awscrt's combine_*), so a multipart download is verified without
    reading the object twice or in sequence."""

    def __init__(self, algorithm: str, want: str) -> None:
        self.algorithm, self.want = algorithm, want
        if algorithm == "CRC32":
            crc32 = _crc32()
            self._crc: Any = lambda data, crc=0: crc32(data, crc)
            self._combine: Any = _crc32_combine()
        else:
            native: Any = _crt()
            name = algorithm.lower()
            self._crc = getattr(native, name)
            self._combine = getattr(native, f"combine_{name}")
        self.parts: dict[int, tuple[int, int]] = {}

    def add(self, number: int, data: Buffer) -> None:
        self.parts[number] = (self._crc(data, 0), len(data))

    def add_crc(self, number: int, crc: int, size: int) -> None:
        """A part whose CRC was computed elsewhere (a helper process: engine/transfer/spread.py)."""
        self.parts[number] = (crc, size)

    def crc_of(self, data: Buffer) -> int:
        return int(self._crc(data, 0))

    def matches(self) -> bool:
        crc = None
        for number in sorted(self.parts):
            part, size = self.parts[number]
            crc = part if crc is None else self._combine(crc, part, size)
        width = 8 if self.algorithm == "CRC64NVME" else 4
        got = base64.b64encode((crc or 0).to_bytes(width, "big")).decode()
        return got == self.want


class Hasher:
    """One checksum computed over data fed in order (update may be called many times)."""

    def __init__(self, algorithm: str) -> None:
        self.algorithm = algorithm
        self._crc = 0
        self._sha: "hashlib._Hash | None" = None
        if algorithm == "SHA1":
            self._sha = hashlib.sha1(usedforsecurity=False)
        elif algorithm == "SHA256":
            self._sha = hashlib.sha256()
        elif algorithm not in CRCS:
            raise UsageError(f"unknown checksum algorithm {algorithm!r}")
        elif algorithm == "CRC32":
            self._crc32 = _crc32()
        else:
            require(algorithm)
            self._native: Any = _crt()

    def update(self, data: Buffer) -> None:
        if self._sha is not None:
            self._sha.update(data)
        elif self.algorithm == "CRC32":
            self._crc = self._crc32(data, self._crc)
        elif self.algorithm == "CRC32C":
            self._crc = self._native.crc32c(data, self._crc)
        else:
            self._crc = self._native.crc64nvme(data, self._crc)

    def digest(self) -> bytes:
        if self._sha is not None:
            return self._sha.digest()
        return self._crc.to_bytes(8 if self.algorithm == "CRC64NVME" else 4, "big")

    def b64(self) -> str:
        return base64.b64encode(self.digest()).decode()

    def digest_of(self, data: Buffer) -> bytes:
        """The digest of `data` alone (this hasher must be fresh)."""
        self.update(data)
        return self.digest()


def b64(algorithm: str, data: Buffer) -> str:
    """The checksum of `data` as S3 writes it in its header."""
    h = Hasher(algorithm)
    h.update(data)
    return h.b64()


def composite(algorithm: str, part_digests: list[bytes]) -> str:
    """A COMPOSITE multipart object's checksum: of the parts' binary checksums, then "-N"."""
    return f"{b64(algorithm, b''.join(part_digests))}-{len(part_digests)}"


def file_checksum(path: str, algorithm: str, part_size: int = 0) -> str:
    """The checksum S3 shows for an object with this file's bytes: full-object when part_size is 0,
    else COMPOSITE over parts of part_size."""
    chunk = 1 << 20
    whole = Hasher(algorithm)
    with open(path, "rb") as f:
        if part_size <= 0:
            while block := f.read(chunk):
                whole.update(block)
            return whole.b64()
        parts = file_part_digests(f, part_size, lambda: Hasher(algorithm))
    return composite(algorithm, parts)


def file_part_digests(f: Any, part_size: int, new_hash: Callable[[], Any],
                      chunk: int = 1 << 20) -> list[bytes]:
    """The digest of each `part_size` part of the open file `f`, read `chunk` bytes at a time, with a
    fresh `new_hash()` per part (an MD5 for multipart ETags, a Hasher for composite checksums)."""
    digests: list[bytes] = []
    while True:
        h = new_hash()
        left = part_size
        while left:
            block = f.read(min(chunk, left))
            if not block:
                break
            h.update(block)
            left -= len(block)
        if left == part_size:
            return digests
        digests.append(h.digest())


def from_headers(headers: dict[str, str] | object) -> tuple[str, str, str] | None:
    """(algorithm, value, type) of the checksum an S3 answer carries, when any: type is FULL_OBJECT
    or COMPOSITE (a value ending "-N" is composite whatever the server says), or UNKNOWN when the
    server does not say (moto gives a multipart object's composite value without "-N" and without a
    type: taking it for the whole object's would fail good downloads, so it is not checked)."""
    get: Callable[[str], str | None] = getattr(headers, "get")
    for algorithm in ALGORITHMS:
        value = get(header(algorithm))
        if value:
            kind = get("x-amz-checksum-type") or ("COMPOSITE" if "-" in value else "UNKNOWN")
            if "-" in value:
                kind = "COMPOSITE"
            return algorithm, value, kind.upper()
    return None


def from_fields(resp: dict) -> tuple[str, str, str] | None:
    """from_headers for a botocore answer (ChecksumCRC32C, ChecksumType)."""
    for algorithm in ALGORITHMS:
        value = resp.get(field(algorithm))
        if value:
            kind = str(resp.get("ChecksumType") or "UNKNOWN")
            if "-" in value:
                kind = "COMPOSITE"
            return algorithm, value, kind.upper()
    return None


class CompositeParts:
    """A COMPOSITE checksum ("<b64>-N") checked on download. The object's parts (number, size,
    b64 checksum: GetObjectAttributes) are read as the download's own parts, so each part's digest
    is checked as it lands (a bad part is read again alone), and at the end the digest of the part
    digests must give the object's value. Only objects whose parts all have one size (the last may
    be shorter) are taken: every uploader cuts them so, and the download's part loop then matches
    them with its usual (number, start, end) ranges."""

    def __init__(self, algorithm: str, want: str, parts: list[tuple[int, int, str]]) -> None:
        self.algorithm, self.want = algorithm, want
        self.part_size = parts[0][1]
        self.expected = {number: base64.b64decode(value) for number, _, value in parts}
        self.got: dict[int, bool] = {}

    @staticmethod
    def uniform(size: int, parts: list[tuple[int, int, str]]) -> bool:
        """Whether `parts` cut an object of `size` bytes into equal parts (the last maybe shorter),
        numbered 1..N, as the download's part loop cuts it with the first part's size."""
        if not parts or parts[0][1] <= 0:
            return False
        first = parts[0][1]
        numbers_ok = [p[0] for p in parts] == list(range(1, len(parts) + 1))
        sizes_ok = all(p[1] == first for p in parts[:-1]) and 0 < parts[-1][1] <= first
        return numbers_ok and sizes_ok and sum(p[1] for p in parts) == size

    def add(self, number: int, data: Buffer) -> bool:
        """Check one part as read; False when its digest is not the part's checksum."""
        ok = Hasher(self.algorithm).digest_of(data) == self.expected.get(number)
        self.got[number] = ok
        return ok

    def crc_of(self, data: Buffer) -> int:
        """What a spread helper process (engine/transfer/spread.py) sends back for a part: its digest's
        first 8 bytes (enough to tell a damaged part; the message has room for a 64-bit CRC)."""
        return int.from_bytes(Hasher(self.algorithm).digest_of(data)[:8], "big")

    def add_crc(self, number: int, crc: int, size: int) -> None:
        self.got[number] = int.from_bytes(self.expected.get(number, b"")[:8], "big") == crc

    def matches(self) -> bool:
        if sorted(self.got) != sorted(self.expected) or not all(self.got.values()):
            return False
        return composite(self.algorithm, [self.expected[n] for n in sorted(self.expected)]) == self.want


_NOTED: set[str] = set()


def note_once(text: str) -> None:
    """A line on stderr, once per process: a check that cannot be made is said once by each worker,
    not once per object (workers have no other channel to the user for a remark that is no failure)."""
    if text not in _NOTED:
        _NOTED.add(text)
        print(f"s3bulk: note: {text}", file=sys.stderr, flush=True)
