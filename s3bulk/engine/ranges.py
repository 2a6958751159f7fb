"""How many bytes one ranged GET asks for when an object is downloaded in parts into a local file.

For a local file the "parts" are only byte ranges written at their offsets: their size shows in no
result (no ETag, nothing on the destination), only in memory, requests and CPU. Every GET costs a
request head, signing, a server-side open and seek, and a new wait for the first byte; on loopback
against versitygw (issue 17's benchmark) 8 MiB ranges cost the server ~0.8 CPU s per GiB and 16 MiB
ones ~0.7, 32 MiB ~0.6, and s3bulk itself ~0.15 s less per GiB. So such downloads ask for
DOWNLOAD_RANGE per GET (S3BULK_DOWNLOAD_RANGE overrides it, `0` keeps the part size), as long as
`part_concurrency` of them fit in half the worker's byte budget; the number in flight stays
`part_concurrency`, as a far server needs several connections for one object. Not when writes are
flushed part by part (--max-memory: memory is tight there), and never below the part size.
"""

from __future__ import annotations

import os

from ..sizes import parse_size

MiB = 1024 * 1024
DOWNLOAD_RANGE = 16 * MiB


def wanted_range() -> int:
    """DOWNLOAD_RANGE, or S3BULK_DOWNLOAD_RANGE when it is a size (0: the part size)."""
    raw = os.environ.get("S3BULK_DOWNLOAD_RANGE")
    if not raw:
        return DOWNLOAD_RANGE
    try:
        return parse_size(raw, "S3BULK_DOWNLOAD_RANGE")
    except Exception:
        return DOWNLOAD_RANGE


def download_range(part: int, concurrency: int, budget: int, flush: bool) -> int:
    """The bytes per ranged GET of an object downloaded into a local file in `part`-sized parts,
    `concurrency` at once, by a worker that may hold `budget` bytes of bodies."""
    want = wanted_range()
    if flush or want <= part:
        return part
    while want > part and want * max(1, concurrency) > budget // 2:
        want //= 2
    return max(part, want)


def part_buffer(size: int) -> memoryview:
    """A buffer for one part's bytes, reused by the parts after it: anonymous memory asked for in
    huge pages where the kernel has them for the asking (transparent huge pages in "madvise" mode).

    bytearray(size) zero-fills every page in user space first, 4 KiB page fault by page fault: for
    the eight 16 MiB buffers of one big download that was ~0.1 s on the event loop before the first
    byte could land. Here the kernel hands out zeroed pages as the socket first writes into them,
    2 MiB at a time, and the copies in and out of them miss the TLB less."""
    import mmap

    try:
        mem = mmap.mmap(-1, size)
    except (OSError, ValueError):
        return memoryview(bytearray(size))
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is not None:
        try:
            mem.madvise(advice)
        except OSError:
            pass  # no transparent huge pages here: 4 KiB pages, still not zero-filled twice
    return memoryview(mem)
