"""What the memory cuts of issue 17 must not break for a program that uses s3bulk as a library."""

from __future__ import annotations

import gc
import sys

import pytest

import s3bulk
from s3bulk import TransferOptions

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
def test_forking_workers_leaves_the_callers_objects_collectable(tmp_path):
    # the coordinator freezes its objects (gc.freeze) so forked workers keep sharing their pages;
    # the caller's own process must get them back: frozen objects are never collected
    src = tmp_path / "src"
    src.mkdir()
    for i in range(20):
        (src / f"f{i}").write_bytes(b"x" * i)
    assert gc.get_freeze_count() == 0
    summary = s3bulk.copy(str(src), str(tmp_path / "dst"), options=TransferOptions(workers=2), journal=None)
    assert summary.ok and summary.counters.done == 20 and summary.workers == 2
    assert gc.get_freeze_count() == 0
    assert sorted(p.name for p in (tmp_path / "dst").iterdir()) == sorted(f"f{i}" for i in range(20))
