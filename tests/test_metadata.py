"""Object properties (issue 16): aws-cli's upload options set them, every S3-to-S3 path carries
them (CopyObject, UploadPartCopy, streamed whole and in parts between two endpoints), --copy-props
and --metadata-directive change what is carried, and --preserve-xattrs keeps them on local disk.

LocalStack is one server, but under two host names it is two endpoints to s3bulk, which then
streams the bytes through the worker (server_side_copies == 0) as between two providers.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

MiB = 1024 * 1024
SMALL_PARTS = ["--multipart-threshold", "5MiB", "--part-size", "5MiB"]
BIG = 6 * MiB  # above the lowered threshold: moves in parts


@pytest.fixture(params=["lean", "botocore"])
def data_path(request, monkeypatch):
    """Both S3 data paths: the lean one (default) and plain aiobotocore."""
    monkeypatch.setenv("S3BULK_DATA_PATH", request.param)
    return request.param


def _props(s3, bucket: str, key: str) -> dict:
    """What a user sees of an object: system and user metadata, storage class, encryption, tags."""
    h = s3.head_object(Bucket=bucket, Key=key)
    tags = s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
    return {"type": h.get("ContentType"), "cache": h.get("CacheControl"),
            "disposition": h.get("ContentDisposition"), "encoding": h.get("ContentEncoding"),
            "language": h.get("ContentLanguage"),
            "expires": h["ResponseMetadata"]["HTTPHeaders"].get("expires"),
            "meta": h.get("Metadata", {}), "class": h.get("StorageClass", "STANDARD"),
            "tags": {t["Key"]: t["Value"] for t in tags}}


RICH = dict(ContentType="application/x-thing", CacheControl="max-age=300", ContentDisposition="attachment",
            ContentEncoding="identity", ContentLanguage="de", Expires="2031-02-03T04:05:06Z",
            Metadata={"owner": "ana", "run": "7"}, Tagging="team=data&stage=raw%20one",
            StorageClass="STANDARD_IA")
RICH_SEEN = {"type": "application/x-thing", "cache": "max-age=300", "disposition": "attachment",
             "encoding": "identity", "language": "de", "expires": "Mon, 03 Feb 2031 04:05:06 GMT",
             "meta": {"owner": "ana", "run": "7"}, "class": "STANDARD_IA",
             "tags": {"team": "data", "stage": "raw one"}}


def _put_rich(s3, bucket: str, key: str, body: bytes) -> None:
    """An object with every carried property, written in parts when big (as other tools do)."""
    if len(body) <= 5 * MiB:
        s3.put_object(Bucket=bucket, Key=key, Body=body, **RICH)
        return
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, **RICH)
    parts = []
    for n, start in enumerate(range(0, len(body), 5 * MiB), 1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=n,
                           Body=body[start:start + 5 * MiB])
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up["UploadId"], MultipartUpload={"Parts": parts})


def test_upload_options_set_every_property(data_path, cli, s3, bucket, tmp_path):
    """One small file (PutObject) and one in parts (CreateMultipartUpload carries them)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "small.txt").write_bytes(b"small")
    (src / "big.bin").write_bytes(os.urandom(BIG))
    r = cli("copy", str(src), f"s3://{bucket}/", *SMALL_PARTS, "--no-journal",
            "--content-type", "text/x-mine", "--metadata", "owner=ana,run=7", "--cache-control", "max-age=300",
            "--content-disposition", "attachment", "--content-encoding", "identity", "--content-language", "de",
            "--expires", "2031-02-03T04:05:06Z", "--storage-class", "STANDARD_IA", "--acl", "private",
            "--tagging", "team=data&stage=raw%20one", "--sse", "AES256")
    assert r.code == 0, r
    want = dict(RICH_SEEN, type="text/x-mine")
    for key in ("small.txt", "big.bin"):
        got = _props(s3, bucket, key)
        assert float(got["meta"].pop("mtime")) > 0  # the file's time (tests/test_mtime_s3.py)
        assert got == want
        assert s3.head_object(Bucket=bucket, Key=key)["ServerSideEncryption"] == "AES256"
    assert s3.head_object(Bucket=bucket, Key="big.bin", PartNumber=1)["PartsCount"] == 2


