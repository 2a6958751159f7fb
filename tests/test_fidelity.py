"""Objects arrive with a Content-Type (issue 16): an upload gets the type its name says, as aws-cli
guesses it, on both S3 data paths and for multipart uploads; unknown names stay S3's default."""

from __future__ import annotations

import os

import pytest


@pytest.mark.parametrize("data_path", ["lean", "botocore"])
def test_upload_sets_content_type_from_the_name(cli, s3, bucket, tmp_path, data_path):
    src = tmp_path / "site"
    (src / "css").mkdir(parents=True)
    files = {"index.html": b"<html></html>", "css/site.css": b"body{}", "logo.png": b"\x89PNG",
             "data.json": b"{}", "notes": b"no extension", "big.mp4": os.urandom(6 * 1024 * 1024)}
    for name, body in files.items():
        (src / name).write_bytes(body)
    env = {"S3BULK_DATA_PATH": "botocore"} if data_path == "botocore" else {}
    r = cli("copy", str(src), f"s3://{bucket}/", "--multipart-threshold", "5MiB", "--part-size", "5MiB",
            "--no-journal", env=env)
    assert r.code == 0, r
    types = {k: s3.head_object(Bucket=bucket, Key=k)["ContentType"] for k in files}
    assert types["index.html"] == "text/html"
    assert types["css/site.css"] == "text/css"
    assert types["logo.png"] == "image/png"
    assert types["data.json"] == "application/json"
    assert types["big.mp4"] == "video/mp4"  # multipart upload
    assert types["notes"] in ("binary/octet-stream", "application/octet-stream")


def test_sync_checksum_is_idempotent_for_multipart_objects(cli, s3, bucket, tmp_path):
    """Files of 16-50 MiB uploaded by s3bulk in 5 and 8 MiB parts: a second `sync --checksum`
    copies nothing (the part size is asked of the object, not guessed from its size)."""
    src = tmp_path / "src"
    src.mkdir()
    for mib in (17, 20, 33):
        (src / f"f{mib}").write_bytes(os.urandom(mib * 1024 * 1024))
    cache = str(tmp_path / "hashes.sqlite")
    for part in ("8MiB", "5MiB"):
        r = cli("sync", str(src), f"s3://{bucket}/{part}/", "--part-size", part, "--checksum", "--hash-cache", cache,
                "--json", "--no-journal")
        assert r.code == 0 and r.summary["copied"] == 3, r
        assert all("-" in s3.head_object(Bucket=bucket, Key=f"{part}/f{m}")["ETag"] for m in (17, 20, 33))
        again = cli("sync", str(src), f"s3://{bucket}/{part}/", "--checksum", "--hash-cache", cache, "--json",
                    "--no-journal")
        assert again.code == 0 and again.summary["copied"] == 0 and again.summary["skipped"] == 3, again.summary
        back = cli("sync", f"s3://{bucket}/{part}/", str(src), "--checksum", "--hash-cache", cache, "--json",
                   "--no-journal")
        assert back.code == 0 and back.summary["copied"] == 0, back.summary


def test_sync_checksum_sees_a_same_size_edit_with_the_mtime_put_back(cli, s3, bucket, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    f = src / "doc.txt"
    f.write_bytes(b"version one")
    cache = str(tmp_path / "hashes.sqlite")
    args = ["sync", str(src), f"s3://{bucket}/", "--checksum", "--hash-cache", cache, "--json", "--no-journal"]
    assert cli(*args).summary["copied"] == 1
    assert cli(*args).summary["copied"] == 0  # cached hash, nothing to do
    st = os.stat(f)
    f.write_bytes(b"version two")  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # as `touch -r` or `rsync -t` would
    r = cli(*args)
    assert r.summary["copied"] == 1, r.summary
    assert s3.get_object(Bucket=bucket, Key="doc.txt")["Body"].read() == b"version two"
