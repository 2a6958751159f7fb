"""The Python API as a caller meets it: a local directory deleted as an S3 prefix is, library
calls that print nothing, one name for one idea (the older keywords warn), sizes as strings.
No server: local files and the in-memory store."""

from __future__ import annotations

import subprocess
import sys

import pytest

import s3bulk
from s3bulk.errors import UsageError

pytestmark = pytest.mark.unit


def test_rm_of_a_local_directory_needs_no_all(tmp_path):
    root = tmp_path / "d"
    (root / "sub").mkdir(parents=True)
    (root / "a").write_bytes(b"a")
    (root / "sub" / "b").write_bytes(b"b")
    (tmp_path / "beside").write_bytes(b"kept")
    result = s3bulk.rm(str(root / "sub"))
    assert result.ok and result.deleted == 1 and not (root / "sub" / "b").exists()
    run = subprocess.run([sys.executable, "-m", "s3bulk", "rm", f"{root}/", "--no-journal"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert not [p for p in root.rglob("*") if p.is_file()] and (tmp_path / "beside").read_bytes() == b"kept"


def test_rm_of_the_filesystem_root_still_needs_all():
    with pytest.raises(UsageError, match="whole filesystem: add --all"):
        s3bulk.rm("/", dry_run=True)


def test_transfer_options_take_sizes_as_strings():
    options = s3bulk.TransferOptions(part_size="16MiB", max_transfer="1GiB", multipart_threshold=32 * 1024 * 1024)
    assert (options.part_size, options.max_transfer, options.multipart_threshold) == (16 << 20, 1 << 30, 32 << 20)
    with pytest.raises(UsageError, match="invalid part_size"):
        s3bulk.TransferOptions(part_size="lots")
