"""Every filter reaching each command family on LocalStack: copy/sync (with --delete sparing what a
filter left out), rm, ls/du. The rules themselves are tested in tests/test_filters.py.

One tree serves all three: each object but two is left out by exactly one filter, so a filter that
does not reach a command leaves an object behind (or lists one) that the assertion names."""

from __future__ import annotations

from pathlib import Path

from conftest import bucket_tree, one_error_line, put_tree, read_tree, write_tree

KEPT = {"keep.txt": b"k" * 10, "a/keep.jpg": b"j" * 10}
LEFT_OUT = {
    "a/b/deep.txt": b"d" * 10,   # --max-depth 2
    "big.bin": b"b" * 3000,      # --max-size 1k
    "tiny.txt": b"t",            # --min-size 2
    "skip.log": b"l" * 10,       # --exclude-from (*.log)
    "other.csv": b"c" * 10,      # --include-from (no glob of it)
    "drop.tmp": b"p" * 10,       # --filter-from (- *.tmp)
    "ex/e.txt": b"e" * 10,       # --exclude 'ex/*'
}


def every_filter(tmp_path: Path) -> list[str]:
    """Every filter but --exclude-if-present (local sources only) and --min-age (which would leave
    out everything just written: each test shows it alone)."""
    inc, exc, rules = tmp_path / "include.txt", tmp_path / "exclude.txt", tmp_path / "rules.txt"
    inc.write_text("# what may go\n*.txt\n*.jpg\n*.bin\n*.log\n*.tmp\n\n")
    exc.write_text("*.log\n")
    rules.write_text("- *.tmp\n+ *\n")
    return ["--exclude", "ex/*", "--include-from", str(inc), "--exclude-from", str(exc), "--filter-from", str(rules),
            "--max-depth", "2", "--min-size", "2", "--max-size", "1k", "--max-age", "1d"]


def test_copy_and_sync_apply_every_filter_and_sync_delete_spares_what_they_left_out(cli, s3, bucket, tmp_path):
    src = tmp_path / "src"
    write_tree(src, KEPT | LEFT_OUT | {"cache/.nobackup": b"", "cache/c.txt": b"c" * 10})
    # at DST before the sync: one DST-only object the filters keep (deleted), three they leave out (kept)
    put_tree(s3, bucket, {"gone.txt": b"g" * 10, "huge.txt": b"h" * 3000, "x.tmp": b"x" * 10,
                          "cache/old.txt": b"o" * 10})
    r = cli("sync", str(src), f"s3://{bucket}/", "--delete", "--exclude-if-present", ".nobackup",
            *every_filter(tmp_path))
    assert r.code == 0, r
    assert bucket_tree(s3, bucket) == KEPT | {"huge.txt": b"h" * 3000, "x.tmp": b"x" * 10,
                                              "cache/old.txt": b"o" * 10}
    put_tree(s3, bucket, LEFT_OUT)
    r = cli("copy", f"s3://{bucket}/", str(tmp_path / "down"), *every_filter(tmp_path))
    assert r.code == 0, r
    assert read_tree(tmp_path / "down") == KEPT | {"cache/old.txt": b"o" * 10}  # no marker file in a bucket
    r = cli("copy", f"s3://{bucket}/", str(tmp_path / "old"), "--min-age", "1d")  # all written just now
    assert r.code == 0 and read_tree(tmp_path / "old") == {}, r


def test_rm_applies_every_filter(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {f"p/{k}": v for k, v in (KEPT | LEFT_OUT).items()})
    r = cli("rm", f"s3://{bucket}/p/", "--min-age", "1d")
    assert r.code == 0 and len(bucket_tree(s3, bucket)) == len(KEPT) + len(LEFT_OUT), r
    r = cli("rm", f"s3://{bucket}/p/", *every_filter(tmp_path))
    assert r.code == 0, r
    assert bucket_tree(s3, bucket, "p/") == LEFT_OUT
    r = cli("rm", f"s3://{bucket}/p/", "--exclude-if-present", ".nobackup")
    assert r.code == 2 and "needs a local source directory" in one_error_line(r.err), r


def test_ls_and_du_apply_every_filter(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {f"p/{k}": v for k, v in (KEPT | LEFT_OUT).items()})
    r = cli("ls", f"s3://{bucket}/p/", "--json", *every_filter(tmp_path))
    assert r.code == 0, r
    assert sorted(e["key"] for e in r.events) == sorted(f"p/{k}" for k in KEPT)
    r = cli("du", f"s3://{bucket}/p/", "--json", *every_filter(tmp_path))
    assert r.code == 0, r
    assert [(e["objects"], e["bytes"]) for e in r.events if e["event"] == "total"] == [(2, 20)]
    r = cli("ls", f"s3://{bucket}/p/", "--json", "--min-age", "1d")
    assert r.code == 0 and r.events == [], r
