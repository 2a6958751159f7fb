"""Every S3 error code s3bulk maps (stores/s3/errors.py), from the body a server really sends, on
both data paths: the lean path reads the body itself (wire.py `_error`), botocore parses it into a
ClientError that `translate` maps. Each must give the same class (which decides retrying and the
exit code) and words that name the real cause.

The bodies were recorded from versitygw v1.8.0 and LocalStack (the answers to the requests named
beside each); a code neither of them sends is written as AWS sends it (the S3 API reference's
error responses: same envelope, AWS's message). `test_every_mapped_code_has_a_row` fails when a code
is added to the mapping without a row here.
"""

from __future__ import annotations

import pytest

from s3bulk.errors import AccessDenied, BucketMissing, NotFound, SourceChanged, StoreError, Throttled, Transient
from s3bulk.http.client import Response
from s3bulk.stores.s3 import errors as s3errors
from s3bulk.stores.s3.errors import translate
from s3bulk.stores.s3.wire import S3Wire

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

_XML = b'<?xml version="1.0" encoding="UTF-8"?>\n'


def aws(code: str, message: str, extra: str = "") -> bytes:
    """An error body as AWS S3 sends it."""
    return _XML + (f"<Error><Code>{code}</Code><Message>{message}</Message>{extra}"
                   "<RequestId>4442587FB7D0A2F9</RequestId><HostId>eftixk72aD6Ap51TnqcoF8eFidJG9Z/2mkiDFu8yU9AS1ed4O"
                   "pIszj7UDNEHGran</HostId></Error>").encode()


# ---- recorded from versitygw v1.8.0 (posix backend)
VGW_SIGNATURE = (  # ListObjectsV2 signed with a wrong secret (the long fields kept as sent)
    _XML + b"<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match "
    b"the signature you provided. Check your key and signing method.</Message><AWSAccessKeyId>AK</AWSAccessKeyId>"
    b"<StringToSign>AWS4-HMAC-SHA256&#xA;20261127T211307Z&#xA;20261127/us-east-1/s3/aws4_request&#xA;e09638c5d78effbe"
    b"501afc80e65da7fb68cae46ef9bddb934ed91fde90875a85</StringToSign><SignatureProvided>601df0b3bee2e2594dd486700e1b71"
    b"8f5973fe769876b7887221a4c7a10298f9</SignatureProvided><CanonicalRequest>GET&#xA;/sign-test&#xA;list-type=2&#xA;"
    b"host:127.0.0.1:17391&#xA;x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    b"&#xA;x-amz-date:20261127T211307Z&#xA;&#xA;host;x-amz-content-sha256;x-amz-date&#xA;e3b0c44298fc1c149afbf4c8996f"
    b"b92427ae41e4649b934ca495991b7852b855</CanonicalRequest><RequestId>AMTWYF3ROSO8JGDL</RequestId><HostId>VNUweYRYIu"
    b"DcfFi3Dhq//N1iH0I7YgvvXEwhHHbaaNrcudDUcHtMnA+xnR8n0S/EVlRYQq/3COudtGnnT7u9kFQ=</HostId></Error>")
VGW_UNKNOWN_KEY = (  # ListObjectsV2 signed with an access key the server does not know: a 404
    _XML + b"<Error><Code>XAdminUserNotFound</Code><Message>No user exists with the provided access key ID.</Message>"
    b"<RequestId>PHQBBRFDRFDOQSMT</RequestId><HostId>xqeyRzhMSCLPd/ufoX2EhRs4urzQ4krj8Zxjlh4+eQJ7xqKq7+HdIoJgDRZyXkCzVb"
    b"FYeFQYISM//8BHXINR5Bo=</HostId></Error>")
VGW_NO_BUCKET = (  # ListObjectsV2 of a bucket that does not exist
    _XML + b"<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist.</Message><BucketName>no-such-"
    b"bucket-zz</BucketName><RequestId>TITIHNZJGFDHD68H</RequestId><HostId>MdMpq3hf6no2mOG9Py3AZxihRcNjRMP2VZvXKmxlu+n5"
    b"AKJy2uDQCg3NIj29AHwS0hNz7ugSYjlR2qr+Np2iNFA=</HostId></Error>")
VGW_NO_KEY = (  # GetObject of a key that does not exist
    _XML + b"<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><RequestId>VN28RH0XUUSBY"
    b"Y2I</RequestId><HostId>xMjm0D9YlDD3PZ2DmSqMvtsTAiVjrWlTn5YHvKkN1hDqNr6XCpAysh9pqUh1oSGkXxt4ZvcrsCF+pzf1novS2cY="
    b"</HostId></Error>")
