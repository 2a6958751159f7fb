"""A key that is also a directory's name (`a` beside `a/b`) copied to local disk: the same outcome
on every run, whatever the worker count or page boundaries (issue 15): the directory is kept,
`a` is reported naming a key under it, exit 1. Real CLI against LocalStack."""

from __future__ import annotations

import pytest

from conftest import put_tree, read_tree

KEYS = {"a": b"file a", "a/b": b"under a", "a.txt": b"beside a", "m/n": b"n", "m/n/o": b"o",
        "z": b"file z", "z/": b"", "zz": b"zz"}


@pytest.mark.parametrize("options", [
    ["--workers", "1"],
    ["--workers", "2", "--concurrency", "1"],
    ["--workers", "2", "--page-size", "1"],      # each key in its own page: children found by asking
    ["--workers", "1", "--page-size", "2"],
])
def test_the_directory_always_wins_and_both_keys_are_named(cli, s3, bucket, tmp_path, options):
    put_tree(s3, bucket, KEYS)
    dst = tmp_path / "out"
    run = cli("copy", f"s3://{bucket}/", str(dst), "--json", *options)
    assert run.code == 1, run
    assert read_tree(dst) == {"a/b": b"under a", "a.txt": b"beside a", "m/n/o": b"o", "zz": b"zz"}
    assert (dst / "z").is_dir()
    failures = sorted((e["src"].split(f"s3://{bucket}/", 1)[1], e["error"])
                      for e in run.events if e["event"] == "failure")
    assert [k for k, _ in failures] == ["a", "m/n", "z"], run
    for key, error in failures:
        child = {"a": "a/b", "m/n": "m/n/o", "z": "z/"}[key]
        assert repr(key) in error and repr(child) in error, error
    assert run.summary["failed"] == 3 and run.summary["copied"] == 5

    # the same again into the same directory: the same outcome, no new damage
    again = cli("copy", f"s3://{bucket}/", str(dst), "--json", *options)
    assert again.code == 1 and again.summary["failed"] == 3, again
    assert read_tree(dst) == {"a/b": b"under a", "a.txt": b"beside a", "m/n/o": b"o", "zz": b"zz"}
