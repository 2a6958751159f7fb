"""The lean path's signer against botocore's S3SigV4Auth on generated requests (issue 33).

tests/test_sigv4.py checks a handful of chosen requests; here hypothesis makes hundreds: every
method s3bulk sends, keys over the whole range S3 allows (any Unicode, `%`, `+`, spaces, `~`,
runs of `/`), the query parameters of listings, versions and multipart uploads (continuation
tokens holding `=`, `+`, `/`; empty values as in `?uploads`), header values with inner runs of
spaces and tabs, leading and trailing whitespace, Unicode and empty values, signed and unsigned
payloads, session tokens. For each, s3bulk's canonical request, string to sign and Authorization
header must be botocore's, byte for byte: a server that checks signatures recomputes them the way
the SDKs do, and LocalStack does not check at all.

Seeded (`derandomize=True`) and bounded so that CI runs the same few hundred examples in seconds.
"""

from __future__ import annotations

import datetime
import hashlib
import string
from typing import Any
from unittest import mock

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials
from botocore.utils import percent_encode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest

from s3bulk.http.client import HttpClient
from s3bulk.stores.s3 import sigv4
from s3bulk.stores.s3.sigv4 import UNSIGNED_PAYLOAD, Credentials, Signer, canonical_query, uri_encode

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

SETTINGS = settings(max_examples=400, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

# characters S3 keys, tokens and header values make awkward, drawn often; any other code point
# (not a lone surrogate, which cannot be UTF-8) drawn as well
_AWKWARD = list(" %+~/!*'()&=?#;:@,$[]{}|\\^`\"<>.-_") + ["  ", "//", "\t", "é", "日本", "😀", "%2F", "%25"]
_CHAR = st.one_of(st.sampled_from(_AWKWARD), st.characters(blacklist_categories=("Cs",)))
KEYS = st.lists(_CHAR, max_size=30).map("".join)
# what a query value may hold: S3's own (tokens are base64 with = + /) and any text
TOKENS = st.one_of(st.text(alphabet=string.ascii_letters + string.digits + "+/=", min_size=1, max_size=60),
                   st.lists(_CHAR, min_size=1, max_size=20).map("".join))
# header values as a user's --metadata or --content-type may give them: inner runs of spaces and
# tabs, whitespace at either end, Unicode, nothing at all (never CR or LF: no HTTP header holds them)
_VALUE_CHAR = st.one_of(st.sampled_from([" ", "  ", "\t", " \t ", "a", "b", ";", "=", "é", "日", "\xa0"]),
                        st.characters(blacklist_categories=("Cs", "Cc")),
                        st.sampled_from(["\x0b", "\x0c", "\x1c", "\x1f"]))
HEADER_VALUES = st.lists(_VALUE_CHAR, max_size=16).map("".join)
HEADER_NAMES = st.sampled_from([
    "content-type", "cache-control", "content-disposition", "content-encoding", "content-language",
    "expires", "range", "if-match", "x-amz-copy-source", "x-amz-copy-source-if-match", "x-amz-tagging",
    "x-amz-storage-class", "x-amz-request-payer", "x-amz-checksum-crc32", "x-amz-sdk-checksum-algorithm",
    "x-amz-checksum-mode", "x-amz-metadata-directive", "x-amz-meta-note", "x-amz-meta-a", "x-amz-meta-z-z",
    "x-amz-object-attributes", "x-amz-server-side-encryption-customer-key-md5"])
# every query parameter s3bulk sends (empty values: ?uploads, ?delete, ?tagging, ?attributes ...)
LIST_PARAMS = st.fixed_dictionaries(
    {"list-type": st.just("2"), "max-keys": st.integers(1, 1000).map(str)},
    optional={"prefix": KEYS, "start-after": KEYS, "continuation-token": TOKENS, "encoding-type": st.just("url"),
              "delimiter": st.sampled_from(["/", "|", " "])})
OBJECT_PARAMS = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"partNumber": st.integers(1, 10000).map(str), "uploadId": TOKENS}),
    st.fixed_dictionaries({"uploadId": TOKENS}),
    st.fixed_dictionaries({"versionId": TOKENS}),
    st.sampled_from([{"uploads": ""}, {"delete": ""}, {"tagging": ""}, {"attributes": ""}, {"versions": ""},
                     {"uploads": "", "prefix": "a b/"}]),
    # any parameter at all: s3bulk's encoding and order for names it does not use yet
    st.dictionaries(st.one_of(st.sampled_from(["x-id", "A", "a", "_", "~", "%", "é", "a b"]), KEYS),
                    st.one_of(st.just(""), TOKENS), max_size=4),
)
HOSTS = st.sampled_from([
    ("http", "127.0.0.1", 4566), ("http", "localhost", 80), ("https", "s3.eu-west-3.amazonaws.com", 443),
    ("https", "my-bucket.s3.us-east-1.amazonaws.com", 443), ("http", "minio.internal", 9000),
    ("https", "10.0.0.7", 8443), ("http", "::1", 4566), ("https", "::1", 443)])
REGIONS = st.sampled_from(["us-east-1", "eu-west-3", "ap-southeast-2", "us-gov-west-1", "auto", "garage"])
SECRETS = st.text(alphabet=string.ascii_letters + string.digits + "/+=", min_size=1, max_size=40)
TIMES = st.datetimes(min_value=datetime.datetime(2020, 1, 1), max_value=datetime.datetime(2040, 12, 31))


