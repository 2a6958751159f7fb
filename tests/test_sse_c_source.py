"""SSE-C sources (issue 16): objects encrypted with a customer key are read with it, as aws-cli's
--sse-c-copy-source/--sse-c-copy-source-key (and --sse-c/--sse-c-key on a download) say, on both
S3 data paths: downloads (whole and in ranged parts), CopyObject and UploadPartCopy (the
x-amz-copy-source-* key headers), streamed copies between endpoints, re-keyed to a new --sse-c key,
and sync comparing them. LocalStack checks customer keys (a wrong or missing key is refused), so
each round trip proves the headers were sent. The keys never appear in any output.
"""

from __future__ import annotations

import base64
import hashlib
import os

import pytest

MiB = 1024 * 1024
SMALL_PARTS = ["--multipart-threshold", "5MiB", "--part-size", "5MiB"]
OLD = "0123456789abcdefOLDKEYold-key-32"   # 32 bytes each
NEW = "fedcba9876543210NEWKEYnew-key-32"
BODIES = {"small.txt": b"small secret body", "big.bin": os.urandom(6 * MiB)}


@pytest.fixture(params=["lean", "botocore"])
def data_path(request, monkeypatch):
    monkeypatch.setenv("S3BULK_DATA_PATH", request.param)
    return request.param


def _ssec(key: str) -> dict:
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key.encode()}


@pytest.fixture
def encrypted(s3, make_bucket):
    """A bucket whose objects (one whole, one multipart) are encrypted with OLD."""
    name = make_bucket()
    for key, body in BODIES.items():
        s3.put_object(Bucket=name, Key=f"e/{key}", Body=body, **_ssec(OLD))
    return name


def _read(s3, bucket: str, key: str, with_key: str) -> bytes:
    return s3.get_object(Bucket=bucket, Key=key, **_ssec(with_key))["Body"].read()


def _no_secret(*outputs: str) -> None:
    text = "".join(outputs)
    for key in (OLD, NEW):
        for form in (key, base64.b64encode(key.encode()).decode(),
                     base64.b64encode(hashlib.md5(key.encode()).digest()).decode()):
            assert form not in text, "a customer key (or its MD5) was printed"


SOURCE = ["--sse-c-copy-source", "AES256", "--sse-c-copy-source-key", OLD]


def test_download_with_the_copy_source_key_or_aws_cli_sse_c(data_path, cli, encrypted, tmp_path):
    r = cli("copy", f"s3://{encrypted}/e/", str(tmp_path / "a"), *SMALL_PARTS, *SOURCE, "-v", "--no-journal")
    assert r.code == 0, r
    for key, body in BODIES.items():
        assert (tmp_path / "a" / key).read_bytes() == body
    # aws-cli reads the object of a download with --sse-c/--sse-c-key
    r2 = cli("copy", f"s3://{encrypted}/e/", str(tmp_path / "b"), *SMALL_PARTS, "--sse-c", "AES256",
             "--sse-c-key", OLD, "--json", "-v", "--no-journal")
    assert r2.code == 0, r2
    assert (tmp_path / "b" / "big.bin").read_bytes() == BODIES["big.bin"]
    # sync again: nothing to copy, by times or by content (the objects' checksums, read with the key)
    for compare in ([], ["--checksum"]):
        again = cli("sync", f"s3://{encrypted}/e/", str(tmp_path / "a"), *SOURCE, *compare, "--json", "-v")
        assert again.code == 0 and again.summary["copied"] == 0, again
        _no_secret(again.out, again.err)
    _no_secret(r.out, r.err, r2.out, r2.err)


def test_without_the_key_each_object_fails_in_one_line(cli, encrypted, tmp_path):
    r = cli("copy", f"s3://{encrypted}/e/", str(tmp_path), "--no-journal")
    assert r.code == 1 and "Traceback" not in r.err, r
    wrong = cli("copy", f"s3://{encrypted}/e/", str(tmp_path), "--no-journal", "--sse-c-copy-source", "AES256",
                "--sse-c-copy-source-key", NEW)
    assert wrong.code == 1 and "Traceback" not in wrong.err, wrong
    # one object named: its HEAD is refused with a bare 400, which the message explains
    one = cli("copy", f"s3://{encrypted}/e/small.txt", str(tmp_path / "one"))
    assert one.code != 0 and "--sse-c-copy-source-key" in one.err and "Traceback" not in one.err, one
    _no_secret(r.out, r.err, wrong.out, wrong.err)
    assert not (tmp_path / "small.txt").exists()


@pytest.mark.parametrize("streamed", [False, True])
def test_s3_to_s3_re_keys_server_side_and_streamed(data_path, cli, s3, make_bucket, endpoint, encrypted, streamed):
    """CopyObject and UploadPartCopy on one endpoint (copy threshold lowered so 6 MiB goes in
    parts), or GET and PUT/multipart between two endpoints: the source read with OLD, the copy
    written with NEW; the properties still carried."""
    dst = make_bucket()
    s3.put_object(Bucket=encrypted, Key="e/page.html", Body=b"<p>hi</p>", ContentType="text/html",
                  Metadata={"owner": "ana"}, **_ssec(OLD))
    sides = ["--src-endpoint-url", endpoint, "--dst-endpoint-url", endpoint.replace("127.0.0.1", "localhost")] \
        if streamed else ["--copy-threshold", "5MiB"]
    r = cli("copy", f"s3://{encrypted}/e/", f"s3://{dst}/r/", *SMALL_PARTS, *SOURCE, "--sse-c", "AES256",
            "--sse-c-key", NEW, *sides, "--json", "-v", "--no-journal")
    assert r.code == 0, r
    assert r.summary["copied"] == 3 and r.summary["server_side_copies"] == (0 if streamed else 3), r
    for key, body in BODIES.items():
        assert _read(s3, dst, f"r/{key}", NEW) == body
    with pytest.raises(Exception, match="AccessDenied|Forbidden|403"):
        _read(s3, dst, "r/small.txt", OLD)
    h = s3.head_object(Bucket=dst, Key="r/page.html", **_ssec(NEW))
    assert h["ContentType"] == "text/html" and h["Metadata"] == {"owner": "ana"}
    _no_secret(r.out, r.err)


