"""COMPOSITE checksums (issue 16) verified on download: a multipart object uploaded with SHA256 (always
composite) or a composite CRC carries the checksum of its parts' checksums, "...-N". The download
asks GetObjectAttributes for the parts, reads the object by those parts, checks each as it lands
(a damaged part is read again alone) and the composite value at the end. Through the real CLI
against LocalStack, with tests/faultproxy.py in front to count requests and damage bodies."""

from __future__ import annotations

import os

import pytest

from conftest import write_tree
from faultproxy import flip_byte, s3_error
from s3bulk.stores import checksums

MiB = 1024 * 1024


def _body(size: int) -> bytes:
    block = os.urandom(64 * 1024)
    return (block * (size // len(block) + 1))[:size]


def _put_in_parts(s3, bucket: str, key: str, body: bytes, part: int, algorithm: str) -> None:
    """A composite multipart object as boto3/botocore writes it: ChecksumAlgorithm on the upload and
    on every part, no ChecksumType (S3's default for it: COMPOSITE)."""
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=algorithm)
    parts = []
    for number, start in enumerate(range(0, len(body), part), 1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=number,
                           Body=body[start:start + part], ChecksumAlgorithm=algorithm)
        parts.append({"PartNumber": number, "ETag": r["ETag"], f"Checksum{algorithm}": r[f"Checksum{algorithm}"]})
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up["UploadId"], MultipartUpload={"Parts": parts})
    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert head.get(f"Checksum{algorithm}", "").endswith(f"-{len(parts)}"), head  # really composite


def _recorder(seen: list[tuple[str, str, str]]):
    """A fault-proxy rule that answers nothing itself and records (method, target, range)."""
    def rule(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        seen.append((method, target, headers.get("range", "")))
        return None
    return rule


def _download(cli, proxy, bucket: str, dest, *more: str, env: dict | None = None):
    return cli("copy", f"s3://{bucket}/", str(dest), "--endpoint-url", proxy.url, "--path-style",
               "--multipart-threshold", "5MiB", "--workers", "1", "--json", *more, env=env)


@pytest.mark.parametrize("algorithm", ["SHA256", "CRC32C"])
def test_composite_objects_download_verified_by_their_parts(cli, s3, bucket, tmp_path, make_fault_proxy,
                                                            endpoint, algorithm):
    """Objects written in 5 and 6 MiB parts with a short last part (by botocore, and for SHA256 by
    s3bulk --checksum-algorithm) come back intact, read by their own part boundaries (not the
    download's 8 MiB parts), with one GetObjectAttributes each and no note."""
    files = {"five.bin": _body(13 * MiB + 1234), "six.bin": _body(14 * MiB + 77)}
    _put_in_parts(s3, bucket, "five.bin", files["five.bin"], 5 * MiB, algorithm)
    _put_in_parts(s3, bucket, "six.bin", files["six.bin"], 6 * MiB, algorithm)
    if algorithm == "SHA256":  # s3bulk's own uploads (a CRC would be FULL_OBJECT, checked elsewhere)
        files["own.bin"] = _body(11 * MiB + 5)
        write_tree(tmp_path / "src", {"own.bin": files["own.bin"]})
        r = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/", "--checksum-algorithm", algorithm,
                "--multipart-threshold", "5MiB", "--part-size", "5MiB")
        assert r.code == 0, r
    seen: list[tuple[str, str, str]] = []
    proxy = make_fault_proxy(endpoint, [_recorder(seen)])
    r = _download(cli, proxy, bucket, tmp_path / "out")
    assert r.code == 0, r
    for name, body in files.items():
        assert (tmp_path / "out" / name).read_bytes() == body, name
    assert "not verified" not in r.err, r.err
    attributes = [t for m, t, _ in seen if m == "GET" and "attributes" in t]
    assert len(attributes) == len(files), seen  # one request per multipart object, not per part
    six = {rng for m, t, rng in seen if m == "GET" and t.split("?")[0] == f"/{bucket}/six.bin" and rng}
    assert six == {f"bytes={s}-{min(s + 6 * MiB, len(files['six.bin'])) - 1}" for s in (0, 6 * MiB, 12 * MiB)}, six


