"""Parts of a multipart download written into the destination file as their bytes arrive.

Used by engine/transfer/in_parts.py (the parts this process moves) and engine/transfer/spread.py (a helper
process's parts) where the source hands ranges to a sink (features.read_to: the S3 store) and the
destination is a local file written at offsets (stores/local/store.py LocalMultipart.range_sink): no
part buffer, no second pass over the part's bytes for the pwrite or the checksum
(stores/files/filesink.py says why). Anything else keeps receiving parts into buffers.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Protocol, cast, runtime_checkable

from ...stores import Store, Writer
from ...stores.base import Multipart
from ...stores.checksums import CompositeParts
from ...stores.files.filesink import RangeSink
from ...stores.reading import read_to
from ..plan import TransferOptions


@runtime_checkable
class SinkUpload(Protocol):
    """A destination's upload that can hand out a sink for a range of its file (a local file's)."""

    takes_sinks: bool

    def range_sink(self, start: int, end: int, algorithm: str | None = None) -> RangeSink | None: ...


def sinks(src: Store, upload: Multipart) -> bool:
    """Whether the parts of `upload` (a destination's Multipart) are written through sinks."""
    return src.features.read_to and isinstance(upload, SinkUpload) and upload.takes_sinks and enabled()


def range_sinks(options: TransferOptions, src: Store, dst: Writer) -> bool:
    """Whether a download's parts will be written into the file as they arrive: an S3 source into a
    local file (a store of files: its features hand out file bodies), --flush-writes off (link.py
    then lets its ranges be larger than a buffered part)."""
    return not options.flush_writes and dst.features.file_bodies and src.features.read_to and enabled()


def sink_for(src: Store, upload: Multipart, start: int, end: int, check: Any) -> RangeSink | None:
    """A sink for bytes [start, end) of `upload`'s file, taking the checksum `check` wants; None
    when this source or destination cannot do it (or S3BULK_RANGE_SINK=0 turns it off)."""
    if not sinks(src, upload):
        return None
    sink = cast(SinkUpload, upload).range_sink(start, end, check.algorithm if check is not None else None)
    if sink is not None:
        env = os.environ
        if env.get("S3BULK_PWRITE_THREAD", "1") != "0":
            sink.use_thread()
    return sink


# The switches below are read per range, as S3BULK_RANGE_SINK is (one dict lookup against a range's
# megabytes), so a test or a benchmark can set them in-process:
# - S3BULK_RANGE_SINK=0: parts go through part buffers as before;
# - S3BULK_PWRITE_THREAD=0: a sink's chunks are written on the event loop, not by the writer thread.


def enabled() -> bool:
    """S3BULK_RANGE_SINK=0: parts go through part buffers as before (for comparing the two)."""
    return os.environ.get("S3BULK_RANGE_SINK", "1") != "0"


async def fill(src: Store, key: str, number: int, sink: RangeSink, check: Any, reads: int,
               mismatch: Callable[[], BaseException], if_match: str | None) -> int:
    """Read the sink's range into it, held to the ETag `if_match` (stores/conditions.py; the store
    retries failed reads, each from the range's first byte) and hand its checksum to `check`; a
    part of a COMPOSITE object whose own checksum does not match is read again, `reads` times in
    all, then `mismatch()` is raised. Returns the CRC given to `check` (0 without one)."""
    for _ in range(max(1, reads)):
        try:
            await read_to(src, key, sink.start, sink.end, sink, if_match=if_match)
        except BaseException:
            sink.settle(quiet=True)  # no write of this range left pending once the caller hears of it
            raise
        sink.settle()  # its last chunks written by the writer thread (filesink.py), its error raised
        if check is None:
            return 0
        crc = sink.crc()
        check.add_crc(number, crc, sink.length)
        got = check.got if isinstance(check, CompositeParts) else None  # each part checked alone
        if got is None or got.get(number):
            return crc
    raise mismatch()