def test_sse_c_source_to_plain_destination_and_sync(cli, s3, make_bucket, encrypted):
    """Decrypted on the way (no --sse-c at DST): readable without a key; a second sync copies nothing."""
    dst = make_bucket()
    r = cli("sync", f"s3://{encrypted}/e/", f"s3://{dst}/", *SMALL_PARTS, *SOURCE, "--copy-threshold", "5MiB")
    assert r.code == 0, r
    assert s3.get_object(Bucket=dst, Key="big.bin")["Body"].read() == BODIES["big.bin"]
    again = cli("sync", f"s3://{encrypted}/e/", f"s3://{dst}/", *SOURCE, "--checksum", "--json")
    assert again.code == 0 and again.summary["copied"] == 0, again


@pytest.mark.parametrize("args, says", [
    (["--sse-c-copy-source", "AES256"], "go together"),
    (["--sse-c-copy-source", "rot13", "--sse-c-copy-source-key", OLD], "must be AES256"),
    (["--sse-c-copy-source", "AES256", "--sse-c-copy-source-key", "short"], "must be 32 bytes"),
])
def test_bad_copy_source_options_are_one_line(cli, encrypted, tmp_path, args, says):
    r = cli("copy", f"s3://{encrypted}/e/", str(tmp_path), *args)
    assert r.code == 2 and says in r.err and len(r.err.strip().splitlines()) == 1, r


def test_copy_source_key_needs_an_s3_source(cli, bucket, tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    r = cli("copy", str(tmp_path), f"s3://{bucket}/", *SOURCE)
    assert r.code == 2 and "SRC is not S3" in r.err, r
    _no_secret(r.out, r.err)


def test_versions_of_an_sse_c_source(data_path, cli, s3, make_bucket, tmp_path):
    """--version-id and --all-versions read each version with the key (HEAD and GET by version id)."""
    src, dst = make_bucket(), make_bucket()
    for name in (src, dst):
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    first = s3.put_object(Bucket=src, Key="doc", Body=b"one", **_ssec(OLD))["VersionId"]
    s3.put_object(Bucket=src, Key="doc", Body=b"two", **_ssec(OLD))
    r = cli("copy", f"s3://{src}/doc", str(tmp_path / "old"), "--version-id", first, *SOURCE)
    assert r.code == 0 and (tmp_path / "old").read_bytes() == b"one", r
    r = cli("copy", f"s3://{src}/", f"s3://{dst}/", "--all-versions", *SOURCE, "--sse-c", "AES256",
            "--sse-c-key", NEW, "--json", "-v")
    assert r.code == 0 and r.summary["versions"] == 2, r
    versions = s3.list_object_versions(Bucket=dst)["Versions"]
    assert [s3.get_object(Bucket=dst, Key="doc", VersionId=v["VersionId"], **_ssec(NEW))["Body"].read()
            for v in reversed(versions)] == [b"one", b"two"]
    _no_secret(r.out, r.err)


def test_sync_checksum_to_an_sse_c_destination_is_idempotent(cli, s3, bucket, tmp_path):
    """DST's objects are read (HEAD with checksums, partNumber=1) with --sse-c-key, as aws-cli sends it."""
    for key, body in BODIES.items():
        (tmp_path / key).write_bytes(body)
    args = ["sync", str(tmp_path), f"s3://{bucket}/up/", *SMALL_PARTS, "--sse-c", "AES256", "--sse-c-key", NEW,
            "--checksum", "--json"]
    first = cli(*args)
    assert first.code == 0 and first.summary["copied"] == 2, first
    assert _read(s3, bucket, "up/big.bin", NEW) == BODIES["big.bin"]
    again = cli(*args)
    assert again.code == 0 and again.summary["copied"] == 0 and again.summary["skipped"] == 2, again
    _no_secret(first.out, first.err, again.out, again.err)


def test_check_reads_sse_c_sides_with_their_keys(cli, s3, make_bucket, encrypted):
    """check --checksum HEADs both sides: SRC with the copy-source key, DST with --sse-c-key."""
    dst = make_bucket()
    r = cli("copy", f"s3://{encrypted}/e/", f"s3://{dst}/", *SMALL_PARTS, *SOURCE, "--sse-c", "AES256",
            "--sse-c-key", NEW, "--no-journal")
    assert r.code == 0, r
    same = cli("check", f"s3://{encrypted}/e/", f"s3://{dst}/", "--checksum", *SOURCE, "--sse-c", "AES256",
               "--sse-c-key", NEW)
    assert same.code == 0 and "0 differ, 0 only in SRC, 0 only in DST, 2 the same" in same.err, same
    s3.put_object(Bucket=dst, Key="small.txt", Body=b"small secret bodY", **_ssec(NEW))  # same size
    differs = cli("check", f"s3://{encrypted}/e/", f"s3://{dst}/", "--checksum", *SOURCE, "--sse-c", "AES256",
                  "--sse-c-key", NEW)
    assert differs.code == 1 and "small.txt" in differs.out + differs.err, differs
    _no_secret(same.out, same.err, differs.out, differs.err)
