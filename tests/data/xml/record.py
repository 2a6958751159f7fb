"""Record the raw XML answers of a real S3 server into this folder (the fixtures of
tests/test_xml_differential.py): listings (odd keys, url-encoded, empty, truncated with a
continuation token, common prefixes, owners, storage classes, checksums), errors, multipart
answers, object parts and tagging, each body as the server sent it.

    uv run --frozen python tests/data/xml/record.py NAME ENDPOINT ACCESS SECRET

NAME prefixes the files (localstack, versitygw). What a server refuses is skipped with a note, and
an error-* answer the server did not give as an error is not kept (LocalStack checks no signature).
Recorded with LocalStack at http://127.0.0.1:4566 (test/test) and versitygw 1.8.0
(`versitygw --access A --secret Ssssssss --port 127.0.0.1:7071 posix ROOT`).
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import botocore.session
from botocore.config import Config

HERE = Path(__file__).resolve().parent
KEYS = ["a&b", "<x>.txt", "q\"uote's", "ctl\x01\x1f", "cr\rlf\n", "日本/ü/\u00a0", "sp ace+plus%25",
        "dir/sub/file", "dir/other", "\U0001F600smile", "]]>cdata-end", "tab\tkey"]


def main() -> None:
    name, endpoint, access, secret = sys.argv[1:5]
    s3 = botocore.session.get_session().create_client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=access,
        aws_secret_access_key=secret, config=Config(s3={"addressing_style": "path"},
                                                    retries={"total_max_attempts": 1}))
    captured: dict[str, bytes] = {}

    def keep(response_dict, operation_model, **_):  # before-parse: the raw body
        captured["body"] = response_dict["body"]
    s3.meta.events.register("before-parse.s3.*", keep)

    def save(what: str, call) -> None:
        captured.pop("body", None)
        try:
            call()
            if what.startswith("error-"):
                print(f"{what}: no error from this server, not kept")
                return
        except Exception as exc:  # an error answer is what some of these record
            print(f"{what}: {type(exc).__name__}: {str(exc)[:120]}")
        body = captured.get("body")
        if body:
            (HERE / f"{name}-{what}.xml").write_bytes(body)
            print(f"{what}: {len(body)} bytes")

    # botocore would ask every listing for url-encoded keys: off, as s3bulk lists
    from botocore.handlers import set_list_objects_encoding_type_url
    s3.meta.events.unregister("before-parameter-build.s3.ListObjectsV2", set_list_objects_encoding_type_url)

    bucket = f"xml-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    for k in KEYS:
        try:
            s3.put_object(Bucket=bucket, Key=k, Body=k.encode(), ChecksumAlgorithm="CRC32")
        except Exception as exc:
            print(f"put {k!r}: {exc}")
    for sc in ("STANDARD_IA", "GLACIER"):
        try:
            s3.put_object(Bucket=bucket, Key=f"class/{sc}", Body=b"x", StorageClass=sc)
        except Exception as exc:
            print(f"put class {sc}: {exc}")
    save("list-odd", lambda: s3.list_objects_v2(Bucket=bucket))
    save("list-url", lambda: s3.list_objects_v2(Bucket=bucket, EncodingType="url"))
    save("list-empty", lambda: s3.list_objects_v2(Bucket=bucket, Prefix="nothing-here/"))
    save("list-truncated", lambda: s3.list_objects_v2(Bucket=bucket, MaxKeys=3))
    save("list-delimiter", lambda: s3.list_objects_v2(Bucket=bucket, Delimiter="/", Prefix="dir/", FetchOwner=True))
    save("list-delimiter-url", lambda: s3.list_objects_v2(Bucket=bucket, Delimiter="/", EncodingType="url"))
    save("list-owner", lambda: s3.list_objects_v2(Bucket=bucket, FetchOwner=True, Prefix="class/"))
    save("error-nosuchkey", lambda: s3.get_object(Bucket=bucket, Key="missing&<key>"))
    save("error-nosuchbucket", lambda: s3.list_objects_v2(Bucket=bucket + "-missing"))
    save("error-nosuchupload", lambda: s3.list_parts(Bucket=bucket, Key="k", UploadId="nope"))
    up = s3.create_multipart_upload(Bucket=bucket, Key="multi&part", ChecksumAlgorithm="SHA256")
    save("create-multipart", lambda: s3.create_multipart_upload(Bucket=bucket, Key="multi&part2"))
    part = s3.upload_part(Bucket=bucket, Key="multi&part", UploadId=up["UploadId"], PartNumber=1,
                          Body=b"p" * (5 << 20), ChecksumAlgorithm="SHA256")
    part2 = s3.upload_part(Bucket=bucket, Key="multi&part", UploadId=up["UploadId"], PartNumber=2,
                           Body=b"q" * 10, ChecksumAlgorithm="SHA256")
    parts = [{"PartNumber": 1, "ETag": part["ETag"], "ChecksumSHA256": part.get("ChecksumSHA256")},
             {"PartNumber": 2, "ETag": part2["ETag"], "ChecksumSHA256": part2.get("ChecksumSHA256")}]
    parts = [{k: v for k, v in p.items() if v} for p in parts]
    save("complete-multipart", lambda: s3.complete_multipart_upload(
        Bucket=bucket, Key="multi&part", UploadId=up["UploadId"], MultipartUpload={"Parts": parts}))
    save("object-parts", lambda: s3.get_object_attributes(Bucket=bucket, Key="multi&part",
                                                          ObjectAttributes=["ObjectParts"], MaxParts=1))
    save("copy", lambda: s3.copy_object(Bucket=bucket, Key="copied", CopySource=f"{bucket}/a&b"))
    s3.put_object_tagging(Bucket=bucket, Key="a&b", Tagging={"TagSet": [
        {"Key": "k+=1 :/@", "Value": "v_1.x"}, {"Key": "empty", "Value": ""}]})
    save("tagging", lambda: s3.get_object_tagging(Bucket=bucket, Key="a&b"))
    bad = botocore.session.get_session().create_client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=access,
        aws_secret_access_key=secret + "x", config=Config(s3={"addressing_style": "path"},
                                                          retries={"total_max_attempts": 1}))
    bad.meta.events.register("before-parse.s3.*", keep)
    s3, good = bad, s3
    save("error-signature", lambda: bad.list_objects_v2(Bucket=bucket))
    s3 = good


if __name__ == "__main__":
    main()
