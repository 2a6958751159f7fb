"""Every kind of request s3bulk sends, with awkward inputs, to a server that checks signatures.

tests/test_sigv4.py and tests/test_sigv4_differential.py hold the signer to botocore's signatures;
LocalStack accepts any signature, so here versitygw (tests/versitygw.py) recomputes each one, and
every run goes through the real command line: header values with inner runs of spaces
(`--metadata 'note=a  b'`, `--content-type 'text/plain;  charset=utf-8'`: versitygw answered
SignatureDoesNotMatch to these before the signer collapsed the runs), keys and prefixes with
Unicode, `%`, `+`, spaces and `~`, uploads in parts, whole and ranged GETs, HEAD, server-side copies,
tags, listings under such prefixes and deletes. Each object is read back (through botocore) equal
to what was sent. Both data paths, as elsewhere; the lean one is checked to have served every
request without botocore's client (no aiobotocore imported), so a fallback cannot hide a bad
signature. And the one line a user reads for a wrong secret or an unknown access key.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from versitygw import Versitygw, versitygw  # noqa: F401

MiB = 1024 * 1024
AWKWARD_KEYS = ["ü ber/naïve file.txt", "100% real+plus.txt", "tilde~and space  two.txt", "日本語/キー.bin",
                "a+b=c&d;e,f@g.txt", "quote'paren(1).txt"]
PREFIX = "dir %+ é~/"  # the listing prefix itself awkward


@pytest.fixture(params=["lean", "botocore"])
def data_path(request) -> str:
    return request.param


def run(server: Versitygw, data_path: str, *args: str, tmp_path: Path, env: dict | None = None
        ) -> subprocess.CompletedProcess:
    """`s3bulk ARGS --endpoint-url versitygw` on one data path, with -X importtime (stderr then names
    each module the run imported); the bucket's address cached under tmp_path after a first run."""
    full = {**os.environ, **server.env, "S3BULK_DATA_PATH": data_path, "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"), **(env or {})}
    argv = [sys.executable, "-X", "importtime", "-m", "s3bulk", *args, "--endpoint-url", server.url]
    return subprocess.run(argv, capture_output=True, text=True, env=full, cwd=ROOT, timeout=600)


def errors(proc: subprocess.CompletedProcess) -> str:
    return "\n".join(line for line in proc.stderr.splitlines() if not line.startswith("import time:"))


def ok(proc: subprocess.CompletedProcess, data_path: str) -> None:
    """The run succeeded; on the lean path, without botocore's client (aiobotocore) for any request."""
    assert proc.returncode == 0, f"exit {proc.returncode}: {errors(proc)}\n{proc.stdout[-2000:]}"
    if data_path == "lean":
        imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
                    if line.startswith("import time:")}
        assert not any(name.split(".")[0] == "aiobotocore" for name in imported), \
            "the lean path handed a request to botocore"


def test_header_values_with_runs_of_spaces_upload_and_read_back(versitygw, data_path, tmp_path):
    """The issue's reproduction: inner runs of spaces in signed header values (metadata, content type
    and the other properties), on a PUT, an upload in parts and a server-side copy."""
    b = versitygw.bucket()
    small, big = tmp_path / "small.txt", tmp_path / "big.bin"
    small.write_bytes(b"hello\n")
    big.write_bytes(os.urandom(6 * MiB))
    props = ["--metadata", "note=a  b,other=x   y z",
             "--content-type", "text/plain;  charset=utf-8", "--cache-control", "max-age=60,  public",
             "--content-disposition", 'attachment;  filename="a  b.txt"', "--tagging", "k=v%20%20w&t=1"]
    ok(run(versitygw, data_path, "copy", str(small), f"s3://{b}/one  key.txt", *props, tmp_path=tmp_path), data_path)
    ok(run(versitygw, data_path, "copy", str(big), f"s3://{b}/in parts+%.bin", *props, "--part-size", "5MiB",
           "--multipart-threshold", "5MiB", tmp_path=tmp_path), data_path)
    # server-side: the new properties replace the source's (x-amz-metadata-directive, x-amz-copy-source)
    ok(run(versitygw, data_path, "copy", f"s3://{b}/one  key.txt", f"s3://{b}/copied é.txt",
           "--metadata", "note=c  d", "--content-type", "text/csv;  header=present", tmp_path=tmp_path), data_path)

    s3 = versitygw.client()
    for key, body in (("one  key.txt", small.read_bytes()), ("in parts+%.bin", big.read_bytes())):
        got = s3.get_object(Bucket=b, Key=key)
        assert got["Body"].read() == body
        # the user's metadata, and the file's time beside it (x-amz-meta-mtime: stores/file_times.py)
        assert got["Metadata"].pop("mtime", None) is not None
        assert got["Metadata"] == {"note": "a  b", "other": "x   y z"}
        assert got["ContentType"] == "text/plain;  charset=utf-8"
        assert got["CacheControl"] == "max-age=60,  public"
        assert got["ContentDisposition"] == 'attachment;  filename="a  b.txt"'
        tags = s3.get_object_tagging(Bucket=b, Key=key)["TagSet"]
        assert sorted((t["Key"], t["Value"]) for t in tags) == [("k", "v  w"), ("t", "1")]
    assert "-" in s3.head_object(Bucket=b, Key="in parts+%.bin")["ETag"]  # in parts, not one PUT
    copied = s3.get_object(Bucket=b, Key="copied é.txt")
    assert copied["Body"].read() == b"hello\n"
    assert copied["Metadata"] == {"note": "c  d"} and copied["ContentType"] == "text/csv;  header=present"


