"""Servers that refuse checksum headers (issue 16): s3proxy answers 501 NotImplemented to any request
carrying x-amz-checksum-* (PutObject, UploadPart, DeleteObjects as botocore 1.36+ signs it). s3bulk
sends the write once more without, remembers it for the store, and DeleteObjects goes with
Content-MD5; an explicit --checksum-algorithm stops the run with one line instead. Against
LocalStack behind tests/faultproxy.py playing s3proxy's part (no Java needed)."""

from __future__ import annotations

import pytest

from conftest import bucket_tree, write_tree
from faultproxy import s3_error

MiB = 1024 * 1024


def _like_s3proxy(refused: list[tuple[str, str]]):
    """A fault-proxy rule: 501 NotImplemented, as s3proxy words it, to a write carrying a checksum
    header (CreateMultipartUpload's x-amz-checksum-algorithm too, stricter than s3proxy)."""
    def rule(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if method in ("PUT", "POST") and any(h.startswith(("x-amz-checksum-", "x-amz-sdk-checksum"))
                                             for h in headers):
            refused.append((method, target))
            return s3_error(501, "Not Implemented", "NotImplemented",
                            "A header you provided implies functionality that is not implemented")
        return None
    return rule


def test_writes_and_deletes_go_without_checksums_once_refused(cli, s3, bucket, tmp_path, make_fault_proxy, endpoint):
    """A whole PUT, a streamed PUT, a multipart upload and a DeleteObjects all succeed; the server
    is told no (501) once per process, not per object or part."""
    tree = {"small.txt": b"x" * 1000, "streamed.bin": b"s" * (MiB + MiB // 2),  # a PUT, a streamed PUT
            "big.bin": bytes(range(256)) * (6 * 4096) + b"tail"}  # two parts
    write_tree(tmp_path / "src", tree)
    refused: list[tuple[str, str]] = []
    proxy = make_fault_proxy(endpoint, [_like_s3proxy(refused)])
    via = ("--endpoint-url", proxy.url, "--path-style")
    r = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/p/", *via, "--workers", "1", "--concurrency", "1",
            "--multipart-threshold", "5MiB", "--part-size", "5MiB", "--json")
    assert r.code == 0, r
    assert bucket_tree(s3, bucket, "p/") == tree
    assert len(refused) == 1, refused  # then remembered: no checksum header on any later write
    refused.clear()
    r = cli("rm", f"s3://{bucket}/p/", *via, "--json")
    assert r.code == 0, r
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0
    assert [m for m, _ in refused] == ["POST"], refused  # DeleteObjects: refused once, then Content-MD5


@pytest.mark.parametrize("size", [1000, 6 * MiB])
def test_explicit_checksum_algorithm_stops_with_one_line(cli, s3, bucket, tmp_path, make_fault_proxy, endpoint, size):
    """--checksum-algorithm asked for checksums the server does not keep: one clear line, exit 3,
    no traceback, nothing written without them."""
    write_tree(tmp_path / "src", {"f.bin": b"z" * size})
    proxy = make_fault_proxy(endpoint, [_like_s3proxy([])])
    r = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/", "--endpoint-url", proxy.url, "--path-style",
            "--checksum-algorithm", "SHA256", "--multipart-threshold", "5MiB", "--part-size", "5MiB")
    assert r.code == 3, r
    assert "this server does not support additional checksums" in r.err and "Traceback" not in r.err, r
    assert len([line for line in r.err.splitlines() if "does not support additional checksums" in line]) == 1, r
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0
