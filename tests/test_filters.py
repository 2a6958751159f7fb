"""The filters every command shares (config/filters.py, config/filter_options.py): the compiled
predicate rule by rule, the rule files, bad input as one line, and the engine on the in-memory
store applying them where keys are listed (copy, sync --delete sparing what a filter left out, rm,
ls, du). tests/test_filters_s3.py shows each command family reaching them on LocalStack."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from s3bulk.config.filter_options import build_filters, parse_age
from s3bulk.config.filters import Filters
from s3bulk.config.urls import parse_location
from s3bulk.engine.actions.ls import du, list_pages, stepped
from s3bulk.engine.actions.rm import RmRequest, rm
from s3bulk.engine.job import Job
from s3bulk.engine.journal.units import identity_of
from s3bulk.engine.plan import SyncOptions, TransferOptions
from s3bulk.engine.planner import build_plan
from s3bulk.engine.run.launch import run_plan
from s3bulk.errors import UsageError
from s3bulk.model import ObjectInfo

pytestmark = pytest.mark.unit  # no server (tests/conftest.py)

OPTS = TransferOptions(workers=1, concurrency=8, retries=1)
NOW = 2_000_000_000.0
DAY = 86400.0


def kept(filters: Filters, entries: list[ObjectInfo], now: float = NOW) -> list[str]:
    return [e.key for e in filters.compiled(now).select(entries, 0)]


def names(*keys: str) -> list[ObjectInfo]:
    return [ObjectInfo(k, 1, NOW) for k in keys]


def rules_file(tmp_path: Path, text: str, name: str = "rules.txt") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ------------------------------------------------------------------------------ the predicate

def test_no_filter_is_falsy_and_allows_everything():
    f = Filters()
    assert not f and not f.by_entry and f.compiled().allows("any/key")
    assert f.identity() == []


def test_include_exclude_keep_aws_cli_last_match_wins():
    f = Filters(((False, "*"), (True, "*.jpg"), (False, "raw/*")))
    assert kept(f, names("a.jpg", "a.png", "raw/b.jpg", "x/c.jpg")) == ["a.jpg", "x/c.jpg"]
    assert f.identity() == [[False, "*"], [True, "*.jpg"], [False, "raw/*"]]  # as journals recorded it before


def test_include_from_keeps_only_matches_and_exclude_from_leaves_matches_out(tmp_path):
    inc = rules_file(tmp_path, "# photos only\n\n*.jpg\n/docs/*\n", "inc.txt")
    exc = rules_file(tmp_path, "*/private/*\n", "exc.txt")
    f = build_filters(include_from=[inc], exclude_from=[exc])
    assert f.include_from == ("*.jpg", "docs/*")  # comments and blank lines dropped, rclone's "/" anchor too
    assert kept(f, names("a.jpg", "a.png", "docs/r.md", "x/private/b.jpg")) == ["a.jpg", "docs/r.md"]


def test_filter_from_first_match_wins_and_unmatched_is_kept(tmp_path):
    path = rules_file(tmp_path, "- secret/**\n+ *.jpg\n- *.tmp\n")
    f = build_filters(filter_from=[path])
    assert f.filter_rules == ((False, "secret/**"), (True, "*.jpg"), (False, "*.tmp"))
    assert kept(f, names("secret/a.jpg", "b.jpg", "c.tmp", "d.txt")) == ["b.jpg", "d.txt"]
    only = build_filters(filter_from=[rules_file(tmp_path, "+ *.jpg\n- *\n", "only.txt")])
    assert kept(only, names("a.jpg", "b/c.jpg", "d.txt")) == ["a.jpg", "b/c.jpg"]


def test_filters_compose_by_and(tmp_path):
    """--filter-from's '+' does not bring back what --exclude left out: every filter must keep a key."""
    f = build_filters([(False, "*.tmp")], filter_from=[rules_file(tmp_path, "+ *.tmp\n")], max_size="1k")
    entries = [ObjectInfo("a.tmp", 1, NOW), ObjectInfo("b.txt", 1, NOW), ObjectInfo("c.txt", 5000, NOW)]
    assert kept(f, entries) == ["b.txt"]


def test_max_depth_counts_levels_below_the_prefix_and_folder_markers_as_directories():
    f = build_filters(max_depth=1)
    assert kept(f, names("a", "d/", "d/b", "d/e/")) == ["a", "d/"]
    assert kept(build_filters(max_depth=2), names("a", "d/b", "d/e/", "d/e/c")) == ["a", "d/b", "d/e/"]


def test_sizes_keep_the_bounds_and_an_unknown_size():
    f = build_filters(min_size="10", max_size="1.5KiB")
    entries = [ObjectInfo("small", 9, NOW), ObjectInfo("lo", 10, NOW), ObjectInfo("hi", 1536, NOW),
               ObjectInfo("big", 1537, NOW), ObjectInfo("listget", None, None)]
    assert f.by_entry and kept(f, entries) == ["lo", "hi", "listget"]