@st.composite
def requests(draw: Any) -> dict[str, Any]:
    """One request as wire.py would send it: method, bucket, key or listing, parameters, headers."""
    method = draw(st.sampled_from(["GET", "HEAD", "PUT", "POST", "DELETE"]))
    listing = method == "GET" and draw(st.booleans())
    return {
        "method": method,
        "key": None if listing else draw(KEYS),
        "params": draw(LIST_PARAMS if listing else OBJECT_PARAMS),
        "headers": draw(st.dictionaries(HEADER_NAMES, HEADER_VALUES, max_size=5)),
        "host": draw(HOSTS),
        "region": draw(REGIONS),
        "creds": (draw(st.sampled_from(["AKIDEXAMPLE", "AK", "GOOG1EXAMPLE"])), draw(SECRETS),
                  draw(st.one_of(st.none(), TOKENS))),
        # None: UNSIGNED-PAYLOAD; bytes: a body whose SHA-256 is signed (b"": the empty body's)
        "body": draw(st.one_of(st.none(), st.binary(max_size=64))),
        "when": draw(TIMES),
    }


class _Recording(S3SigV4Auth):
    """botocore's S3 signer, keeping the canonical request and string to sign it computed."""

    canonical = to_sign = ""

    def canonical_request(self, request: AWSRequest) -> str:
        self.canonical = super().canonical_request(request)
        return self.canonical

    def string_to_sign(self, request: AWSRequest, canonical_request: str) -> str:
        self.to_sign = super().string_to_sign(request, canonical_request)
        return self.to_sign


def _botocore(req: dict[str, Any], url: str) -> tuple[str, str, dict[str, str]]:
    """(canonical request, string to sign, headers) as botocore signs `req` at `url`."""
    boto_req = AWSRequest(method=req["method"], url=url, headers=dict(req["headers"]),
                          params=dict(req["params"]), data=req["body"] or b"")
    auth = _Recording(BotoCredentials(*req["creds"]), "s3", req["region"])
    auth._should_sha256_sign_payload = lambda request: req["body"] is not None  # type: ignore[method-assign]
    with mock.patch("botocore.auth.get_current_datetime", return_value=req["when"]):
        auth.add_auth(boto_req)
    return auth.canonical, auth.to_sign, {k.lower(): v for k, v in boto_req.headers.items()}


@SETTINGS
@given(requests())
def test_signer_agrees_with_botocore(req: dict[str, Any]) -> None:
    scheme, hostname, port = req["host"]
    host = HttpClient(hostname, port, tls=object() if scheme == "https" else None).host_header  # type: ignore[arg-type]
    key = req["key"]
    # the path as botocore's serializer makes it ({Key+}: everything but unreserved characters and /)
    if key is not None:
        assert uri_encode(key, keep_slash=True) == percent_encode(key, safe="/~")
    path = "/bucket" if key is None else "/bucket/" + uri_encode(key, keep_slash=True)
    query = canonical_query(req["params"]) if req["params"] else ""
    url = f"{scheme}://{'[' + hostname + ']' if ':' in hostname else hostname}:{port}{path}"
    want_request, want_to_sign, want_headers = _botocore(req, url)

    payload = UNSIGNED_PAYLOAD if req["body"] is None else hashlib.sha256(req["body"]).hexdigest()
    with mock.patch("s3bulk.stores.s3.sigv4.time.time", return_value=req["when"].replace(
            tzinfo=datetime.timezone.utc).timestamp()):
        sent = _SIGNER.setdefault(req["region"], Signer(req["region"])).sign(
            Credentials(*req["creds"]), req["method"], host, path, query, dict(req["headers"]), payload)
    signed = {k: v for k, v in sent.items() if k != "authorization"}
    ours_request, _ = sigv4.canonical_request(req["method"], host, path, query, signed, payload)
    scope = f"{want_headers['x-amz-date'][:8]}/{req['region']}/s3/aws4_request"
    assert ours_request == want_request
    assert sigv4.string_to_sign(sent["x-amz-date"], scope, ours_request) == want_to_sign
    assert sent["authorization"] == want_headers["authorization"]
    # what is sent beside the signature is what botocore sends
    for name in ("x-amz-date", "x-amz-content-sha256", "x-amz-security-token"):
        assert sent.get(name) == want_headers.get(name)


# one signer per region across examples, as a worker keeps one: its cached dates and signing key
# must follow the clock and the credentials from one request to the next
_SIGNER: dict[str, Signer] = {}


@SETTINGS
@given(st.dictionaries(st.one_of(st.sampled_from(["list-type", "prefix", "uploads", "partNumber"]), KEYS),
                       st.one_of(st.just(""), TOKENS), max_size=6))
def test_query_is_botocores(params: dict[str, str]) -> None:
    """The query string sent (and signed) is the one botocore signs for the same parameters: encoded
    as SigV4 says, sorted by the encoded names."""
    auth = S3SigV4Auth(BotoCredentials("AK", "SK"), "s3", "us-east-1")
    assert canonical_query(params) == auth._canonical_query_string_params(params)


@SETTINGS
@given(HOSTS)
def test_host_header_is_botocores(where: tuple[str, str, int]) -> None:
    """The Host header the HTTP client sends is the one signed, and botocore's for the same URL
    (the default port left out, an IPv6 address in brackets)."""
    from botocore.auth import _host_from_url

    scheme, hostname, port = where
    client = HttpClient(hostname, port, tls=object() if scheme == "https" else None)  # type: ignore[arg-type]
    shown = f"[{hostname}]" if ":" in hostname else hostname
    assert client.host_header == _host_from_url(f"{scheme}://{shown}:{port}/bucket/k")
