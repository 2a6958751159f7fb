"""The lean path's SigV4 signatures must be byte-for-byte what botocore computes for the same request
(versitygw and AWS reject anything else; LocalStack does not check, so this is where it is checked)."""

from __future__ import annotations

import datetime
from unittest import mock

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials

from s3bulk.stores.s3.sigv4 import Credentials, Signer, canonical_query, uri_encode

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

NOW = datetime.datetime(2026, 11, 22, 7, 30, 15, tzinfo=datetime.timezone.utc)


def botocore_authorization(method, url, headers, creds, region, unsigned_payload):
    req = AWSRequest(method=method, url=url, headers=dict(headers))
    auth = S3SigV4Auth(BotoCredentials(*creds), "s3", region)
    if unsigned_payload:
        auth._should_sha256_sign_payload = lambda request: False
    with mock.patch("botocore.auth.get_current_datetime", return_value=NOW.replace(tzinfo=None)):
        auth.add_auth(req)
    return req.headers["Authorization"], req.headers["X-Amz-Date"], req.headers["X-Amz-Content-SHA256"]


@pytest.mark.parametrize("method,key,params,extra,token", [
    ("GET", "plain.txt", {}, {}, None),
    ("GET", "unicodé/日本語 with space+plus%25?#&=.txt", {}, {"range": "bytes=0-99"}, None),
    ("PUT", "dir/obj", {"partNumber": "3", "uploadId": "abc/def+=="}, {"x-amz-checksum-crc32": "AAAAAA=="}, None),
    ("GET", "", {"list-type": "2", "max-keys": "1000", "prefix": "a b/", "start-after": "a b/ü~x"}, {}, "TOKEN/+="),
    ("PUT", "copy-dst", {}, {"x-amz-copy-source": "src-bucket/k%20ey"}, None),
    ("HEAD", "k~tilde", {}, {}, "session"),
])
@pytest.mark.parametrize("unsigned_payload", [True, False])
def test_signature_matches_botocore(method, key, params, extra, token, unsigned_payload):
    creds = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    host = "127.0.0.1:7070"
    path = "/bucket/" + uri_encode(key, keep_slash=True) if key else "/bucket"
    query = canonical_query(params)
    url = f"https://{host}{path}" + (f"?{query}" if query else "")
    headers = dict(extra)
    if token:
        headers["x-amz-security-token"] = token
    expected, amz_date, payload = botocore_authorization(method, url, headers, creds, "eu-west-3", unsigned_payload)
    assert (payload == "UNSIGNED-PAYLOAD") == unsigned_payload

    signer = Signer("eu-west-3")
    with mock.patch("s3bulk.stores.s3.sigv4.time.time", return_value=NOW.timestamp()):
        ours = signer.sign(Credentials(*creds), method, host, path, query, dict(extra), payload)
    assert ours["x-amz-date"] == amz_date
    assert ours["authorization"] == expected


def test_credentials_never_show_their_secret():
    text = repr(Credentials("AKID", "s3cr3t-value", "tok3n-value"))
    assert "s3cr3t" not in text and "tok3n" not in text


def test_one_signer_follows_each_change_of_what_it_caches():
    """A Signer keeps the signing key, its HMAC states, the scope and the Authorization's credential
    part from request to request: a new secret, access key, region or day must each sign as
    botocore does, and going back must too (no entry of the cache answers for another)."""
    signer = Signer("eu-west-3")
    host, path = "127.0.0.1:7070", "/bucket/k"
    headers = {"x-amz-meta-mtime": "1700000000.5", "content-type": "text/plain"}
    day = datetime.timedelta(days=1)
    steps = [("AK1", "secret-1", "eu-west-3", NOW), ("AK1", "secret-2", "eu-west-3", NOW),
             ("AK2", "secret-2", "eu-west-3", NOW), ("AK2", "secret-2", "us-east-1", NOW),
             ("AK2", "secret-2", "us-east-1", NOW + day), ("AK1", "secret-1", "eu-west-3", NOW),
             ("AK1", "secret-1", "eu-west-3", NOW + day + datetime.timedelta(seconds=1))]
    for access, secret, region, when in steps:
        signer.region = region
        req = AWSRequest(method="PUT", url=f"https://{host}{path}", headers=dict(headers))
        auth = S3SigV4Auth(BotoCredentials(access, secret), "s3", region)
        auth._should_sha256_sign_payload = lambda request: False
        with mock.patch("botocore.auth.get_current_datetime", return_value=when.replace(tzinfo=None)):
            auth.add_auth(req)
        with mock.patch("s3bulk.stores.s3.sigv4.time.time", return_value=when.timestamp()):
            ours = signer.sign(Credentials(access, secret), "PUT", host, path, "", dict(headers))
        assert ours["authorization"] == req.headers["Authorization"], (access, region, when)