def test_ages_follow_rclone_max_age_is_within_and_min_age_is_at_least():
    entries = [ObjectInfo("hour", 1, NOW - 3600), ObjectInfo("week", 1, NOW - 7 * DAY),
               ObjectInfo("year", 1, NOW - 365 * DAY), ObjectInfo("untimed", 1, None)]
    assert kept(build_filters(max_age="1d"), entries) == ["hour", "untimed"]
    assert kept(build_filters(min_age="2w"), entries) == ["year", "untimed"]
    assert kept(build_filters(min_age="1d", max_age="30d"), entries) == ["week", "untimed"]
    # a fixed time: modified at or after it (max-age), at or before it (min-age)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 30 * DAY))
    assert kept(build_filters(max_age=at), entries) == ["hour", "week", "untimed"]
    assert kept(build_filters(min_age=at), entries) == ["year", "untimed"]


@pytest.mark.parametrize("text, seconds", [("90m", 5400.0), ("7d", 7 * DAY), ("2w", 14 * DAY), ("1h30m", 5400.0),
                                           ("1.5d", 1.5 * DAY), ("45", 45.0), ("1y", 365 * DAY)])
def test_durations(text, seconds):
    assert parse_age(text, "--max-age") == (True, seconds)


def test_iso_times_and_dates_are_utc_without_a_zone():
    assert parse_age("2026-11-01", "--min-age") == (False, 1793491200.0)
    assert parse_age("2026-11-01T01:00:00Z", "--min-age") == (False, 1793491200.0 + 3600)
    assert parse_age("2026-11-01T02:00:00+01:00", "--min-age") == (False, 1793491200.0 + 3600)


