"""bench/scorecard.py's judging, without running a benchmark: each row's figures are read from the
JSON its benchmark writes (built here with that benchmark's own summarising code where it has one),
and a goal asked of "every run" is judged run by run, not on the medians."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import ceiling_read  # noqa: E402
import link_bench  # noqa: E402
import peers_bench  # noqa: E402
import scorecard  # noqa: E402

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def _ls(tool: str, shape: str, rep: int, wall: float, ok: bool = True) -> dict:
    return {"kind": "ls", "tool": tool, "shape": shape, "rep": rep, "wall_s": wall, "ok": ok,
            "check": "ok" if ok else "3 keys missing"}


def test_a_listing_goal_is_judged_rep_by_rep_against_the_same_reps_s5cmd() -> None:
    runs = [_ls("s3bulk-json", "flat", 0, 1.0), _ls("s5cmd", "flat", 0, 15.0),
            _ls("s3bulk-json", "flat", 1, 1.5), _ls("s5cmd", "flat", 1, 15.0),  # 10x: this rep misses
            _ls("s3bulk-json", "dated", 0, 1.0), _ls("s5cmd", "dated", 0, 14.0)]
    row = scorecard.judge_ls200k({"runs": runs}, ["flat", "dated"])
    assert row["details"]["ratios"] == {"flat": [15.0, 10.0], "dated": [14.0]}
    assert row["met"] is False  # the median (12.5x) would pass; the second rep does not
    assert row["ratio"].startswith("10.0-15.0x / 14.0x")
    assert scorecard.judge_ls200k({"runs": runs[:2] + runs[4:]}, ["flat", "dated"])["met"] is True


def test_a_listing_that_failed_its_check_fails_the_row_in_one_line() -> None:
    runs = [_ls("s3bulk", "flat", 0, 1.0, ok=False), _ls("s5cmd", "flat", 0, 70.0)]
    with pytest.raises(scorecard.RowFailed, match="s3bulk flat rep 1: 3 keys missing"):
        scorecard.judge_ls1m({"runs": runs}, ["flat"])


def _dl(tool: str, rep: int, objs_s: float, cpu_us: float) -> dict:
    return {"server": "versitygw", "scenario": "dl-small", "tool": tool, "rep": rep, "ok": True, "check": "ok",
            "wall_s": 20_000 / objs_s, "obj_per_s": objs_s, "mb_per_s": 0.1, "cpu_s": cpu_us * 0.02,
            "cpu_user_s": 0.0, "cpu_sys_s": 0.0, "cpu_us_per_obj": cpu_us, "peak_rss_tree_mib": 80.0,
            "peak_largest_process_mib": 30.0, "server_cpu_s": 4.0}


def test_small_objects_must_meet_every_part_of_the_goal_in_every_rep() -> None:
    good = [_dl("s3bulk", 0, 6000, 150), _dl("s5cmd", 0, 2900, 400), _dl("obstore", 0, 3800, 270)]
    bad_rep = [_dl("s3bulk", 1, 5000, 170), _dl("s5cmd", 1, 2900, 400), _dl("obstore", 1, 3800, 270)]  # 1.3x obstore
    for runs, met in ((good, True), (good + bad_rep, False)):
        row = scorecard.judge_small({"runs": runs, "summary": peers_bench.aggregate(runs)})
        assert row["met"] is met
    assert "obstore 3,800 obj/s at 270 CPU-us" in row["peer"]
    assert row["details"]["per_rep"][1]["speed_vs_obstore"] == pytest.approx(5000 / 3800)


def _link(tool: str, link: str, mib: int, wall: float) -> dict:
    return {"link": link, "mib": mib, "direction": "down", "tool": tool, "rep": 0, "ok": True, "wall_s": wall,
            "cpu_s": 0.5, "peak_rss_tree_mib": 50.0}


def test_the_link_row_asks_the_crt_and_aws_cli_goals_and_reports_the_tuned_client() -> None:
    tools = ["s3bulk", "crt", "crt-tuned", "aws-cli", "s5cmd"]
    runs = [_link("s3bulk", "loopback", 1024, 1.0), _link("crt", "loopback", 1024, 2.0),
            _link("crt-tuned", "loopback", 1024, 1.5), _link("aws-cli", "loopback", 1024, 3.0),
            _link("s5cmd", "loopback", 1024, 0.5)]  # s5cmd faster: link_bench's own goal, not this row's
    row = scorecard.judge_link({"summary": link_bench.summarize(runs, tools)})
    assert row["met"] is True
    assert row["ratio"] == "vs CRT / aws-cli: 1024 down lo 2.00x / 3.00x (tuned CRT: 1.50x)"
    runs[1] = _link("crt", "loopback", 1024, 1.2)  # 1.2x the CRT client: under 1.25x
    assert scorecard.judge_link({"summary": link_bench.summarize(runs, tools)})["met"] is False


def test_the_ceiling_is_the_faster_reader_and_a_failed_run_fails_the_goal() -> None:
    def rec(tool: str, seconds: float, ok: bool = True) -> dict:
        return {"tool": tool, "rep": 0, "seconds": seconds, "ok": ok, "problem": None if ok else "exit 1: boom"}
    runs = [rec("s3bulk", 0.5), rec("s5cmd", 1.0), rec("ceiling-curl", 0.5), rec("ceiling-python", 0.4)]
    row = scorecard.judge_gib(runs, 1024)
    assert row["details"]["ceiling"] == "ceiling-python"
    assert row["ratio"] == "0.80x the ceiling, 2.00x s5cmd" and row["met"] is True
    assert scorecard.judge_gib(runs + [rec("s5cmd", 9.0, ok=False)], 1024)["met"] is False
    both = scorecard.judge_gib(runs + [rec("ceiling-file", 0.5), rec("s3bulk-before", 1.0)], 1024)
    assert both["ratio"] == "0.80x the ceiling (1.00x ceiling-file), 2.00x s5cmd; A tree 1,024 MiB/s"
    with pytest.raises(scorecard.RowFailed, match="s3bulk: exit 1: boom"):
        scorecard.judge_gib([rec("s3bulk", 1.0, ok=False), rec("ceiling-curl", 0.5)], 1024)


def test_the_gib_row_shows_s3bulk_from_its_first_request_too(tmp_path: Path) -> None:
    log = tmp_path / "requests.log"  # --log-requests lines; a header line (indented) is not a request
    log.write_text("2026-11-28T15:10:06.000Z 1 GET http://h/b/k ERR sent=0 received=0 time=1.0ms retry=0 error=x\n"
                   "  > range: bytes=0-1\n"
                   "2026-11-28T15:10:06.100Z 1 GET http://h/b/k 206 sent=0 received=9 time=400.0ms retry=0\n"
                   "2026-11-28T15:10:06.050Z 1 GET http://h/b/k 206 sent=0 received=9 time=450.0ms retry=0\n")
    assert scorecard.request_span(log) == pytest.approx(0.5)  # the first start to the last answer's end
    assert scorecard.request_span(tmp_path / "none.log") is None

    def rec(tool: str, seconds: float, first: float | None = None) -> dict:
        return {"tool": tool, "rep": 0, "seconds": seconds, "ok": True, "problem": None, "from_first_request_s": first}
    row = scorecard.judge_gib([rec("s3bulk", 1.0, 0.5), rec("ceiling-python", 0.5), rec("ceiling-splice", 0.8)], 1024)
    assert row["s3bulk"] == ("1,024 MiB/s (1024 MiB, whole process; 2,048 MiB/s from its first request "
                             "(1.00x the ceiling, 1.60x ceiling-splice))")
    assert row["met"] is False  # the verdict stays on the whole process: 0.50x


def test_the_gib_row_puts_each_tool_s_cpu_and_the_server_s_against_cores_times_its_wall() -> None:
    def rec(tool: str, seconds: float, wall: float, cpu: float, server: float) -> dict:
        return {"tool": tool, "rep": 0, "seconds": seconds, "ok": True, "problem": None, "wall_s": wall,
                "cpu_s": cpu, "server_cpu_s": server}
    runs = [rec("s3bulk", 2.0, 2.0, 1.6, 1.2), rec("ceiling-curl", 1.0, 1.0, 0.4, 0.8),
            rec("ceiling-file", 1.5, 1.6, 1.0, 1.0)]
    row = scorecard.judge_gib(runs, 1024, cores=2)
    cpu = row["details"]["cpu"]
    assert cpu["goal_wall_s"] == 1.25  # 1024 MiB at 0.8x the ceiling's 1,024 MiB/s
    assert cpu["tools"]["s3bulk"] == {"wall_s": 2.0, "client_cpu_s": 1.6, "server_cpu_s": 1.2, "floor_s": 1.4,
                                      "busy": 0.7}
    assert cpu["floor_above_goal"] == ["s3bulk"]  # (1.0 + 1.0) / 2 = 1.0 s: ceiling-file's floor is under it
    assert "s3bulk 1.60 + 1.20 = 2.80 s over 2 x 2.00 s (70% busy, floor 1.40 s)" in row["note"]
    assert row["note"].endswith("below the CPU floor of s3bulk")


def test_start_up_rows_read_startup_bench_results() -> None:
    def one(tool: str, direction: str, wall: int) -> dict:
        return {"tool": tool, "direction": direction, "wall_ms": wall, "cpu_ms": wall // 2,
                "runs": [[wall, wall // 2], [wall + 40, wall // 2]]}
    data = [one(t, d, w) for t, w in (("s3bulk", 170), ("s5cmd", 90), ("aws-cli", 500)) for d in ("download", "upload")]
    row = scorecard.judge_one(data)
    assert row["met"] is True and row["ratio"].startswith("1.89x / 1.89x s5cmd's time (run by run 1.62-1.89x)")
    with pytest.raises(scorecard.RowFailed, match="aws-cli"):
        scorecard.judge_one(data[:4])
    lam = scorecard.judge_lambda([{"tool": "s3bulk handler", "wall_s": 3.0, "cpu_ms": 210, "peak_rss_mib": 54},
                                  {"tool": "boto3 copy_object", "wall_s": 6.0, "cpu_ms": 420, "peak_rss_mib": 54}])
    assert lam["ratio"] == "0.50x boto3's time" and lam["met"] is True


def test_a_file_under_a_benchmarks_fixed_name_is_moved_and_the_earlier_one_put_back(tmp_path: Path) -> None:
    (tmp_path / "startup-2026-11-27.json").write_text("older run")
    (tmp_path / "startup-2026-11-28.json").write_text("today's earlier run")
    adopted = scorecard.Adopted("startup-2*.json", tmp_path)
    (tmp_path / "startup-2026-11-28.json").write_text("the sitting's run")  # what the benchmark writes
    moved = adopted.take("scorecard-2026-11-28-one")
    assert moved == [tmp_path / "scorecard-2026-11-28-one.json"]
    assert moved[0].read_text() == "the sitting's run"
    assert (tmp_path / "startup-2026-11-28.json").read_text() == "today's earlier run"
    assert (tmp_path / "startup-2026-11-27.json").read_text() == "older run"


def test_the_readme_table_goes_between_the_markers_only(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# B\n<!-- scorecard:start -->\nold\n<!-- scorecard:end -->\nafter\n")
    scorecard.update_readme("| new |\n", readme)
    assert readme.read_text() == "# B\n<!-- scorecard:start -->\n| new |\n<!-- scorecard:end -->\nafter\n"
    readme.write_text("no markers")
    with pytest.raises(SystemExit, match="no scorecard markers"):
        scorecard.update_readme("x", readme)


def test_ceiling_ranges_cover_every_byte_once() -> None:
    assert ceiling_read.ranges(10, 3) == [(0, 2), (3, 5), (6, 9)]
    assert ceiling_read.ranges(2, 8) == [(0, 1)]  # fewer bytes than streams: no empty range
    spans = ceiling_read.ranges(1 << 30, 8)
    assert sum(b - a + 1 for a, b in spans) == 1 << 30 and len(spans) == 8


def test_an_unknown_row_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(sys, "argv", ["scorecard.py", "--rows", "ls200k,nope"])
    with pytest.raises(SystemExit) as exc:
        scorecard.main()
    assert exc.value.code == 2
    assert "unknown rows ['nope']" in capsys.readouterr().err
