"""The package's public names as a type checker sees them: every name in `s3bulk.__all__` typed,
and a name that does not exist an error (no module `__getattr__` returning Any to hide a typo),
while `import s3bulk` still imports nothing until a name is used (tests/test_api_names.py)."""

from __future__ import annotations

import subprocess
import sys

import s3bulk
import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def test_mypy_refuses_a_name_the_package_does_not_have(tmp_path):
    used = "\n".join(f"s3bulk.{name}" for name in s3bulk.__all__)
    script = tmp_path / "uses_s3bulk.py"
    script.write_text(f"import s3bulk\n\n{used}\ns3bulk.copy_asnyc\n")
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", str(script)],
                         capture_output=True, text=True, cwd=ROOT)
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and 'has no attribute "copy_asnyc"' in errors[0], run.stdout + run.stderr