def test_upload_no_guess_mime_type(cli, s3, bucket, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "page.html").write_bytes(b"<p>")
    r = cli("copy", str(src), f"s3://{bucket}/", "--no-guess-mime-type", "--no-journal")
    assert r.code == 0, r
    assert s3.head_object(Bucket=bucket, Key="page.html")["ContentType"] in ("binary/octet-stream",
                                                                             "application/octet-stream")


def test_upload_with_a_customer_key(cli, s3, bucket, tmp_path):
    """SSE-C: the key goes on the PUT, the CreateMultipartUpload and every part; the object then
    reads only with it. The key is never printed."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "small").write_bytes(b"secret")
    (src / "big").write_bytes(os.urandom(BIG))
    key = "0123456789abcdef0123456789abcdef"
    r = cli("copy", str(src), f"s3://{bucket}/", *SMALL_PARTS, "--no-journal", "--sse-c", "AES256",
            "--sse-c-key", key)
    assert r.code == 0, r
    assert key not in r.out + r.err
    for name in ("small", "big"):
        h = s3.head_object(Bucket=bucket, Key=name, SSECustomerAlgorithm="AES256", SSECustomerKey=key)
        assert h["SSECustomerAlgorithm"] == "AES256"
    got = s3.get_object(Bucket=bucket, Key="big", SSECustomerAlgorithm="AES256", SSECustomerKey=key)
    assert got["Body"].read() == (src / "big").read_bytes()


def test_upload_with_kms(cli, s3, bucket, tmp_path, endpoint):
    import botocore.config
    import botocore.session

    once = botocore.session.get_session().create_client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", config=botocore.config.Config(retries={"max_attempts": 1}))
    try:
        once.put_object(Bucket=bucket, Key="probe", Body=b"x", ServerSideEncryption="aws:kms")
    except Exception as exc:  # LocalStack without its KMS service cannot make the default key
        pytest.skip(f"this LocalStack does not serve SSE-KMS without a KMS set-up: {str(exc)[:120]}")
    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_bytes(b"k")
    r = cli("copy", str(src), f"s3://{bucket}/up/", "--sse", "aws:kms", "--no-journal")
    assert r.code == 0, r
    assert s3.head_object(Bucket=bucket, Key="up/f")["ServerSideEncryption"] == "aws:kms"


@pytest.mark.unit
@pytest.mark.parametrize("args,says", [
    (["--storage-class", "COLD"], "--storage-class must be one of"), (["--sse", "rot13"], "--sse must be"),
    (["--metadata", "novalue"], "--metadata expects KEY=VALUE"), (["--tagging", "a=1&&"], "--tagging expects"),
    (["--expires", "next tuesday"], "--expires: not a time"),
    (["--sse-c", "AES256", "--sse-c-key", "short-secret-key"], "--sse-c-key must be 32 bytes"),
    (["--sse-c-key", "0123456789abcdef0123456789abcdef"], "--sse-c and --sse-c-key go together"),
    (["--copy-props", "everything"], "--copy-props must be one of"),
    (["--metadata-directive", "MERGE"], "--metadata-directive must be COPY or REPLACE"),
    (["--sse-kms-key-id", "k1"], "--sse-kms-key-id needs --sse aws:kms"), (["--acl", "world"], "--acl must be"),
    (["--cache-control", "a\u00e9"], "--cache-control must be printable ASCII"),
])
def test_bad_values_are_one_line_and_exit_2(capsys, tmp_path, args, says):
    """Checked before anything is sent (in-process: no server is reached); secrets never echoed."""
    from s3bulk.cli import main

    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(SystemExit) as exit_:
        main(["copy", str(tmp_path / "f"), "s3://no-such-bucket-m16/f", "--no-journal", "-q", *args])
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("s3bulk: error: ") and says in lines[0], err
    assert "short-secret-key" not in err and "0123456789abcdef" not in err


def test_streamed_copy_between_endpoints_carries_properties(data_path, cli, s3, make_bucket, endpoint):
    """Whole (one GET, one PUT) and in parts (CreateMultipartUpload with them), tags included;
    an object without tags stays without."""
    a, b = make_bucket(), make_bucket()
    _put_rich(s3, a, "small", b"small body")
    _put_rich(s3, a, "big", os.urandom(BIG))
    s3.put_object(Bucket=a, Key="plain.json", Body=b"{}", ContentType="application/json")
    r = cli("copy", f"s3://{a}/", f"s3://{b}/", *SMALL_PARTS, "--json", "--no-journal",
            "--src-endpoint-url", endpoint, "--dst-endpoint-url", endpoint.replace("127.0.0.1", "localhost"))
    assert r.code == 0, r
    assert r.summary["server_side_copies"] == 0 and r.summary["copied"] == 3
    assert _props(s3, b, "small") == RICH_SEEN
    assert _props(s3, b, "big") == RICH_SEEN
    assert s3.head_object(Bucket=b, Key="big", PartNumber=1)["PartsCount"] == 2
    plain = _props(s3, b, "plain.json")
    assert plain["type"] == "application/json" and plain["tags"] == {} and plain["meta"] == {}


def test_server_side_copy_in_parts_carries_properties(cli, s3, make_bucket):
    """UploadPartCopy (above the CopyObject limit, lowered here): its CreateMultipartUpload gets
    what CopyObject would have kept."""
    a, b = make_bucket(), make_bucket()
    _put_rich(s3, a, "big", os.urandom(BIG))
    r = cli("copy", f"s3://{a}/big", f"s3://{b}/big", "--json", "--no-journal",
            "--copy-threshold", "5MiB", "--copy-part-size", "5MiB")
    assert r.code == 0, r
    assert r.summary["server_side_copies"] == 1
    assert s3.head_object(Bucket=b, Key="big", PartNumber=1)["PartsCount"] == 2
    assert _props(s3, b, "big") == RICH_SEEN


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "server-side"])
def test_copy_props_none_and_metadata_directive_replace(cli, s3, make_bucket, endpoint, streamed):
    a, b = make_bucket(), make_bucket()
    _put_rich(s3, a, "page.html", b"<p>")
    where = ["--src-endpoint-url", endpoint, "--dst-endpoint-url", endpoint.replace("127.0.0.1", "localhost")] \
        if streamed else []
    none = cli("copy", f"s3://{a}/", f"s3://{b}/none/", "--copy-props", "none", "--json", "--no-journal", *where)
    assert none.code == 0, none
    assert none.summary["server_side_copies"] == (0 if streamed else 1)
    got = _props(s3, b, "none/page.html")
    assert got["type"] == "text/html"  # guessed from the name, as an upload would
    assert got["meta"] == {} and got["tags"] == {} and got["cache"] is None and got["class"] == "STANDARD"

    replace = cli("copy", f"s3://{a}/", f"s3://{b}/replace/", "--metadata-directive", "REPLACE",
                  "--metadata", "fresh=yes", "--cache-control", "no-cache", "--json", "--no-journal", *where)
    assert replace.code == 0, replace
    got = _props(s3, b, "replace/page.html")
    assert got["meta"] == {"fresh": "yes"} and got["cache"] == "no-cache"
    assert got["disposition"] is None and got["language"] is None  # the source's are not kept
    assert got["tags"] == RICH_SEEN["tags"]  # --copy-props default still keeps the tags

    meta_only = cli("copy", f"s3://{a}/", f"s3://{b}/meta/", "--copy-props", "metadata-directive", "--json",
                    "--no-journal", *where)
    assert meta_only.code == 0, meta_only
    got = _props(s3, b, "meta/page.html")
    assert got["meta"] == RICH_SEEN["meta"] and got["cache"] == "max-age=300" and got["tags"] == {}


def _user_xattrs(path: Path) -> bool:
    probe = path / ".xattr-probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.s3bulk-probe", b"1")
        return True
    except OSError:
        return False
    finally:
        probe.unlink()


def test_preserve_xattrs_round_trip(cli, s3, make_bucket, tmp_path):
    if not hasattr(os, "setxattr") or not _user_xattrs(tmp_path):
        pytest.skip("the temporary directory's filesystem keeps no user.* extended attributes")
    a, b = make_bucket(), make_bucket()
    _put_rich(s3, a, "small", b"small body")
    _put_rich(s3, a, "big", os.urandom(BIG))
    down = tmp_path / "down"
    r = cli("copy", f"s3://{a}/", str(down), *SMALL_PARTS, "--preserve-xattrs", "--no-journal")
    assert r.code == 0, r
    for name in ("small", "big"):  # rclone's names: user.<metadata name>
        f = down / name
        assert os.getxattr(f, "user.content-type") == b"application/x-thing"
        assert os.getxattr(f, "user.cache-control") == b"max-age=300"
        assert os.getxattr(f, "user.owner") == b"ana" and os.getxattr(f, "user.run") == b"7"
        assert not [n for n in os.listxattr(f) if "tag" in n]  # tags are not file metadata

    plain = tmp_path / "plain"
    assert cli("copy", f"s3://{a}/small", str(plain), "--no-journal").code == 0
    assert not [n for n in os.listxattr(plain) if n.startswith("user.")]  # only when asked

    r = cli("copy", str(down), f"s3://{b}/", *SMALL_PARTS, "--preserve-xattrs", "--no-journal")
    assert r.code == 0, r
    for name in ("small", "big"):
        got = _props(s3, b, name)
        assert got["type"] == "application/x-thing" and got["cache"] == "max-age=300"
        assert float(got["meta"].pop("mtime")) > 0  # the file's time (tests/test_mtime_s3.py)
        assert got["meta"] == {"owner": "ana", "run": "7"}


def test_request_payer_goes_on_every_request(data_path, cli, s3, bucket, endpoint, tmp_path):
    """--request-payer requester is sent (and signed) on reads as well as writes, as aws-cli
    sends it: listing, GET, PUT, and a multipart upload's create, parts and completion."""
    from urllib.parse import urlsplit

    from faultproxy import FaultProxy

    s3.put_object(Bucket=bucket, Key="in/k", Body=b"v")
    src = tmp_path / "up"
    src.mkdir()
    (src / "small").write_bytes(b"s")
    (src / "big").write_bytes(os.urandom(BIG))
    seen: list[tuple[str, str, dict]] = []

    def record(method, target, headers):
        seen.append((method, target, headers))
        return None

    up = urlsplit(endpoint)
    with FaultProxy(up.hostname, up.port, [record]) as proxy:
        down = cli("copy", f"s3://{bucket}/in/", str(tmp_path / "down"), "--endpoint-url", proxy.url,
                   "--request-payer", "requester", "--no-journal")
        assert down.code == 0, down
        upload = cli("copy", str(src), f"s3://{bucket}/out/", "--endpoint-url", proxy.url, *SMALL_PARTS,
                     "--request-payer", "requester", "--no-journal")
        assert upload.code == 0, upload
    methods = {m for m, _, _ in seen}
    assert {"GET", "PUT", "POST"} <= methods, methods
    missing = [(m, t) for m, t, h in seen if h.get("x-amz-request-payer") != "requester"]
    assert not missing, missing
    assert (tmp_path / "down" / "k").read_bytes() == b"v"