@pytest.mark.parametrize("times, ok", [(1, True), (100, False)])
def test_damaged_part_is_read_again_alone_or_fails_the_object(cli, s3, bucket, tmp_path, make_fault_proxy,
                                                              endpoint, times, ok):
    """A part arriving with a byte flipped does not match its SHA256: once, only that part is read
    again and the file is intact; always, the object fails (ChecksumMismatch, a Corrupt: exit 1) and
    no file is left under its name."""
    body = _body(12 * MiB + 999)
    _put_in_parts(s3, bucket, "obj.bin", body, 5 * MiB, "SHA256")
    seen: list[tuple[str, str, str]] = []
    proxy = make_fault_proxy(endpoint, [_recorder(seen)])
    damage = flip_byte(f"/{bucket}/obj.bin", start=5 * MiB, times=times)
    proxy.edits.append(damage)
    r = _download(cli, proxy, bucket, tmp_path / "out", "--retries", "1")
    gets = [rng for m, t, rng in seen if m == "GET" and t.split("?")[0] == f"/{bucket}/obj.bin" and rng]
    assert damage.done >= 1, seen
    if ok:
        assert r.code == 0, r
        assert (tmp_path / "out" / "obj.bin").read_bytes() == body
        assert gets.count(f"bytes={5 * MiB}-{10 * MiB - 1}") == 2, gets  # the damaged part, again
        assert gets.count(f"bytes=0-{5 * MiB - 1}") == 1, gets  # and no other
    else:
        assert r.code == 1, r
        assert [e for e in r.events if e["event"] == "failure" and e["kind"] == "ChecksumMismatch"
                and "does not match" in e["error"]], r.out
        assert not [p for p in tmp_path.glob("out/**/*") if p.is_file()]  # no file, no temporary one


@pytest.mark.parametrize("times, ok", [(1, True), (100, False)])
def test_damaged_part_caught_across_spread_helper_processes(cli, s3, bucket, tmp_path, make_fault_proxy,
                                                            endpoint, times, ok):
    """The same when the object's parts are spread over helper processes (engine/transfer/spread.py): a part
    a helper read damaged is told to the parent; the object is read again once (intact then), or
    fails with nothing left under its name."""
    body = _body(16 * MiB + 3)
    _put_in_parts(s3, bucket, "big.bin", body, 5 * MiB, "SHA256")
    proxy = make_fault_proxy(endpoint)
    damage = flip_byte(f"/{bucket}/big.bin", times=times)  # whichever part comes first
    proxy.edits.append(damage)
    r = _download(cli, proxy, bucket, tmp_path / "out", "--retries", "1",
                  env={"S3BULK_SPREAD_ABOVE": "8MiB", "S3BULK_SPREAD_PROCESSES": "2"})
    assert damage.done >= 1
    if ok:
        assert r.code == 0, r
        assert (tmp_path / "out" / "big.bin").read_bytes() == body
    else:
        assert r.code == 1, r
        assert [e for e in r.events if e["event"] == "failure" and e["kind"] == "ChecksumMismatch"], r.out
        assert not [p for p in tmp_path.glob("out/**/*") if p.is_file()]


@pytest.mark.parametrize("times, ok", [(1, True), (100, False)])
def test_composite_object_read_whole_is_checked_by_its_parts(cli, s3, bucket, tmp_path, make_fault_proxy,
                                                             endpoint, times, ok):
    """A composite object small enough to be read in one GET (under --multipart-threshold) is cut
    by its parts in memory (one GetObjectAttributes): a damaged body is read again, or the object
    fails with no file left; objects with a full-object checksum ask nothing more."""
    body = _body(7 * MiB + 11)
    _put_in_parts(s3, bucket, "c.bin", body, 5 * MiB, "CRC32C")
    plain = _body(1000)
    s3.put_object(Bucket=bucket, Key="plain.bin", Body=plain, ChecksumAlgorithm="SHA256")
    seen: list[tuple[str, str, str]] = []
    proxy = make_fault_proxy(endpoint, [_recorder(seen)])
    damage = flip_byte(f"/{bucket}/c.bin", times=times)
    proxy.edits.append(damage)
    r = cli("copy", f"s3://{bucket}/", str(tmp_path / "out"), "--endpoint-url", proxy.url, "--path-style",
            "--retries", "1", "--json")
    assert damage.done >= 1 and r.summary["copied"] >= 1, r
    assert (tmp_path / "out" / "plain.bin").read_bytes() == plain
    assert not [t for m, t, _ in seen if "plain.bin" in t and "attributes" in t], seen
    if ok:
        assert r.code == 0, r
        assert (tmp_path / "out" / "c.bin").read_bytes() == body
    else:
        assert r.code == 1, r
        assert [e for e in r.events if e["event"] == "failure" and e["kind"] == "Corrupt"
                and "does not match" in e["error"]], r.out
        assert not (tmp_path / "out" / "c.bin").exists()


