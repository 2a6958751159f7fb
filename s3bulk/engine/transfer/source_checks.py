"""What checks an object read in parts: the checksum it carries, taken from one HEAD.

Kept apart from the ways of moving an object (ways.py, in_parts.py) because it is a question put
to the source once, before any upload is opened, and its answer travels with the parts: each part
read (here, in a range sink, in a spread helper) hands its CRC to the check, which is matched
before the upload is completed.
"""

from __future__ import annotations

from typing import Any, Callable, cast

from ...errors import ChecksumMismatch
from ...stores import Store
from ...stores.base import ChecksumReader, ObjectChecksum
from ...stores.checksums import CompositeParts, note_once

MIN_S3_PART = 5 * 1024 * 1024  # S3 refuses smaller parts (but the last) at completion
ASK = ObjectChecksum("", "", "ask")  # source_check's `known` when nothing was told: the HEAD is asked


async def source_check(src: Store, key: str, size: int, dst_is_s3: bool, max_part: int,
                       known: ObjectChecksum | None = ASK) -> Any:
    """What checks a multipart download of the source object, from one HEAD with checksum mode:
    a checksums.PartCrcs when it carries a FULL_OBJECT CRC this process can combine from parts; a
    checksums.CompositeParts when it carries a COMPOSITE checksum and the store tells its parts
    (one GetObjectAttributes more) in equal sizes of at most `max_part` bytes (the worker's byte
    budget); else None (no checksum: nothing more is asked). `known`: the checksum an answer
    already told (None: none), instead of the HEAD."""
    if not src.features.checksums:
        return None
    from ...stores.checksums import PartCrcs, available, combinable

    reader = cast(ChecksumReader, src)  # declared by its features
    found = await reader.object_checksum(key) if known is ASK else known
    if found is None:
        return None
    if found.kind == "FULL_OBJECT":
        return PartCrcs(found.algorithm, found.value) if combinable(found.algorithm) else None
    if found.kind != "COMPOSITE" or not available(found.algorithm):
        return None
    parts = await reader.object_parts(key)
    where = src.location.url_for("")
    if parts is None:
        note_once(f"{where} does not tell the parts of multipart objects (GetObjectAttributes): their "
                  "composite checksums are not verified on download")
        return None
    if not CompositeParts.uniform(size, parts) or f"-{len(parts)}" != found.value[found.value.rfind("-"):]:
        note_once(f"some multipart objects under {where} have parts of unequal sizes: their composite "
                  "checksums are not verified on download")
        return None
    if dst_is_s3 and len(parts) > 1 and parts[0][1] < MIN_S3_PART:
        note_once(f"some multipart objects under {where} have parts under 5 MiB, which S3 refuses to be "
                  "written with: their composite checksums are not verified on this copy")
        return None
    if parts[0][1] > max_part:
        note_once(f"some multipart objects under {where} have parts bigger than a worker's share of --max-buffer: "
                  "their composite checksums are not verified on download (each part would be held whole)")
        return None
    return CompositeParts(found.algorithm, found.value, parts)


def verifier(check: Any, url: str, key: str) -> Callable[[], None] | None:
    """What raises ChecksumMismatch before a corrupted copy is completed (None: nothing to check)."""
    if check is None:
        return None

    def verify() -> None:
        if not check.matches():
            raise ChecksumMismatch(f"{check.algorithm} of the parts read does not match the object's",
                                   op="get", url=url, key=key)
    return verify


def part_mismatch(check: Any, number: int, url: str, key: str) -> ChecksumMismatch:
    """A part that does not match its own checksum after every read of it."""
    return ChecksumMismatch(f"{check.algorithm} of part {number} does not match the part's checksum",
                            op="get", url=url, key=key)
