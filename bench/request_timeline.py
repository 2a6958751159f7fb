"""One s3bulk run's requests on a time line, from its --log-requests file: when the first part
started after the CreateMultipartUpload, how many parts were in flight every 50 ms (through
toxiproxy's per-connection bandwidth, connections are bandwidth), when the last part ended and
what the CompleteMultipartUpload took. Load does not move the shape much, unlike wall times.

    uv run python bench/link_bench.py --links 25MBps-10ms --directions up --sizes 256 --tools s3bulk \\
        --repeats 3 --log-requests /tmp/timeline
    python bench/request_timeline.py /tmp/timeline/*.log
"""

from __future__ import annotations

import re
import sys
from datetime import datetime

TIME = re.compile(r"time=([\d.]+)ms")
PART = re.compile(r"[?&]partNumber=(\d+)")
STEP = 0.05


def requests(path: str) -> list[tuple[float, float, str]]:
    """(start, end, what) of each line, in seconds from the first request's start."""
    out = []
    with open(path) as f:
        for line in f:
            fields = line.split()
            found = TIME.search(line)
            if len(fields) < 4 or found is None:
                continue
            start = datetime.fromisoformat(fields[0].rstrip("Z")).timestamp()
            part = PART.search(line)
            what = (f"part {part.group(1)}" if part else "create" if "?uploads" in line
                    else "complete" if fields[2] == "POST" and "uploadId=" in line else fields[2])
            out.append((start, start + float(found.group(1)) / 1000, what))
    if not out:
        return []
    first = min(r[0] for r in out)
    return sorted((s - first, e - first, w) for s, e, w in out)


def show(path: str) -> None:
    rows = requests(path)
    parts = [(s, e) for s, e, w in rows if w.startswith("part ")]
    print(path)
    for s, e, w in rows:
        if not w.startswith("part "):
            print(f"  {s:6.3f} - {e:6.3f}  {w}")
    if not parts:
        return
    starts, ends = sorted(s for s, _ in parts), sorted(e for _, e in parts)
    print(f"  {len(parts)} parts: first started {starts[0]:.3f}, last started {starts[-1]:.3f}, "
          f"first ended {ends[0]:.3f}, last ended {ends[-1]:.3f}; each {min(e - s for s, e in parts):.3f}"
          f"-{max(e - s for s, e in parts):.3f} s")
    steps = int(ends[-1] / STEP) + 2
    flight = [sum(1 for s, e in parts if s <= i * STEP < e) for i in range(steps)]
    print("  in flight every 50 ms: " + " ".join(str(n) for n in flight))


if __name__ == "__main__":
    for name in sys.argv[1:]:
        show(name)
