"""The peak resident memory of this process.

ru_maxrss is the obvious source but the wrong one: Linux carries it across fork and exec, so a
process started by a large parent reports the parent's peak. VmHWM in /proc/self/status belongs to
this process image alone."""

from __future__ import annotations

import resource


def peak_rss_bytes() -> int:
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