def test_awkward_keys_through_every_request(versitygw, data_path, tmp_path):
    """Keys and a prefix with Unicode, %, +, spaces, ~ and more: uploads (one PUT, in parts), the
    listing under the prefix, whole and ranged GETs, a HEAD, server-side copies, deletes."""
    b = versitygw.bucket()
    src = tmp_path / "src"
    files = {k: os.urandom(100 + i) for i, k in enumerate(AWKWARD_KEYS)}
    files["big one+%.bin"] = os.urandom(6 * MiB + 7)  # in parts up, in ranges down
    for k, body in files.items():
        (src / k).parent.mkdir(parents=True, exist_ok=True)
        (src / k).write_bytes(body)
    parts = ["--part-size", "5MiB", "--multipart-threshold", "5MiB"]
    ok(run(versitygw, data_path, "copy", f"{src}/", f"s3://{b}/{PREFIX}", *parts, tmp_path=tmp_path), data_path)
    s3 = versitygw.client()
    listed = s3.list_objects_v2(Bucket=b, Prefix=PREFIX)["Contents"]
    assert sorted(o["Key"] for o in listed) == sorted(PREFIX + k for k in files)

    # the listing under the awkward prefix (and a narrower one), as s3bulk lists it
    ls = run(versitygw, data_path, "ls", f"s3://{b}/{PREFIX}", tmp_path=tmp_path)
    ok(ls, data_path)
    for k in files:
        assert k in ls.stdout or PREFIX + k in ls.stdout, (k, ls.stdout)
    narrow = run(versitygw, data_path, "ls", f"s3://{b}/{PREFIX}日本語", tmp_path=tmp_path)
    ok(narrow, data_path)
    assert "キー.bin" in narrow.stdout and "naïve" not in narrow.stdout

    # down again: whole GETs, ranged GETs of the big one
    down = tmp_path / "down"
    ok(run(versitygw, data_path, "copy", f"s3://{b}/{PREFIX}", f"{down}/", *parts, tmp_path=tmp_path), data_path)
    for k, body in files.items():
        assert (down / k).read_bytes() == body, k
    # one object by its key (a HEAD first, then its GET)
    one = tmp_path / "one.txt"
    ok(run(versitygw, data_path, "copy", f"s3://{b}/{PREFIX}{AWKWARD_KEYS[1]}", str(one), tmp_path=tmp_path),
       data_path)
    assert one.read_bytes() == files[AWKWARD_KEYS[1]]

    # server-side copies to another awkward prefix, then deletes
    ok(run(versitygw, data_path, "copy", f"s3://{b}/{PREFIX}", f"s3://{b}/copy ~+%/", tmp_path=tmp_path), data_path)
    for k, body in files.items():
        assert s3.get_object(Bucket=b, Key=f"copy ~+%/{k}")["Body"].read() == body, k
    gone = run(versitygw, data_path, "rm", f"s3://{b}/{PREFIX}", tmp_path=tmp_path)
    assert gone.returncode == 0, errors(gone)  # DeleteObjects goes through botocore on either path
    assert s3.list_objects_v2(Bucket=b, Prefix=PREFIX).get("KeyCount", 0) == 0
    assert s3.list_objects_v2(Bucket=b, Prefix="copy ~+%/")["KeyCount"] == len(files)


def _one_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in errors(proc).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in proc.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["upload", "list"])
def test_a_wrong_secret_and_an_unknown_key_are_named(versitygw, data_path, command, tmp_path):
    """versitygw answers a wrong secret with SignatureDoesNotMatch: the line says the signatures
    differ and names the secret as one cause (never only "wrong credentials", which sends a user to
    rotate keys that are fine after a signing bug); an unknown key (versitygw: XAdminUserNotFound,
    a 404) is named as such, not as a missing bucket. Both exit 3, before any object."""
    b = versitygw.bucket()
    f = tmp_path / "f.txt"
    f.write_text("x")
    args = ["copy", str(f), f"s3://{b}/k"] if command == "upload" else ["ls", f"s3://{b}/"]

    wrong = run(versitygw, data_path, *args, tmp_path=tmp_path, env={"AWS_SECRET_ACCESS_KEY": "not-the-secret"})
    assert wrong.returncode == 3, errors(wrong)
    line = _one_line(wrong)
    assert "different signature" in line and "secret key is wrong" in line, line
    assert "S3BULK_DATA_PATH=botocore" in line and "SignatureDoesNotMatch" in line, line
    assert "not-the-secret" not in wrong.stderr + wrong.stdout

    unknown = run(versitygw, data_path, *args, tmp_path=tmp_path, env={"AWS_ACCESS_KEY_ID": "NOSUCHKEY"})
    assert unknown.returncode == 3, errors(unknown)
    line = _one_line(unknown)
    assert "access key is unknown to the server" in line, line
    assert "does not exist" not in line and "not found" not in line, line
    assert versitygw.client().list_objects_v2(Bucket=b).get("KeyCount", 0) == 0
