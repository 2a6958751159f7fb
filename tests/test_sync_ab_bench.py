"""bench/sync_ab_bench.py's own logic, without running a benchmark: the B/A table a lead reads to say
"nothing got slower" must take medians of the runs that passed their checks only, and a wrong
argument must stop the script with one line before it builds anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import sync_ab_bench  # noqa: E402

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def _run(tree: str, rep: int, wall: float, ok: bool = True) -> dict:
    return {"link": "loopback", "scenario": "up-same", "tree": tree, "rep": rep, "ok": ok,
            "problem": None if ok else "summary copied/skipped/deleted=(3, 0, 0), wanted (0, 3, 0)",
            "wall_s": wall, "cpu_s": wall / 2, "cpu_us_per_object": wall / 2 / 3 * 1e6,
            "peak_pss_tree_mib": 40.0, "server_cpu_s": 0.1}


def test_medians_leave_out_failed_runs_and_the_table_gives_b_over_a() -> None:
    runs = [_run("A", 0, 1.0), _run("B", 0, 2.0), _run("A", 1, 1.2), _run("B", 1, 99.0, ok=False),
            _run("A", 2, 0.8), _run("B", 2, 2.0)]
    (cell,) = sync_ab_bench.summarize(runs)
    assert cell["median"]["A"]["wall_s"] == 1.0
    assert cell["median"]["B"]["wall_s"] == 2.0  # the failed 99 s run is not in the median
    assert cell["median"]["B"]["ok"] == "2/3"
    assert cell["b_over_a"] == {"wall_s": 2.0, "cpu_s": 2.0, "peak_pss_tree_mib": 1.0, "server_cpu_s": 1.0,
                                "proxy_cpu_s": None}  # no proxy on loopback: no ratio
    meta = {"started_utc": "2026-11-27 21:00 UTC", "machine": {"nproc": 2, "cpu_model": "x"}, "load_before": 1.0,
            "load_after": 1.0, "objects": 3, "size": 100, "reps": 3, "command": "cmd", "versions": {"A": "a"}}
    md = sync_ab_bench.markdown(meta, [cell], runs)
    assert "| loopback, no proxy | sync up again (nothing to copy) | 1.00 -> 2.00 | **2.00** |" in md
    assert "| 0.10 -> 0.10 (1.00) | 0.00 -> 0.00 (-) |" in md  # server and proxy CPU
    assert "1 run(s) failed their check" in md and "B rep 1" in md


def test_bad_arguments_stop_with_one_line() -> None:
    script = str(ROOT / "bench" / "sync_ab_bench.py")
    for argv, says in ((["--scenarios", "up-new,down-same"], "down-same runs on down-new's result"),
                       (["--scenarios", "up-nw"], "unknown ['up-nw']"),
                       (["--links", "100KBps"], "unknown ['100KBps']"),
                       (["--before", "no-such-rev-anywhere"], "--before no-such-rev-anywhere: not a commit")):
        p = subprocess.run([sys.executable, script, *argv], capture_output=True, text=True, timeout=120)
        assert p.returncode != 0, argv
        assert says in p.stderr, p.stderr
        assert "Traceback" not in p.stderr
        assert p.stderr.strip().splitlines()[-1].count(says) == 1
