"""`s3bulk check` takes the filters copy and sync take (the filters panel), and compares only what
they keep, on both sides: a DST key they leave out is not "only in DST". Local directories, no
server."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import write_tree

pytestmark = pytest.mark.unit


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "s3bulk", "check", *args, "--json"], capture_output=True,
                          text=True, timeout=120)


def test_check_compares_only_what_the_filters_keep_on_both_sides(tmp_path):
    write_tree(tmp_path / "src", {"a.txt": b"a", "d/deep.txt": b"deep", "big.bin": b"b" * 4000,
                                  "src-only.tmp": b"t"})
    write_tree(tmp_path / "dst", {"a.txt": b"a", "d/deep.txt": b"changed", "big.bin": b"b" * 4000,
                                  "dst-only.tmp": b"t", "dst-only-big.bin": b"x" * 5000})
    src, dst = f"{tmp_path / 'src'}/", f"{tmp_path / 'dst'}/"
    kept = check(src, dst, "--exclude", "*.tmp", "--max-depth", "1", "--max-size", "4KiB")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    one_side = check(src, dst, "--exclude", "*.tmp", "--max-depth", "1")  # every difference but the big one left out
    assert one_side.returncode == 1 and "dst-only-big.bin" in one_side.stdout
    assert "only.tmp" not in one_side.stdout and "deep.txt" not in one_side.stdout
