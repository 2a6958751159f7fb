"""The buffers the parts of one object are received into (multipart downloads and copies).

Kept apart from engine/transfer/one_object.py because the spread helpers (engine/transfer/spread.py) use them too.
"""

from __future__ import annotations


def part_buffer(size: int) -> memoryview:
    """A buffer for one part's bytes, reused by the parts after it: anonymous memory asked for in
    huge pages where the kernel has them for the asking (transparent huge pages in "madvise" mode).

    bytearray(size) zero-fills every page in user space first, 4 KiB page fault by page fault, on
    the event loop (perf showed it before the first bytes of a 1 GiB download could land: the
    eight 8 MiB buffers are 16,384 faults and a 64 MiB memset). Here the kernel hands out zeroed
    pages as the socket first writes into them, 2 MiB at a time, and the copies in and out of them
    miss the TLB less. Without transparent huge pages it is still one zero fill, not two."""
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
