"""--max-transfer and --max-duration (engine/run/caps.py): the run stops by itself as a first
Ctrl-C stops it, exits with the cap's own code (8, 10), says which cap and how to resume in one
line, keeps its journal; the same command with --resume finishes the job with every object right.

The runs are slowed with --max-rps so that a cap is met long before the end; the assertions are
on outcomes (exit codes, counts, the bytes at DST), never on times."""

from __future__ import annotations

import os

import pytest

from conftest import bucket_tree, write_tree

KiB = 1024


def _tree(n: int, size: int) -> dict[str, bytes]:
    return {f"k{i:03}": os.urandom(size) for i in range(n)}


@pytest.mark.parametrize("data_path", ["lean", "botocore"])
def test_max_transfer_stops_with_exit_8_and_resume_finishes(cli, s3, bucket, tmp_path, data_path):
    tree = _tree(60, 100 * KiB)
    write_tree(tmp_path / "src", tree)
    args = ("copy", str(tmp_path / "src"), f"s3://{bucket}/p/", "-w", "1", "-c", "1", "--max-rps", "10",
            "--journal", str(tmp_path / "j.sqlite"))
    env = {"S3BULK_DATA_PATH": data_path}
    first = cli(*args, "--max-transfer", "500KiB", "--json", env=env)
    assert first.code == 8, first
    s = first.summary
    assert s["capped"] == "max-transfer" and s["interrupted"] and not s["ok"], s
    assert 5 <= s["copied"] < 60, s  # at least the cap (5 objects of 100 KiB), and far from all
    assert s["copied_bytes"] >= 500 * KiB
    lines = [line for line in first.err.splitlines() if line.startswith("s3bulk: stopped")]
    assert len(lines) == 1 and "--max-transfer reached" in lines[0] and "--resume" in lines[0], first.err
    assert "Traceback" not in first.err
    at_dst = bucket_tree(s3, bucket, "p/")
    assert all(tree[k] == v for k, v in at_dst.items()) and len(at_dst) == s["copied"]

    done = cli(*args, "--resume", "--json", env=env)
    assert done.code == 0, done
    assert bucket_tree(s3, bucket, "p/") == tree
    assert done.summary["copied"] + len(at_dst) == 60, done.summary  # nothing copied twice
    assert not (tmp_path / "j.sqlite").exists()  # a complete run removes its journal


def test_max_duration_with_a_rate_cap_stops_with_exit_10_and_resume_finishes(cli, s3, bucket, tmp_path):
    tree = _tree(40, 10 * KiB)
    write_tree(tmp_path / "src", tree)
    args = ("sync", str(tmp_path / "src"), f"s3://{bucket}/p/", "-w", "1", "-c", "1", "--max-rps", "4")
    first = cli(*args, "--max-duration", "2s", "--json")
    assert first.code == 10, first
    assert first.summary["capped"] == "max-duration" and first.summary["copied"] < 40, first.summary
    assert any("--max-duration reached" in line for line in first.err.splitlines()), first.err
    done = cli(*args, "--resume", "--json")
    assert done.code == 0, done
    assert bucket_tree(s3, bucket, "p/") == tree


def test_caps_reached_only_as_the_run_ends_are_no_stop(cli, tmp_path):
    """A cap the run's last objects reach leaves nothing to resume: exit 0."""
    write_tree(tmp_path / "src", {"a": b"x" * 100})
    run = cli("copy", str(tmp_path / "src"), str(tmp_path / "dst"), "--max-transfer", "1", "--json")
    assert run.code == 0, run
    assert run.summary["capped"] is None and run.summary["copied"] == 1


@pytest.mark.parametrize("bad", [("--max-transfer", "lots"), ("--max-transfer", "0"), ("--max-duration", "soon"),
                                 ("--max-duration", "0")])
def test_bad_caps_are_refused_in_one_line(cli, tmp_path, bad):
    write_tree(tmp_path / "src", {"a": b"x"})
    run = cli("copy", str(tmp_path / "src"), str(tmp_path / "dst"), *bad)
    assert run.code == 2, run
    assert "Traceback" not in run.err and bad[0] in run.err and run.err.strip().count("\n") == 0, run.err
    assert not (tmp_path / "dst").exists()


def test_caps_with_watch_are_refused_in_one_line(cli, tmp_path):
    write_tree(tmp_path / "src", {"a": b"x"})
    run = cli("sync", str(tmp_path / "src"), str(tmp_path / "dst"), "--watch", "--max-duration", "1m")
    assert run.code == 2 and "--watch" in run.err and "Traceback" not in run.err, run
    assert not (tmp_path / "dst").exists()


def test_a_dry_run_is_never_capped(cli, tmp_path):
    """A dry run counts what it would copy but moves nothing: no cap applies to it."""
    write_tree(tmp_path / "src", _tree(5, 10 * KiB))
    for command in ("sync", "copy"):
        run = cli(command, str(tmp_path / "src"), str(tmp_path / "dst"), "--dry-run", "--max-transfer", "1KiB",
                  "--json")
        assert run.code == 0 and run.summary["capped"] is None and run.summary["copied"] == 5, (command, run)
    assert not (tmp_path / "dst").exists() or not any((tmp_path / "dst").iterdir())
