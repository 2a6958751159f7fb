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
