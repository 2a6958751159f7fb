"""Additional checksums (issue 16): `--checksum-algorithm` on upload, checked on download, and
`sync --checksum` by the objects' own checksums. Through the real CLI against LocalStack."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess

import pytest

from conftest import write_tree
from s3bulk.stores import checksums

MiB = 1024 * 1024


def _body(size: int, seed: int) -> bytes:
    """Incompressible-looking bytes without the cost of os.urandom on big sizes."""
    block = os.urandom(64 * 1024)
    return (block * (size // len(block) + 1))[:size]


@pytest.mark.parametrize("algorithm", ["CRC64NVME", "CRC32C", "SHA256"])
def test_upload_carries_the_checksum_and_download_checks_it(cli, s3, bucket, tmp_path, algorithm):
    """Uploaded whole and in parts, each object keeps the algorithm's checksum (full-object for the
    CRCs, whatever the part size); the files come back intact."""
    small, big = _body(300 * 1024, 1), _body(6 * MiB + 123, 2)
    write_tree(tmp_path / "src", {"small.bin": small, "big.bin": big})
    r = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/p/", "--checksum-algorithm", algorithm.lower(),
            "--multipart-threshold", "5MiB", "--part-size", "5MiB")
    assert r.code == 0, r
    field = f"Checksum{algorithm}"
    head = s3.head_object(Bucket=bucket, Key="p/small.bin", ChecksumMode="ENABLED")
    assert head.get(field) == checksums.b64(algorithm, small), head
    head = s3.head_object(Bucket=bucket, Key="p/big.bin", ChecksumMode="ENABLED")
    assert head["ETag"].strip('"').endswith("-2"), head  # really uploaded in parts
    if algorithm in checksums.CRCS:
        assert head.get("ChecksumType") == "FULL_OBJECT" and head.get(field) == checksums.b64(algorithm, big), head
    else:  # SHA256 multipart can only be composite: of the two parts' digests
        parts = [checksums.Hasher(algorithm) for _ in range(2)]
        for i, h in enumerate(parts):
            h.update(big[i * 5 * MiB:(i + 1) * 5 * MiB])
        assert head.get(field) == checksums.composite(algorithm, [h.digest() for h in parts]), head
    r = cli("copy", f"s3://{bucket}/p/", str(tmp_path / "back"))
    assert r.code == 0, r
    assert (tmp_path / "back" / "small.bin").read_bytes() == small
    assert (tmp_path / "back" / "big.bin").read_bytes() == big


def test_unknown_algorithm_is_one_line_usage_error(cli, bucket, tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    r = cli("copy", str(tmp_path / "f"), f"s3://{bucket}/f", "--checksum-algorithm", "MD5")
    assert r.code == 2 and "--checksum-algorithm must be one of" in r.err and "Traceback" not in r.err, r
    assert len(r.err.strip().splitlines()) == 1, r


def _flipping_rule(bucket: str, key: str, body: bytes, algorithm: str, times: int, etag: str):
    """A fault-proxy rule: the first `times` GETs of the object answer its real checksum header with
    one body byte flipped (as a bad disk or a broken middlebox would deliver it)."""
    bad = bytearray(body)
    bad[len(bad) // 2] ^= 0x01
    head = (f"HTTP/1.1 200 OK\r\nContent-Length: {len(bad)}\r\nETag: {etag}\r\n"
            f"Last-Modified: Mon, 23 Nov 2026 00:00:00 GMT\r\n"
            f"{checksums.header(algorithm)}: {checksums.b64(algorithm, body)}\r\n"
            f"x-amz-checksum-type: FULL_OBJECT\r\nConnection: close\r\n\r\n").encode()
    seen = {"n": 0}

    def rule(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if method == "GET" and target.split("?", 1)[0] == f"/{bucket}/{key}" and seen["n"] < times:
            seen["n"] += 1
            return head + bytes(bad)
        return None
    return rule, seen


@pytest.mark.parametrize("times, ok", [(1, True), (100, False)])
def test_corrupted_download_is_caught(cli, s3, bucket, tmp_path, make_fault_proxy, endpoint, times, ok):
    """A body that does not match the object's CRC64NVME is never written as the file: retried, and
    reported as that object's failure (exit 1) when it keeps arriving corrupted."""
    body = _body(200 * 1024, 3)
    s3.put_object(Bucket=bucket, Key="d/obj", Body=body, ChecksumAlgorithm="CRC64NVME")
    rule, seen = _flipping_rule(bucket, "d/obj", body, "CRC64NVME", times,
                                etag=s3.head_object(Bucket=bucket, Key="d/obj")["ETag"])  # only its bytes are wrong
    proxy = make_fault_proxy(endpoint, [rule])
    r = cli("copy", f"s3://{bucket}/d/", str(tmp_path / "out"), "--endpoint-url", proxy.url, "--path-style",
            "--retries", "2", "--json")
    assert seen["n"] >= 1, "the proxy never saw the GET"
    if ok:
        assert r.code == 0, r
        assert (tmp_path / "out" / "obj").read_bytes() == body
    else:
        assert r.code == 1, r
        assert [e for e in r.events if e["event"] == "failure" and "does not match" in e["error"]
                and e["kind"] == "Corrupt"], r
        assert not (tmp_path / "out" / "obj").exists()