VGW_NO_UPLOAD = (  # AbortMultipartUpload of an upload id that does not exist
    _XML + b"<Error><Code>NoSuchUpload</Code><Message>The specified multipart upload does not exist. The upload ID may "
    b"be invalid, or the upload may have been aborted or completed.</Message><UploadId>nope</UploadId><RequestId>YRRTU9"
    b"P59XKXWY1F</RequestId><HostId>Sk2L3HFkibBwEfmgHE7vEIrFaU/yMWCNHoezyjK733/AOL1+/RoH41bQ6IUohKBOGZ0fChFdMd+M0GdYZjB"
    b"+YtA=</HostId></Error>")
VGW_DENIED = (  # ListObjectsV2 sent unsigned
    _XML + b"<Error><Code>AccessDenied</Code><Message>Access Denied.</Message><RequestId>5IK2POKM4PE6TJW8</RequestId>"
    b"<HostId>UyOMXLhAKb45/afaINlcjK9ZXcmrrTPvzC6tx1iWRUFiXB91Tsc16KuK05RLLXDGhAz7BaIIpwn4tlwwjDhJJ7Y=</HostId></Error>")
VGW_PRECONDITION = (  # GetObject with If-Match of another ETag
    _XML + b"<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not "
    b"hold.</Message><Condition>If-Match</Condition><RequestId>KTN256XSBUO22XZB</RequestId><HostId>zT3dDHlW3rLLUmaSVtAI"
    b"n9XHqRRyfLJTk+BhgpQ9CLc9ZtewuJ0VKdxU8G8D116vnXi6GRdPHbbGENKVxKwvoDY=</HostId></Error>")
VGW_SKEWED = (  # ListObjectsV2 signed an hour in the past: a 403
    _XML + b"<Error><Code>RequestTimeTooSkewed</Code><Message>The difference between the request time and the current "
    b"time is too large.</Message><RequestTime>20261127T201307Z</RequestTime><ServerTime>2026-11-27T21:13:07Z</ServerT"
    b"ime><MaxAllowedSkewMilliseconds>900000</MaxAllowedSkewMilliseconds><RequestId>8IN9VYG7HUWE9T3D</RequestId><HostI"
    b"d>RZ/vziSd1gp34/leda+g5sw9BY4iX9902jLKdhjCzgsnCsoYGPCXdutq2CsP4AVSbd7TGMnRRRW1UH//bu57evM=</HostId></Error>")
# ---- recorded from LocalStack (its XML declaration in single quotes)
_LS = b"<?xml version='1.0' encoding='utf-8'?>\n"
LS_NO_BUCKET = (_LS + b"<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message><Request"
                b"Id>1cc23f7a-a967-4704-a434-9ff6d253e20f</RequestId><BucketName>no-such-bucket-zz</BucketName></Error>")
LS_NO_KEY = (_LS + b"<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><RequestId>38ca78"
             b"9d-76b7-4234-9575-7b7d1473709a</RequestId><Key>no-such-key</Key></Error>")
LS_NO_UPLOAD = (_LS + b"<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist. The upload ID may "
                b"be invalid, or the upload may have been aborted or completed.</Message><RequestId>f1418d2c-7420-4ab9-"
                b"9928-db6ee37f210b</RequestId><UploadId>nope</UploadId></Error>")
LS_PRECONDITION = (_LS + b"<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specifi"
                   b"ed did not hold</Message><RequestId>e168bd3f-b879-46bc-9812-fe1d7a329e9b</RequestId><Condition>If-M"
                   b"atch</Condition></Error>")
LS_BAD_NAME = (_LS + b"<Error><Code>InvalidBucketName</Code><Message>The specified bucket is not valid.</Message><Reques"
               b"tId>a5f93636-b4d4-43c5-b565-504d35629601</RequestId><BucketName>A_B</BucketName></Error>")

SIGNATURE_WORDS = ("different signature than s3bulk sent", "secret key is wrong", "S3BULK_DATA_PATH=botocore")
UNKNOWN_KEY_WORDS = ("access key is unknown to the server",)