def test_exclude_if_present_leaves_out_the_marked_directory_and_all_below_it(tmp_path):
    for rel in ("a.txt", "keep/b.txt", "cache/c.txt", "cache/deep/d.txt", "cache/.nobackup", "keep/x/.nobackup",
                "keep/x/e.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    f = build_filters(exclude_if_present=".nobackup").located(parse_location(str(tmp_path), None))
    keys = ["a.txt", "cache/", "cache/.nobackup", "cache/c.txt", "cache/deep/d.txt", "keep/b.txt", "keep/x/e.txt"]
    assert kept(f, names(*keys)) == ["a.txt", "keep/b.txt"]


def test_exclude_if_present_is_refused_for_a_bucket():
    f = build_filters(exclude_if_present=".nobackup")
    with pytest.raises(UsageError, match="needs a local source directory"):
        f.located(parse_location("memory://b/p/", None))


def test_the_journal_records_every_filter_so_a_resume_with_others_is_another_run(tmp_path):
    class P:
        src = dst = parse_location("memory://b/p/", None)
        single_key, keymap, sync, manifest, manifest_name = None, type("K", (), {"exact_dst": None}), None, None, None
        filters = build_filters(max_size="1M", filter_from=[rules_file(tmp_path, "- *.tmp\n")])

    first = identity_of(P, "copy")
    P.filters = build_filters(max_size="2M", filter_from=[rules_file(tmp_path, "- *.tmp\n")])
    assert identity_of(P, "copy") != first
    P.filters = build_filters(max_size="1M", filter_from=[rules_file(tmp_path, "- *.tmp\n- *.bak\n")])
    assert identity_of(P, "copy") != first  # the file's rules are recorded, not its name
    P.filters = build_filters(max_size="1M", filter_from=[rules_file(tmp_path, "- *.tmp\n", "other.txt")])
    assert identity_of(P, "copy") == first


@pytest.mark.parametrize("kwargs, says", [
    ({"min_size": "ten"}, "invalid --min-size 'ten'"),
    ({"max_age": "3 days"}, "invalid --max-age '3 days'"),
    ({"max_depth": 0}, "--max-depth must be 1 or more"),
    ({"exclude_if_present": "a/b"}, "--exclude-if-present takes a file name"),
    ({"include_from": ["/no/such/file"]}, "--include-from /no/such/file: cannot read it"),
])
def test_bad_values_are_one_usage_error(kwargs, says):
    with pytest.raises(UsageError, match=says.replace("(", r"\(")):
        build_filters(**kwargs)


def test_a_filter_from_line_without_a_sign_names_its_file_and_line(tmp_path):
    path = rules_file(tmp_path, "+ *.jpg\n# fine\n*.png\n")
    with pytest.raises(UsageError, match=r"rules.txt:3: '\*.png' is not a rule"):
        build_filters(filter_from=[path])


def test_the_command_line_says_bad_input_in_one_line_with_exit_2(tmp_path):
    (tmp_path / "src").mkdir()
    bad = rules_file(tmp_path, "keep *.jpg\n")
    proc = subprocess.run([sys.executable, "-m", "s3bulk", "ls", str(tmp_path / "src"), "--filter-from", bad],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [f"s3bulk: error: --filter-from {bad}:1: 'keep *.jpg' is not a "
                                                "rule (write '+ GLOB' to keep or '- GLOB' to leave out)"]


# ------------------------------------------------------------------- the engine (memory store)

def run(command: str, src: str, dst: str, filters: Filters, **sync):
    plan = asyncio.run(build_plan(Job(command, src, dst, options=OPTS, filters=filters,
                                      sync=SyncOptions(**sync) if command == "sync" else None)))
    return run_plan(plan)


def fill(bucket, objects: dict[str, tuple[int, float]]) -> None:
    for key, (size, mtime) in objects.items():
        bucket.put(key, b"x" * size, mtime)


def tree() -> dict[str, tuple[int, float]]:
    """Objects each of which one filter of `every_filter` leaves out, but p/small; times a month
    apart from --max-age's bound, so no clock decides."""
    now = time.time()
    return {"p/small": (10, now), "p/big": (5000, now), "p/old": (10, now - 60 * DAY), "p/d/deep": (10, now),
            "p/skip.tmp": (10, now)}


def every_filter() -> Filters:
    return build_filters([(False, "*.tmp")], max_size="1k", max_depth=1, max_age="30d")


def test_copy_applies_every_kind_of_filter_before_any_request_for_an_object(two_memory_buckets):
    s, sb, d, db = two_memory_buckets
    fill(sb, tree())
    summary = run("copy", f"memory://{s}/p/", f"memory://{d}/q/", every_filter())
    assert summary.ok and sorted(db.contents()) == ["q/small"]
    assert sb.calls.get("get", 0) == 1  # the objects left out were never read


def test_sync_delete_never_deletes_what_a_filter_left_out(two_memory_buckets):
    s, sb, d, db = two_memory_buckets
    now = time.time()
    fill(sb, {"p/a": (10, now), "p/grew": (5000, now)})
    # at DST: one DST-only key each filter leaves out, one it keeps (deleted), and the old copy
    # of a SRC object that has since grown past --max-size (its SRC object is left out, so is it)
    fill(db, {"q/a": (10, now), "q/grew": (10, now), "q/huge": (5000, now), "q/x.tmp": (1, now),
              "q/d/deep": (1, now), "q/ancient": (1, now - 60 * DAY), "q/stale": (1, now)})
    f = build_filters([(False, "*.tmp")], max_size="1k", max_depth=1, max_age="30d")
    summary = run("sync", f"memory://{s}/p/", f"memory://{d}/q/", f, delete=True)
    assert summary.ok and summary.counters.deleted == 1
    assert sorted(db.contents()) == ["q/a", "q/ancient", "q/d/deep", "q/grew", "q/huge", "q/x.tmp"]


def test_sync_dry_run_delete_lists_only_what_the_filters_keep(two_memory_buckets):
    s, sb, d, db = two_memory_buckets
    now = time.time()
    fill(sb, {"p/a": (10, now)})
    fill(db, {"q/a": (10, now), "q/huge": (5000, now), "q/stale": (1, now)})
    summary = run("sync", f"memory://{s}/p/", f"memory://{d}/q/", build_filters(max_size="1k"), delete=True,
                  dry_run=True)
    assert summary.ok and summary.counters.deleted == 1 and len(db.contents()) == 3


def test_rm_deletes_only_what_the_filters_keep(memory_buckets):
    b, bucket = memory_buckets()
    fill(bucket, tree())
    result = rm(RmRequest(f"memory://{b}/p/", filters=every_filter()))
    assert result.ok and result.deleted == 1
    assert sorted(bucket.contents()) == ["p/big", "p/d/deep", "p/old", "p/skip.tmp"]


def test_rm_caps_count_only_what_the_filters_keep(memory_buckets):
    b, bucket = memory_buckets()
    fill(bucket, {f"p/{i}": (10 if i < 3 else 5000, time.time()) for i in range(10)})
    result = rm(RmRequest(f"memory://{b}/p/", filters=build_filters(max_size="1k"), max_delete=3))
    assert result.ok and result.deleted == 3


def test_ls_and_du_list_only_what_the_filters_keep(memory_buckets):
    b, bucket = memory_buckets()
    fill(bucket, tree())
    f = every_filter()
    pages = list(stepped(list_pages(f"memory://{b}/p/", filters=f)))
    assert [e.key for page in pages for e in page] == ["p/small"]
    totals = du(f"memory://{b}/p/", filters=build_filters(min_size="1k"))
    assert (totals.objects, totals.bytes) == (1, 5000)


def test_exclude_if_present_on_a_local_copy(tmp_path):
    src = tmp_path / "src"
    for rel in ("a.txt", "cache/.nobackup", "cache/b.txt", "keep/c.txt"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(rel)
    summary = run("copy", str(src), str(tmp_path / "dst"), build_filters(exclude_if_present=".nobackup"))
    assert summary.ok
    got = sorted(os.path.relpath(os.path.join(b, n), tmp_path / "dst") for b, _, ns in os.walk(tmp_path / "dst")
                 for n in ns)
    assert got == ["a.txt", "keep/c.txt"]
