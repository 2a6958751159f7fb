"""The resume journal of `s3bulk rm`: copy's journal (engine/journal/units.py), recording key ranges whose
every key is deleted.

rm lists the prefix in key order and deletes it in batches of 1,000 keys; a batch covers the range
(key before it, its last key]. Once every key of a batch is deleted, that range goes into the
journal's `ranges` table (adjacent ranges merge, as for copy) and is committed at once (one WAL
append per 1,000 keys). A killed rm resumed with `--resume` lists only the gaps (`resume_units`),
so it neither re-lists what is gone (slow on versioned buckets full of delete markers) nor needs
the journal to be right: deleting is idempotent, and a batch with a refused key is not recorded,
so its range is listed again and the key retried.

The journal's identity is copy's (both sides, mode "rm", filters), with the prefix as both sides:
another prefix, bucket, endpoint or filter set is another run, refused under `--resume`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from ...config.filters import Filters
from ...config.urls import Location
from .units import Journal, default_path


@dataclass(frozen=True)
class RmPlan:
    """What the journal reads from a plan (units.py identity_of), for a run that only deletes."""

    src: Location
    filters: Filters
    single_key: str | None = None
    keymap: Any = field(default_factory=lambda: SimpleNamespace(exact_dst=None))
    sync: None = None
    manifest: None = None
    manifest_name: None = None

    @property
    def dst(self) -> Location:
        return self.src


def open_rm_journal(src: Location, filters: Filters, path: str | None, *, resume: bool) -> Journal:
    """The journal of `rm` under src's prefix: at `path`, or the per-run default path (the hash of
    the prefix and "rm", under $XDG_STATE_HOME/s3bulk/journals/). With resume, a journal of another
    run is refused (UsageError) and a missing one means a run from the start (`nothing_to_resume`)."""
    plan = RmPlan(src, filters)
    where = os.path.abspath(os.path.expanduser(path)) if path else default_path(plan, "rm")
    return Journal.open(where, plan, "rm", resume=resume)
