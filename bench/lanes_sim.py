"""The upload lanes' decisions (engine/transfer/link.py) on a simulated link: each part takes
2 x latency + its bytes / the connection's rate, connections never share a limit. No server, no
load: the seconds an object's parts take there, and the lanes they ran in, for A/B of link.py.

    uv run --frozen python bench/lanes_sim.py                      # this checkout
    uv run --frozen python bench/lanes_sim.py --root /tmp/ab-tree  # another checkout's link.py
"""

from __future__ import annotations

import argparse
import heapq
import importlib.util
import sys
from pathlib import Path
from typing import Any

MiB = 1024 * 1024


def load_link(root: Path) -> Any:
    """link.py of the checkout at `root`, loaded with that checkout's package on the path."""
    sys.path.insert(0, str(root))
    for name in [m for m in sys.modules if m == "s3bulk" or m.startswith("s3bulk.")]:
        del sys.modules[name]
    spec = importlib.util.find_spec("s3bulk.engine.transfer.link")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from s3bulk.engine.plan import TransferOptions
    module.TransferOptions = TransferOptions  # the same checkout's defaults
    sys.path.pop(0)
    return module


def simulate(link: Any, size: int, rate: float, latency: float) -> tuple[float, int, int, list[int]]:
    """Seconds, parts, part size and the lanes seen at each part's start of one upload."""
    options = link.TransferOptions()
    part = link.part_size(size, options, local_dst=False, sinks=False)
    start = link.start_lanes(options, part) if hasattr(link, "start_lanes") else options.part_concurrency
    now = [0.0]
    lanes = link.Lanes(start, options.part_concurrency_ceiling(), clock=lambda: now[0])
    lanes.begin()
    running: list[tuple[float, int]] = []
    offsets = list(range(0, size, part))
    seen = []
    for offset in offsets:
        while len(running) >= lanes.lanes:
            now[0], n = heapq.heappop(running)
            lanes.done(n)
        n = min(size, offset + part) - offset
        seen.append(lanes.lanes)
        heapq.heappush(running, (now[0] + 2 * latency + n / rate, n))
    while running:
        now[0], n = heapq.heappop(running)
        lanes.done(n)
    return now[0], len(offsets), part, seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", action="append", help="checkout(s) whose link.py to simulate (default: this one)")
    ap.add_argument("--sizes", default="24,256,1024", help="comma list of MiB")
    ap.add_argument("--rate", type=float, default=25e6, help="bytes a second of one connection")
    ap.add_argument("--latency", type=float, default=0.010, help="seconds each way")
    args = ap.parse_args()
    for root in args.root or [str(Path(__file__).resolve().parent.parent)]:
        link = load_link(Path(root))
        for mib in (int(x) for x in args.sizes.split(",")):
            secs, parts, part, seen = simulate(link, mib * MiB, args.rate, args.latency)
            print(f"{root}: {mib} MiB up: {secs:.3f} s in {parts} parts of {part // MiB} MiB, "
                  f"lanes {sorted(set(seen))}, most bytes held {min(max(seen), parts) * part // MiB} MiB")


if __name__ == "__main__":
    main()
