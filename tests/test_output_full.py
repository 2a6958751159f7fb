"""A run whose output cannot be written (stdout to a full disk, `> /dev/full`, a quota) says so in
one line and exits with the fatal code, as `cat` does, not "internal error": the copy it made is
kept, and no traceback or second complaint from the interpreter's last flush follows."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.unit,
              pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")]


@pytest.mark.parametrize("args", [
    ["ls", "{src}/"],               # read without typer (cli/quick.py)
    ["ls", "{src}/", "--json"],
    ["copy", "{src}/a.txt", "{out}/b.txt"],
    ["copy", "{src}/a.txt", "{out}/c.txt", "--json"],
    ["du", "{src}/"],               # through typer
], ids=["ls", "ls-json", "copy", "copy-json", "du"])
def test_an_output_that_refuses_its_text_is_one_line_and_the_fatal_code(tmp_path, args):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "a.txt").write_bytes(b"abc")
    argv = [a.format(src=src, out=out) for a in args]
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "s3bulk", *argv], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=120, env={**os.environ, "S3BULK_DEBUG": ""})
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 3, r.stderr
    assert lines == ["s3bulk: error: cannot write the output: No space left on device"], r.stderr
    if argv[0] == "copy":  # the plain run finished (only its summary was lost); --json's first event
        # already failed, before any byte moved; either way no temporary or partial file is left
        landed = {p.name: p.read_bytes() for p in out.iterdir()} if out.exists() else {}
        assert landed == ({} if "--json" in argv else {os.path.basename(argv[2]): b"abc"}), landed