def test_sync_checksum_between_buckets_compares_full_object_checksums(cli, s3, make_bucket, tmp_path):
    """Same bytes uploaded in two 5 MiB parts to one bucket and one 16 MiB part to another: the ETags
    differ (other part count), the full-object CRC64NVME does not, so sync --checksum copies nothing;
    a same-size change is still copied."""
    a, b = make_bucket(), make_bucket()
    body = _body(6 * MiB, 4)
    write_tree(tmp_path / "src", {"f.bin": body})
    for name, part in ((a, "5MiB"), (b, "16MiB")):
        r = cli("copy", str(tmp_path / "src"), f"s3://{name}/", "--checksum-algorithm", "CRC64NVME",
                "--multipart-threshold", "5MiB", "--part-size", part)
        assert r.code == 0, r
    assert s3.head_object(Bucket=a, Key="f.bin")["ETag"] != s3.head_object(Bucket=b, Key="f.bin")["ETag"]
    r = cli("sync", f"s3://{a}/", f"s3://{b}/", "--checksum", "--json")
    assert r.code == 0 and r.summary["copied"] == 0 and r.summary["skipped"] == 1, r
    changed = bytearray(body)
    changed[7] ^= 0xFF
    s3.put_object(Bucket=a, Key="f.bin", Body=bytes(changed), ChecksumAlgorithm="CRC64NVME")
    r = cli("sync", f"s3://{a}/", f"s3://{b}/", "--checksum", "--json")
    assert r.code == 0 and r.summary["copied"] == 1, r