def test_parts_not_told_downloads_unchecked_with_one_note(cli, s3, bucket, tmp_path, make_fault_proxy, endpoint):
    """A server that does not do GetObjectAttributes (501, as some S3 servers answer): the composite
    objects are still downloaded (never failed for it), the note says so once, not per object, and
    the store is not asked again."""
    files = {f"o{i}.bin": _body(6 * MiB + i) for i in range(3)}
    for name, body in files.items():
        _put_in_parts(s3, bucket, name, body, 5 * MiB, "SHA256")
    asked = []

    def refuse(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if "attributes" in target.split("?", 1)[-1]:
            asked.append(target)
            return s3_error(501, "Not Implemented", "NotImplemented", "A header you provided implies "
                            "functionality that is not implemented")
        return None

    proxy = make_fault_proxy(endpoint, [refuse])
    r = _download(cli, proxy, bucket, tmp_path / "out", "--concurrency", "1")
    assert r.code == 0, r
    for name, body in files.items():
        assert (tmp_path / "out" / name).read_bytes() == body
    assert r.err.count("composite checksums are not verified") == 1, r.err
    assert len(asked) == 1, asked


@pytest.mark.unit
def test_composite_checksum_helpers():
    """CompositeParts.uniform takes only parts the download's loop can cut (equal, last shorter)."""
    assert checksums.CompositeParts.uniform(12, [(1, 5, "a"), (2, 5, "b"), (3, 2, "c")])
    assert not checksums.CompositeParts.uniform(12, [(1, 5, "a"), (2, 4, "b"), (3, 3, "c")])
    assert not checksums.CompositeParts.uniform(12, [(1, 5, "a"), (2, 5, "b")])
    assert not checksums.CompositeParts.uniform(12, [(1, 5, "a"), (3, 5, "b"), (2, 2, "c")])


@pytest.mark.unit
def test_object_parts_answers_as_servers_word_them():
    """GetObjectAttributes as LocalStack/AWS, MinIO (lower-case root, other field order) and
    versitygw (no ObjectParts) answer it, and a truncated page's next marker."""
    from s3bulk.stores.s3.wire import parse_object_parts

    aws = (b'<?xml version="1.0"?><GetObjectAttributesOutput><ObjectParts><TotalPartsCount>2</TotalPartsCount>'
           b'<IsTruncated>true</IsTruncated><NextPartNumberMarker>2</NextPartNumberMarker>'
           b'<Part><ChecksumSHA256>AAA=</ChecksumSHA256><PartNumber>1</PartNumber><Size>5</Size></Part>'
           b'<Part><ChecksumSHA256>BBB=</ChecksumSHA256><PartNumber>2</PartNumber><Size>3</Size></Part>'
           b'</ObjectParts></GetObjectAttributesOutput>')
    assert parse_object_parts(aws) == ([(1, 5, "AAA="), (2, 3, "BBB=")], 2)
    minio = (b'<getObjectAttributesResponse><ObjectParts><IsTruncated>false</IsTruncated>'
             b'<NextPartNumberMarker>1</NextPartNumberMarker><Part><PartNumber>1</PartNumber><Size>7</Size>'
             b'<ChecksumCRC32C>CCC=</ChecksumCRC32C></Part></ObjectParts></getObjectAttributesResponse>')
    assert parse_object_parts(minio) == ([(1, 7, "CCC=")], None)
    versitygw = b'<GetObjectAttributesResponse><ObjectSize>12</ObjectSize></GetObjectAttributesResponse>'
    assert parse_object_parts(versitygw) is None
    no_checksums = b'<X><ObjectParts><Part><PartNumber>1</PartNumber><Size>7</Size></Part></ObjectParts></X>'
    assert parse_object_parts(no_checksums) is None
