"""The Lambda handler takes the object-property options (issue 16) in its event's "options", with
the command line's names and checks: properties set on the copies, an SSE-C source read and
re-keyed, and a bad value answered as {"ok": false, "error": one line} with no key in it.
In-process against LocalStack, as the handler runs inside Lambda."""

from __future__ import annotations

import json

import pytest

OLD = "0123456789abcdefOLDKEYold-key-32"
NEW = "fedcba9876543210NEWKEYnew-key-32"


def _ssec(key: str) -> dict:
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key.encode()}


def test_property_options_are_set_on_the_copies(s3, make_bucket, endpoint):
    from s3bulk.aws_lambda import handler

    src, dst = make_bucket(), make_bucket()
    s3.put_object(Bucket=src, Key="p/a.bin", Body=b"a", Metadata={"old": "1"})
    options = {"content-type": "text/plain", "metadata": {"owner": "ana"}, "tagging": "team=data",
               "storage-class": "STANDARD_IA", "cache-control": "no-cache", "metadata-directive": "REPLACE",
               "sse": "AES256"}
    out = handler({"source": f"s3://{src}/p/", "destination": f"s3://{dst}/q/", "endpoint_url": endpoint,
                   "options": options}, None)
    assert out["ok"] and out["done"] and out["copied"] == 1, out
    h = s3.head_object(Bucket=dst, Key="q/a.bin")
    assert (h["ContentType"], h["Metadata"], h["CacheControl"]) == ("text/plain", {"owner": "ana"}, "no-cache")
    assert h.get("StorageClass") == "STANDARD_IA" and h["ServerSideEncryption"] == "AES256"
    assert s3.get_object_tagging(Bucket=dst, Key="q/a.bin")["TagSet"] == [{"Key": "team", "Value": "data"}]


def test_sse_c_source_is_read_and_re_keyed(s3, make_bucket, endpoint):
    from s3bulk.aws_lambda import handler

    src, dst = make_bucket(), make_bucket()
    s3.put_object(Bucket=src, Key="k", Body=b"secret", **_ssec(OLD))
    options = {"sse-c-copy-source": "AES256", "sse-c-copy-source-key": OLD, "sse-c": "AES256", "sse-c-key": NEW}
    # another host name for DST: a streamed copy (GET with OLD, PUT with NEW), not CopyObject
    out = handler({"source": f"s3://{src}/", "destination": f"s3://{dst}/", "src_endpoint_url": endpoint,
                   "dst_endpoint_url": endpoint.replace("127.0.0.1", "localhost"), "options": options}, None)
    assert out["ok"] and out["copied"] == 1, out
    assert s3.get_object(Bucket=dst, Key="k", **_ssec(NEW))["Body"].read() == b"secret"
    assert OLD not in json.dumps(out) and NEW not in json.dumps(out)


@pytest.mark.parametrize("options, says", [
    ({"storage-class": "COLD"}, "--storage-class must be one of"),
    ({"metadata": 5}, "--metadata must be a string"),
    ({"metadata": {"a": 1}}, "--metadata must be an object of strings"),
    ({"no-guess-mime-type": "yes"}, "--no-guess-mime-type must be true or false"),
    ({"copy-props": "all"}, "--copy-props must be one of"),
    ({"sse-c-copy-source": "AES256"}, "go together"),
    ({"sse-c": "AES256", "sse-c-key": "short-secret-key"}, "--sse-c-key must be 32 bytes"),
])
def test_bad_property_values_are_refused(endpoint, options, says):
    from s3bulk.aws_lambda import handler

    out = handler({"source": "s3://some-bucket/", "destination": "s3://other-bucket/", "endpoint_url": endpoint,
                   "options": options}, None)
    assert out["ok"] is False and says in out["error"] and "\n" not in out["error"], out
    assert "short-secret-key" not in out["error"]