# (id, status, body, op, class, words the message must hold)
CASES = [
    ("vgw-SignatureDoesNotMatch", 403, VGW_SIGNATURE, "list", AccessDenied, SIGNATURE_WORDS),
    ("vgw-XAdminUserNotFound", 404, VGW_UNKNOWN_KEY, "list", AccessDenied, UNKNOWN_KEY_WORDS),
    ("vgw-XAdminUserNotFound-check-bucket", 404, VGW_UNKNOWN_KEY, "check bucket", AccessDenied, UNKNOWN_KEY_WORDS),
    ("vgw-NoSuchBucket", 404, VGW_NO_BUCKET, "list", BucketMissing, ("bucket does not exist",)),
    ("vgw-NoSuchKey", 404, VGW_NO_KEY, "get", NotFound, ("no such key",)),
    ("vgw-NoSuchUpload", 404, VGW_NO_UPLOAD, "abort multipart upload", NotFound, ("no such key",)),
    ("vgw-AccessDenied", 403, VGW_DENIED, "list", AccessDenied, ("access denied (AccessDenied)",)),
    ("vgw-PreconditionFailed", 412, VGW_PRECONDITION, "get", SourceChanged, ("changed while it was read",)),
    ("vgw-RequestTimeTooSkewed", 403, VGW_SKEWED, "list", AccessDenied, ("clock", "RequestTimeTooSkewed")),
    ("ls-NoSuchBucket", 404, LS_NO_BUCKET, "list", BucketMissing, ("bucket does not exist",)),
    ("ls-NoSuchKey", 404, LS_NO_KEY, "get", NotFound, ("no such key",)),
    ("ls-NoSuchUpload", 404, LS_NO_UPLOAD, "abort multipart upload", NotFound, ("no such key",)),
    ("ls-PreconditionFailed", 412, LS_PRECONDITION, "get", SourceChanged, ("changed while it was read",)),
    ("ls-InvalidBucketName", 400, LS_BAD_NAME, "list", StoreError, ("InvalidBucketName: The specified bucket is not",)),
    # as AWS sends them (S3 API reference, error responses)
    ("aws-InvalidAccessKeyId", 403, aws("InvalidAccessKeyId", "The AWS access key Id you provided does not exist in "
                                        "our records.", "<AWSAccessKeyId>AKIAWRONG</AWSAccessKeyId>"),
     "list", AccessDenied, UNKNOWN_KEY_WORDS + ("InvalidAccessKeyId",)),
    ("aws-SignatureDoesNotMatch", 403, aws("SignatureDoesNotMatch", "The request signature we calculated does not "
                                           "match the signature you provided. Check your key and signing method."),
     "put", AccessDenied, SIGNATURE_WORDS),
    ("aws-ExpiredToken", 400, aws("ExpiredToken", "The provided token has expired."), "list", AccessDenied,
     ("credentials expired (ExpiredToken)",)),
    ("aws-TokenRefreshRequired", 400, aws("TokenRefreshRequired", "The provided token must be refreshed."), "list",
     AccessDenied, ("credentials expired (TokenRefreshRequired)",)),
    ("aws-InvalidToken", 400, aws("InvalidToken", "The provided token is malformed or otherwise invalid."), "list",
     AccessDenied, ("session token is malformed",)),
    ("aws-InvalidClientTokenId", 403, aws("InvalidClientTokenId", "The security token included in the request is "
                                          "invalid."), "list", AccessDenied, ("access key or session token is unknown",)),
    ("aws-UnrecognizedClientException", 400, aws("UnrecognizedClientException", "The security token included in "
                                                  "the request is invalid."), "list", AccessDenied,
     ("access key or session token is unknown",)),
    ("aws-AllAccessDisabled", 403, aws("AllAccessDisabled", "All access to this Amazon S3 resource has been "
                                       "disabled."), "get", AccessDenied, ("all access", "disabled")),
    ("aws-AccountProblem", 403, aws("AccountProblem", "There is a problem with your AWS account that prevents the "
                                    "action from completing successfully."), "get", AccessDenied, ("account",)),
    ("aws-AccessDenied", 403, aws("AccessDenied", "Access Denied"), "put", AccessDenied,
     ("access denied (AccessDenied)",)),
    ("aws-NoSuchBucket", 404, aws("NoSuchBucket", "The specified bucket does not exist",
                                  "<BucketName>gone</BucketName>"), "put", BucketMissing, ("bucket does not exist",)),
    ("aws-SlowDown", 503, aws("SlowDown", "Please reduce your request rate."), "put", Throttled,
     ("throttled", "SlowDown")),
    ("aws-RequestLimitExceeded", 503, aws("RequestLimitExceeded", "Request limit exceeded."), "put", Throttled,
     ("throttled",)),
    ("aws-TooManyRequests", 429, aws("TooManyRequests", "Too many requests."), "put", Throttled, ("throttled",)),
    ("aws-Throttling", 400, aws("Throttling", "Rate exceeded"), "list", Throttled, ("throttled",)),
    ("aws-ThrottlingException", 400, aws("ThrottlingException", "Rate exceeded"), "list", Throttled, ("throttled",)),
    ("aws-RequestThrottled", 503, aws("RequestThrottled", "Request throttled"), "list", Throttled, ("throttled",)),
    ("aws-InternalError", 500, aws("InternalError", "We encountered an internal error. Please try again."), "get",
     Transient, ("server error 500",)),
    ("aws-ServiceUnavailable", 503, aws("ServiceUnavailable", "Service is unable to handle request."), "get",
     Throttled, ("throttled",)),
    ("aws-RequestTimeout", 400, aws("RequestTimeout", "Your socket connection to the server was not read from or "
                                    "written to within the timeout period."), "put", Transient, ("RequestTimeout",)),
    ("aws-BadDigest", 400, aws("BadDigest", "The Content-MD5 or checksum value that you specified did not match "
                               "what the server received."), "put", Transient, ("BadDigest",)),
    ("aws-IncompleteBody", 400, aws("IncompleteBody", "You did not provide the number of bytes specified by the "
                                    "Content-Length HTTP header."), "put", Transient, ("IncompleteBody",)),
    ("aws-XAmzContentSHA256Mismatch", 400, aws("XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' "
                                               "header does not match what was computed."), "put", Transient,
     ("XAmzContentSHA256Mismatch",)),
    ("aws-NotImplemented", 501, aws("NotImplemented", "A header you provided implies functionality that is not "
                                    "implemented."), "get tagging", StoreError, ("does not implement",)),
    ("aws-PermanentRedirect", 301, aws("PermanentRedirect", "The bucket you are attempting to access must be "
                                       "addressed using the specified endpoint.",
                                       "<Endpoint>b.s3.eu-west-3.amazonaws.com</Endpoint>"),
     "get", StoreError, ("redirects", "PermanentRedirect")),
    ("aws-TemporaryRedirect", 307, aws("TemporaryRedirect", "Please re-send this request to the specified temporary "
                                       "endpoint."), "get", StoreError, ("redirects", "TemporaryRedirect")),
    ("aws-Redirect", 307, aws("Redirect", "Temporary redirect."), "get", StoreError, ("redirects",)),
    # HEAD answers carry no body: only the status says anything
    ("head-403", 403, b"", "head", AccessDenied, ("access denied (403, no reason given",)),
    ("head-404", 404, b"", "head", NotFound, ("no such key",)),
    ("head-404-check-bucket", 404, b"", "check bucket", BucketMissing, ("bucket does not exist",)),
    ("head-412", 412, b"", "get", SourceChanged, ("changed while it was read",)),
    ("head-400-sse-c", 400, b"", "head", StoreError, ("SSE-C",)),
]


