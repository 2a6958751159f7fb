"""The local filesystem's pieces the engine uses, from one place.

Part files (a download kept for --resume), range sinks, file bodies, the landing guard of a forced
stop and the pwrite of a helper process live with the local store today (stores/local/). Issue 34
moves them to a neutral module below the stores; until then the engine's transfer and worker code
import them only from here, so that move is one file's edit.
"""

from __future__ import annotations

from ...stores.local.bodies import CHUNK as BODY_CHUNK
from ...stores.local.filesink import RangeSink
from ...stores.local.partfile import NO_CRC, PartialFiles, PartialUpload, SourceId, part_span
from ...stores.local.store import (LandingRefused, allow_landing, remove_open_temps, stop_landing,
                                   write_part, writes_in_threads)

__all__ = ["BODY_CHUNK", "LandingRefused", "NO_CRC", "PartialFiles", "PartialUpload", "RangeSink", "SourceId",
           "allow_landing", "part_span", "remove_open_temps", "stop_landing", "write_part", "writes_in_threads"]
