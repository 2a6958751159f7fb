"""Split points remembered from the previous run of the same source (as s3-fast-list's hints).

A run starts with one unit, the whole key space, and learns where to cut it only as pages come
back: the first pages of a big bucket are listed through one chain, and cuts guessed from a few
keys can fall into empty stretches of the key space (wasted requests). A nightly sync of the same
bucket already saw where its keys are. So each run that lists to the end keeps an evenly thinned
sample of the keys where its pages ended (at most `KEEP` keys, whatever the bucket's size) and
writes it to `$XDG_STATE_HOME/s3bulk/hints/<hash of the source>.json`; the next run of the same
source starts from units cut at those keys. Any cut is correct (units.py), so stale hints cost
at most a few empty requests; a run that starts from a journal (`--resume`) uses the journal's
own boundaries instead. `S3BULK_HINTS=0` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
from ...config.urls import Location
from ...model import WorkUnit
from ..plan import Plan

KEEP = 1024


class BoundarySample:
    """Keys where listed pages ended, thinned evenly: when the sample doubles `KEEP`, every other
    key (in key order) is dropped, so it stays spread over the whole key space in bounded memory."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self.keys: list[str] = []
        self.stride = 1   # one key kept per `stride` pages ended
        self._seen = 0

    def add(self, key: str) -> None:
        self._seen += 1
        if self._seen % self.stride:
            return
        self.keys.append(key)
        if len(self.keys) >= 2 * self.keep:
            self.keys.sort()
            self.keys = self.keys[1::2]
            self.stride *= 2

    def sample(self) -> list[str]:
        return sorted(set(self.keys))


def enabled() -> bool:
    return os.environ.get("S3BULK_HINTS", "1") not in ("0", "false", "no")


def hints_path(loc: Location) -> str:
    """The hints file of one source: its kind, endpoint, bucket and prefix."""
    ident = {"kind": loc.kind, "bucket": loc.root, "prefix": loc.prefix,
             "endpoint": loc.s3.endpoint_url if loc.is_s3 else None}
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "s3bulk", "hints", f"{digest}.json")


def start_units(loc: Location, most: int) -> list[WorkUnit] | None:
    """Units covering the whole key space, cut at up to `most - 1` remembered keys spread evenly;
    None when there are no usable hints."""
    if most < 2 or not enabled():
        return None
    try:  # hints are an optimisation: nothing about them may stop a run
        with open(hints_path(loc), encoding="utf-8") as f:
            keys = [k for k in json.load(f)["keys"] if isinstance(k, str) and k.startswith(loc.prefix)]
    except Exception:
        return None
    keys = sorted(set(keys))
    if not keys:
        return None
    if len(keys) < most:
        cuts = keys
    else:  # most - 1 keys, evenly spread
        cuts = sorted({keys[(i * len(keys)) // most] for i in range(1, most)})
    bounds: list[str | None] = [None, *cuts, None]
    return [WorkUnit(after=bounds[i], until=bounds[i + 1], seq=i) for i in range(len(bounds) - 1)]


def save(loc: Location, sample: BoundarySample) -> None:
    """Write the sample for the next run (atomically; a failure to write is not an error)."""
    keys = sample.sample()
    if not keys or not enabled():
        return
    try:
        path = hints_path(loc)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"v": 1, "keys": keys}, f)
        os.replace(tmp, path)
    except Exception:
        pass  # the next run lists without hints


def applies(plan: Plan) -> bool:
    """Runs whose listing hints can cut: an ordered source listed by key ranges (not a list/get
    server, a manifest or one named key)."""
    return enabled() and plan.src.lists_in_order and plan.manifest is None and plan.single_key is None
