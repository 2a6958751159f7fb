"""The `unit` marker stays true: `pytest -m unit` runs the tests that need no server, and
tests/conftest.py fails a test marked unit that asks for LocalStack (by name, through another
fixture such as `bucket`, or at run time through request.getfixturevalue) with one line, before
anything is started. Checked by running pytest on a few such tests in a child process with the
suite's own conftest, its `subprocess` replaced so that starting LocalStack would fail loudly."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

CONFTEST = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("suite_conftest", {path!r})
suite = importlib.util.module_from_spec(spec)
sys.modules["suite_conftest"] = suite
spec.loader.exec_module(suite)


class NoLocalStack:
    STDOUT = -2

    @staticmethod
    def Popen(*args, **kwargs):
        raise AssertionError("LocalStack was started")


suite.subprocess = NoLocalStack  # the endpoint fixture's Popen: any start fails loudly
globals().update({{k: v for k, v in vars(suite).items() if not k.startswith("__")}})


def pytest_configure(config):
    config.addinivalue_line("markers", "unit: as in pyproject.toml")
"""

TESTS = """
import pytest


@pytest.mark.unit
def test_asks_through_bucket(bucket):
    pass


@pytest.mark.unit
def test_asks_by_name(endpoint):
    pass


@pytest.mark.unit
def test_asks_at_run_time(request):
    request.getfixturevalue("s3")


@pytest.mark.unit
def test_needs_nothing(tmp_path):
    pass
"""


def test_a_unit_test_asking_for_localstack_fails_in_one_line_and_starts_nothing(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST.format(path=str(ROOT / "tests" / "conftest.py")))
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(TESTS))
    env = {k: v for k, v in os.environ.items() if k != "S3BULK_TEST_ENDPOINT" and not k.startswith("PYTEST_")}
    env["COLUMNS"] = "1000"  # the summary's lines whole
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "-o", "addopts=", "-q", "-rfE", "-m", "unit", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "LocalStack was started" not in out, out
    refused = [line for line in out.splitlines()  # the short summary: one line a test
               if line.startswith(("FAILED", "ERROR")) and "a unit test may not start LocalStack" in line]
    assert len(refused) == 3, out
    for name in ("test_asks_through_bucket", "test_asks_by_name", "test_asks_at_run_time"):
        assert any(name in line for line in refused), out
    assert any("through request.getfixturevalue" in line for line in refused), out
    assert "1 passed" in out, out
