"""A server-side copy in parts (UploadPartCopy, above --copy-threshold) keeps the source's checksum
algorithm as CopyObject does (issue 16): created without one, the copy would get the server's
default (CRC64NVME on LocalStack and AWS) or none, and `sync --checksum` or a verified download
would lose the source's checksum. Against LocalStack with a small --copy-threshold."""

from __future__ import annotations

import os

from conftest import write_tree
from s3bulk.stores import checksums

MiB = 1024 * 1024


def _checksum(s3, bucket: str, key: str) -> tuple[str, str, str] | None:
    return checksums.from_fields(s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED"))


def test_copy_in_parts_keeps_the_source_checksum_algorithm(cli, s3, make_bucket, tmp_path):
    """A FULL_OBJECT CRC32C source copied in 5 MiB parts has the same CRC32C after, as CopyObject
    gives it; a SHA256 source keeps SHA256 (COMPOSITE: a multipart object cannot have a full-object
    SHA), the digest of its 5 MiB parts' digests."""
    a, b = make_bucket(), make_bucket()
    crc, sha = os.urandom(11 * MiB + 7), os.urandom(6 * MiB + 3)
    write_tree(tmp_path / "src", {"crc.bin": crc})
    r = cli("copy", str(tmp_path / "src"), f"s3://{a}/", "--checksum-algorithm", "CRC32C",
            "--multipart-threshold", "5MiB", "--part-size", "5MiB")
    assert r.code == 0, r
    s3.put_object(Bucket=a, Key="sha.bin", Body=sha, ChecksumAlgorithm="SHA256")
    source = _checksum(s3, a, "crc.bin")
    assert source is not None and source[0] == "CRC32C" and source[2] == "FULL_OBJECT", source
    r = cli("copy", f"s3://{a}/", f"s3://{b}/", "--copy-threshold", "5MiB", "--copy-part-size", "5MiB", "--json")
    assert r.code == 0 and r.summary["server_side_copies"] == 2, r
    assert s3.head_object(Bucket=b, Key="crc.bin")["ETag"].strip('"').endswith("-3")  # really in parts
    assert _checksum(s3, b, "crc.bin") == source
    parts = [checksums.Hasher("SHA256").digest_of(sha[i:i + 5 * MiB]) for i in range(0, len(sha), 5 * MiB)]
    assert _checksum(s3, b, "sha.bin") == ("SHA256", checksums.composite("SHA256", parts), "COMPOSITE")
