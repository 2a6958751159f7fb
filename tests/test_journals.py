"""Where resume journals live and that they do not pile up (issue 15): removed when a run
completes, kept in --journal-dir DIR when it does not, and journals untouched for 30 days removed
by the next run. Real CLI against LocalStack."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import put_tree, write_tree

W1 = ["--workers", "1"]


def _files(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*")) if d.exists() else []


def test_a_completed_run_leaves_no_journal(cli, bucket, tmp_path):
    src = tmp_path / "src"
    write_tree(src, {f"f{i}": b"x" * i for i in range(20)})
    state = tmp_path / "state"
    run = cli("copy", str(src), f"s3://{bucket}/", "--json", *W1, env={"XDG_STATE_HOME": str(state)})
    assert run.code == 0 and run.summary["journal"] is None, run
    assert _files(state / "s3bulk" / "journals") == []
    jdir = tmp_path / "jdir"
    run = cli("sync", str(src), f"s3://{bucket}/again/", "--json", "--journal-dir", str(jdir), *W1)
    assert run.code == 0 and run.summary["journal"] is None, run
    assert _files(jdir) == []


def test_journal_dir_keeps_an_unfinished_run_and_prunes_stale_journals(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {"a": b"a", "a/b": b"b", "c": b"c"})  # `a` cannot be copied locally: exit 1
    jdir = tmp_path / "journals"
    jdir.mkdir()
    old, fresh = jdir / "0ld.sqlite", jdir / "fresh.sqlite"
    for p in (old, Path(f"{old}-wal"), fresh):
        p.write_bytes(b"")
    (jdir / "0ld.sqlite.d").mkdir()
    (jdir / "0ld.sqlite.d" / "1-0-1.keys").write_bytes(b"")
    month_ago = time.time() - 31 * 86400
    for p in (old, Path(f"{old}-wal"), jdir / "0ld.sqlite.d" / "1-0-1.keys", jdir / "0ld.sqlite.d"):
        os.utime(p, (month_ago, month_ago))

    run = cli("copy", f"s3://{bucket}/", str(tmp_path / "out"), "--json", "--journal-dir", str(jdir), *W1)
    assert run.code == 1, run
    kept = run.summary["journal"]
    assert kept and Path(kept).parent == jdir and Path(kept).exists(), run
    left = _files(jdir)
    assert "0ld.sqlite" not in left and "0ld.sqlite-wal" not in left and "0ld.sqlite.d" not in left, left
    assert "fresh.sqlite" in left and Path(kept).name in left

    # the same command with --resume finds it there (the failed object fails again: still kept)
    again = cli("copy", f"s3://{bucket}/", str(tmp_path / "out"), "--json", "--journal-dir", str(jdir), *W1,
                "--resume")
    assert again.code == 1 and again.summary["journal"] == kept, again
    assert again.summary["resumed_skipped"] >= 1


def test_journal_and_journal_dir_together_is_a_usage_error(cli, bucket, tmp_path):
    run = cli("copy", str(tmp_path), f"s3://{bucket}/", "--journal", str(tmp_path / "j"),
              "--journal-dir", str(tmp_path / "d"))
    assert run.code == 2 and "not both" in run.err and len(run.err.strip().splitlines()) == 1, run