def _wire() -> S3Wire:
    async def no_credentials():
        return None
    return S3Wire("http://127.0.0.1:9/bucket/k", "us-east-1", no_credentials, bucket="bucket")


def _botocore(status: int, body: bytes, op: str) -> BaseException:
    """The ClientError botocore raises for this answer (its own parser, as the botocore path gets it)."""
    import botocore.session
    from botocore.exceptions import ClientError
    from botocore.parsers import RestXMLParser

    name = "HeadObject" if op in ("head", "check bucket") else "ListObjectsV2"
    model = botocore.session.get_session().get_service_model("s3").operation_model(name)
    parsed = RestXMLParser().parse({"status_code": status, "headers": {}, "body": body}, model.output_shape)
    return ClientError(parsed, name)


@pytest.mark.parametrize("status,body,op,cls,words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_error_names_its_cause_on_both_paths(status, body, op, cls, words):
    url, key = "s3://bucket/k", "" if op in ("list", "check bucket") else "k"
    lean = _wire()._error(Response(status, {}, body), op, url, key)
    boto = translate(_botocore(status, body, op), op, url, key)
    for err in (lean, boto):
        assert type(err) is cls, (err, type(err))
        for word in words:
            assert word in err.message, err.message
        assert "\n" not in err.message
    assert lean.message == boto.message
    assert lean.retryable == boto.retryable and lean.exit_code == boto.exit_code


def test_every_mapped_code_has_a_row():
    """Each code the mapping names (its sets and its own branches) is answered by a row above."""
    mapped = (s3errors._DENIED | s3errors._MISSING | s3errors._THROTTLED | set(s3errors._WHY)
              | {"PermanentRedirect", "TemporaryRedirect", "Redirect", "PreconditionFailed", "NotImplemented",
                 "RequestTimeout", "InternalError", "BadDigest", "IncompleteBody", "XAmzContentSHA256Mismatch"})
    status_only = {"403", "404", "503", "Forbidden", "NotFound"}  # what botocore calls a bodyless answer
    rows = {c[0].split("-", 1)[1].removesuffix("-check-bucket") for c in CASES}
    missing = sorted(code for code in mapped - status_only if code not in rows)
    assert missing == [], f"mapped S3 error codes without a recorded body here: {missing}"


@pytest.mark.parametrize("status,body", [(403, VGW_SIGNATURE), (403, aws("InvalidAccessKeyId", "x"))])
def test_no_message_blames_only_the_credentials(status, body):
    """The words of the issue: "credentials rejected (wrong access key or secret)" sent users to
    rotate keys that were fine when s3bulk had signed something else than it sent."""
    err = _wire()._error(Response(status, {}, body), "list", "s3://bucket/", "")
    assert "credentials rejected" not in err.message and "wrong access key or secret" not in err.message
