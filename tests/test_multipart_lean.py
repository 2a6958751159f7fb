"""An upload in parts on the lean path: CreateMultipartUpload, the parts, CompleteMultipartUpload and
AbortMultipartUpload go without botocore, so a 20 MiB upload starts as fast as a small one (loading
and building botocore is ~0.4 s of CPU before the first byte on a busy machine), with the object's
properties and the upload's answers read as botocore reads them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

from s3bulk.stores.s3.multipart_xml import complete_body, error_in_200

MiB = 1024 * 1024


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """s3bulk with -X importtime (stderr then names every module the run imported); credentials
    from the environment (conftest), the bucket's address cached under tmp_path after a first run."""
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "s3bulk", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)


def _botocore_modules(stderr: str) -> list[str]:
    names = {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}
    return sorted(n for n in names if n.split(".")[0] in ("botocore", "aiobotocore", "aiohttp"))


def _errors(stderr: str) -> str:
    return "\n".join(line for line in stderr.splitlines() if not line.startswith("import time:"))


def test_an_upload_in_parts_loads_no_botocore(s3, bucket, endpoint, tmp_path):
    small, big = tmp_path / "small.txt", tmp_path / "big.bin"
    small.write_bytes(b"s" * 100)
    data = os.urandom(MiB) * 20
    big.write_bytes(data)
    # the first run resolves the bucket's address (through botocore) and keeps it, as any first run does
    first = _run(["copy", str(small), f"s3://{bucket}/small.txt", "--endpoint-url", endpoint, "-q"], tmp_path)
    assert first.returncode == 0, _errors(first.stderr)

    up = _run(["copy", str(big), f"s3://{bucket}/big.html", "--endpoint-url", endpoint, "-q",
               "--metadata", "colour=blue", "--cache-control", "max-age=60"], tmp_path)
    assert up.returncode == 0, _errors(up.stderr)
    assert _botocore_modules(up.stderr) == []
    head = s3.head_object(Bucket=bucket, Key="big.html", ChecksumMode="ENABLED")
    assert "-" in head["ETag"]  # in parts, not one PUT
    assert head["ContentType"] == "text/html" and head["CacheControl"] == "max-age=60"
    assert head["Metadata"].pop("mtime", None) is not None  # the file's time (stores/file_times.py)
    assert head["Metadata"] == {"colour": "blue"}
    assert head.get("ChecksumCRC32")  # created with CRC32, as botocore creates it
    assert s3.get_object(Bucket=bucket, Key="big.html")["Body"].read() == data
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


@pytest.mark.unit
def test_the_completion_body_escapes_what_xml_cannot_carry():
    body = complete_body([{"PartNumber": 1, "ETag": '"a&b<c>"', "ChecksumCRC32": "AAAA"}, {"PartNumber": 2, "ETag": "x"}])
    assert body == (b'<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                    b'<Part><PartNumber>1</PartNumber><ETag>"a&amp;b&lt;c&gt;"</ETag><ChecksumCRC32>AAAA</ChecksumCRC32>'
                    b'</Part><Part><PartNumber>2</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>')


@pytest.mark.unit
def test_a_200_answer_with_an_error_or_cut_off_is_an_error():
    """S3 answers a completion 200 at once and may put an <Error> in the body when it fails later;
    a body cut off mid-way is no success either (botocore retries both as a 500)."""
    done = (b'<?xml version="1.0" encoding="UTF-8"?>\n<CompleteMultipartUploadResult xmlns="x"><Key>k</Key>'
            b'</CompleteMultipartUploadResult>')
    assert not error_in_200(done)
    assert not error_in_200(b"   \n" + done + b"\n")  # S3's keep-alive whitespace before the answer
    assert not error_in_200(b"")
    assert error_in_200(b'<?xml version="1.0"?>\n  <Error><Code>InternalError</Code></Error>')
    assert error_in_200(done[:-20])
