"""The package as a user installs it: `uv build` makes the wheel, which installs into a fresh
venv, and its `s3bulk` entry point shows the version and copies a directory, with no checkout
beside it. Dependencies come from uv's cache (filled by `uv sync`); offline without them, skip it
with `-m 'not network'`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, read_tree, write_tree

pytestmark = pytest.mark.network


def test_the_built_wheel_installs_and_runs(tmp_path):
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    from s3bulk import __version__

    def run(*argv: str, cwd: str = str(tmp_path)) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["XDG_STATE_HOME"] = str(tmp_path / "state")
        done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
        assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-2000:])
        return done.stdout

    run(uv, "build", "--wheel", "-q", "-o", str(tmp_path / "dist"), str(ROOT))
    wheels = list((tmp_path / "dist").glob("s3bulk-*.whl"))
    assert [w.name for w in wheels] == [f"s3bulk-{__version__}-py3-none-any.whl"]
    run(uv, "venv", "-q", str(tmp_path / "venv"), "--python", sys.executable)
    python, s3bulk = tmp_path / "venv" / "bin" / "python", tmp_path / "venv" / "bin" / "s3bulk"
    run(uv, "pip", "install", "-q", "--python", str(python), str(wheels[0]))
    where = run(str(python), "-c", "import s3bulk; print(s3bulk.__file__)")
    assert "site-packages" in where and not where.startswith(str(ROOT)), where
    assert run(str(s3bulk), "--version").strip() == f"s3bulk {__version__}", "an installed wheel: no commit"
    files = {"a.txt": b"first\n", "sub/b.bin": bytes(range(256))}
    write_tree(tmp_path / "src", files)
    run(str(s3bulk), "copy", str(tmp_path / "src"), str(tmp_path / "dst"))
    assert read_tree(tmp_path / "dst") == files