def _upload_with_aws_cli(src, bucket: str, prefix: str, endpoint: str) -> bool:
    """aws s3 cp --recursive with 16 MB chunks (what users run); False when aws-cli is not here."""
    aws = shutil.which("aws")
    if aws is None:
        return False
    env = dict(os.environ)
    cfg = src.parent / "aws-config"
    cfg.write_text("[default]\ns3 =\n  multipart_chunksize = 16MB\n  multipart_threshold = 8MB\n")
    env["AWS_CONFIG_FILE"] = str(cfg)
    proc = subprocess.run([aws, "--endpoint-url", endpoint, "s3", "cp", "--recursive", str(src),
                           f"s3://{bucket}/{prefix}"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return True


def test_sync_checksum_is_idempotent_for_any_part_size(cli, s3, bucket, tmp_path, endpoint):
    """Objects of 17 and 20 MiB (sizes where a part size guessed from the ETag's part count is wrong
    for 8 and 16 MiB parts) uploaded in 5, 8 and 16 MiB parts by s3bulk (and in 16 MB chunks by
    aws-cli when it is installed): a second sync --checksum copies nothing, in both directions."""
    tree = {"a.bin": _body(17 * MiB, 5), "b.bin": _body(20 * MiB, 6)}
    write_tree(tmp_path / "src", tree)
    prefixes = []
    for part in ("5MiB", "8MiB", "16MiB"):
        r = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/p{part}/", "--part-size", part)
        assert r.code == 0, r
        prefixes.append(f"p{part}/")
    if _upload_with_aws_cli(tmp_path / "src", bucket, "aws/", endpoint):
        prefixes.append("aws/")
        assert "-" in s3.head_object(Bucket=bucket, Key="aws/b.bin")["ETag"]
    for prefix in prefixes:
        r = cli("sync", str(tmp_path / "src"), f"s3://{bucket}/{prefix}", "--checksum", "--json")
        assert r.code == 0 and r.summary["copied"] == 0 and r.summary["skipped"] == 2, (prefix, r)
    # and back: a local copy of the 16 MiB-part objects is equal to them
    r = cli("copy", f"s3://{bucket}/p16MiB/", str(tmp_path / "back"))
    assert r.code == 0, r
    r = cli("sync", f"s3://{bucket}/p16MiB/", str(tmp_path / "back"), "--checksum", "--json")
    assert r.code == 0 and r.summary["copied"] == 0, r


def _flipping_range_rule(bucket: str, key: str, body: bytes, start: int, times: int, etag: str):
    """The first `times` ranged GETs of bytes [start, ...) of the object answer the right range with
    one byte flipped: a multipart download's part arriving corrupted."""
    seen = {"n": 0}

    def rule(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        rng = headers.get("range", "")
        if method == "GET" and target.split("?", 1)[0] == f"/{bucket}/{key}" and \
                rng.startswith(f"bytes={start}-") and seen["n"] < times:
            seen["n"] += 1
            end = int(rng.split("-", 1)[1])
            bad = bytearray(body[start:end + 1])
            bad[1] ^= 0x01
            return (f"HTTP/1.1 206 Partial Content\r\nContent-Length: {len(bad)}\r\n"
                    f"Content-Range: bytes {start}-{end}/{len(body)}\r\nETag: {etag}\r\n"
                    f"Last-Modified: Mon, 23 Nov 2026 00:00:00 GMT\r\nConnection: close\r\n\r\n").encode() + bytes(bad)
        return None
    return rule, seen


@pytest.mark.parametrize("algorithm, times, ok", [("CRC64NVME", 1, True), ("CRC64NVME", 100, False),
                                                   ("CRC32", 100, False)])
def test_corrupted_part_of_a_multipart_download_is_caught(cli, s3, bucket, tmp_path, make_fault_proxy, endpoint,
                                                          algorithm, times, ok):
    """An object with a full-object CRC64NVME (or CRC32: zlib-ng's when installed) downloaded in 5 MiB
    parts: the part CRCs, combined, must give the object's; a corrupted part fails the object
    (retried once as a whole), and no file is left."""
    body = _body(6 * MiB, 7)
    write_tree(tmp_path / "src", {"obj": body})
    r = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/d/", "--checksum-algorithm", algorithm,
            "--multipart-threshold", "5MiB", "--part-size", "5MiB")
    assert r.code == 0, r
    rule, seen = _flipping_range_rule(bucket, "d/obj", body, 5 * MiB, times,
                                      etag=s3.head_object(Bucket=bucket, Key="d/obj")["ETag"])  # only its bytes are wrong
    proxy = make_fault_proxy(endpoint, [rule])
    r = cli("copy", f"s3://{bucket}/d/", str(tmp_path / "out"), "--endpoint-url", proxy.url, "--path-style",
            "--multipart-threshold", "5MiB", "--part-size", "5MiB", "--json", "--no-journal")
    assert seen["n"] >= 1, "the proxy never saw the ranged GET"
    if ok:
        assert r.code == 0, r
        assert (tmp_path / "out" / "obj").read_bytes() == body
    else:
        assert r.code == 1, r
        assert [e for e in r.events if e["event"] == "failure" and "does not match" in e["error"]], r
        assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
        assert seen["n"] == 2, "tried twice, then reported"


def test_server_side_copy_gets_the_algorithm(cli, s3, make_bucket):
    """CopyObject on one endpoint: the copy carries the asked checksum, computed by the server."""
    a, b = make_bucket(), make_bucket()
    s3.put_object(Bucket=a, Key="k", Body=b"server side")
    r = cli("copy", f"s3://{a}/", f"s3://{b}/", "--checksum-algorithm", "SHA256", "--json")
    assert r.code == 0 and r.summary["server_side_copies"] == 1, r
    head = s3.head_object(Bucket=b, Key="k", ChecksumMode="ENABLED")
    assert head.get("ChecksumSHA256") == checksums.b64("SHA256", b"server side"), head


@pytest.mark.unit
def test_crc64nvme_without_awscrt_is_one_line_usage_error(tmp_path):
    """Without the optional awscrt, CRC32C/CRC64NVME are refused up front (exit 2, one line)."""
    import sys

    (tmp_path / "f").write_bytes(b"x")
    code = ("import sys; sys.modules['awscrt'] = None\n"
            "from s3bulk.cli import main\n"
            f"main(['copy', {str(tmp_path / 'f')!r}, 's3://b/k', '--checksum-algorithm', 'CRC64NVME'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc
    assert proc.stderr.strip() == "s3bulk: error: CRC64NVME needs awscrt: pip install 's3bulk[crc]' (or pip install awscrt)"


@pytest.mark.unit
def test_crc32_of_a_part_is_zlibs_crc32_on_both_sides_of_the_fast_size():
    """An upload part's CRC32 (zlib-ng's from FAST_CRC32_FROM bytes, the system zlib's below) is
    the same number either way, whole or in chunks, as x-amz-checksum-crc32 must carry it; and a
    process that sent only small bodies has not imported zlib-ng."""
    import sys
    import zlib

    from s3bulk.stores.s3.wire import crc32_b64

    big = os.urandom(checksums.FAST_CRC32_FROM + 7)
    for data in (b"", b"x" * 100, big[:checksums.FAST_CRC32_FROM - 1], big, memoryview(big)):
        assert checksums.crc32_of(data) == zlib.crc32(data)
        assert crc32_b64(data) == base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    cut = checksums.FAST_CRC32_FROM  # a fast chunk, then a small one carrying its CRC on
    assert checksums.crc32_of(big[cut:], checksums.crc32_of(big[:cut])) == zlib.crc32(big)
    code = ("import sys; from s3bulk.stores.s3.wire import crc32_b64; crc32_b64(b'x' * 100_000); "
            "print('zlib_ng' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "False", proc
