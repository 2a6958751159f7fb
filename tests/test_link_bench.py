"""bench/link_bench.py's own logic, without running a benchmark: the goals set for s3bulk are read
against the AWS CRT client at its defaults (the anchor) as well as aws-cli, each one judged on the
medians of the runs that passed their checks, and the CRT rows run bench/crt_cp.py with the flags
the table says (defaults for crt, the tuned flags only for crt-tuned)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import link_bench  # noqa: E402

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def _run(tool: str, rep: int, wall: float, ok: bool = True) -> dict:
    return {"link": "25MBps-10ms", "mib": 256, "direction": "down", "tool": tool, "rep": rep, "ok": ok,
            "wall_s": wall, "cpu_s": 0.5, "peak_rss_tree_mib": 50.0}


def test_each_goal_is_judged_on_medians_of_good_runs_against_its_own_reference() -> None:
    tools = ["s3bulk", "crt", "aws-cli"]
    runs = [_run("s3bulk", 0, 2.0), _run("s3bulk", 1, 2.2), _run("s3bulk", 2, 50.0, ok=False),
            _run("crt", 0, 2.4), _run("crt", 1, 2.6), _run("aws-cli", 0, 3.0), _run("aws-cli", 1, 3.6)]
    (cell,) = link_bench.summarize(runs, tools)
    assert cell["tools"]["s3bulk"]["median_s"] == 2.1  # the failed 50 s run is left out
    by_ref = {g["ref"]: g for g in cell["goals"]}
    assert by_ref["crt"]["s3bulk"]["s3bulk"] == {"ratio": round(2.5 / 2.1, 3), "met": False}  # 1.19x < 1.25x
    assert by_ref["aws-cli"]["s3bulk"]["s3bulk"] == {"ratio": round(3.3 / 2.1, 3), "met": True}  # 1.57x
    text = link_bench.goal_text(cell)
    assert text == ">= 1.25x crt: 1.19x NOT met; >= 1.5x aws-cli: 1.57x"


def test_crt_runs_at_its_defaults_and_crt_tuned_with_the_tuned_flags() -> None:
    url = "http://127.0.0.1:9000"
    crt = link_bench.command("crt", {}, url, "s3://b/k", "/tmp/out")
    assert crt[1:] == [str(ROOT / "bench" / "crt_cp.py"), "s3://b/k", "/tmp/out", "--endpoint-url", url]
    tuned = link_bench.command("crt-tuned", {}, url, "/tmp/in", "s3://b/k")
    assert tuned[len(crt):] == link_bench.CRT_TUNED.split()
    assert "--target-gbps" in tuned and "--part-size-mib" in tuned
