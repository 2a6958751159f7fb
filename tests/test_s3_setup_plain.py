"""A side's settings and a bucket's address without botocore (stores/s3/setup.py
settings_from_environment, plain_address) are exactly what botocore's own chain and endpoint
rules give, in every case they answer; every other case is left to botocore. These compare with
the installed botocore's answers (no server needed)."""

from __future__ import annotations

import pytest

from s3bulk.config.urls import S3Options, S3Settings, parse_location
from s3bulk.stores.s3 import setup as s3setup
from s3bulk.stores.s3.store import S3Store

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

NO_FILES = {"AWS_CONFIG_FILE": "/nonexistent/s3bulk-plain/config",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/s3bulk-plain/credentials"}


@pytest.fixture
def environ(monkeypatch, tmp_path):
    """A clean AWS environment with no files: set(name=value) adds variables."""
    import os

    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name, value in NO_FILES.items():
        monkeypatch.setenv(name, value)

    def set_(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)
    return set_


@pytest.mark.parametrize("env, opts", [
    ({}, {}),
    ({"AWS_DEFAULT_REGION": "eu-west-1"}, {}),
    ({"AWS_DEFAULT_REGION": "eu-west-1", "AWS_REGION": "ap-east-1"}, {}),
    ({"AWS_DEFAULT_REGION": ""}, {}),
    ({"AWS_DEFAULT_REGION": "eu-west-1"}, {"region": "us-west-2"}),
    ({"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}, {}),
    ({"AWS_ENDPOINT_URL": "http://a:1", "AWS_ENDPOINT_URL_S3": "http://b:2"}, {}),
    ({"AWS_ENDPOINT_URL_S3": "http://b:2"}, {"endpoint_url": "https://given.example"}),
    ({"AWS_ENDPOINT_URL_S3": "", "AWS_ENDPOINT_URL": "http://a:1"}, {}),
    ({"AWS_ENDPOINT_URL_S3": "http://b:2", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, {}),
    ({"AWS_ENDPOINT_URL_S3": "http://b:2", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "TRUE"}, {}),
    ({"AWS_ENDPOINT_URL_S3": "http://b:2", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "yes"}, {}),
    ({"AWS_USE_FIPS_ENDPOINT": "true", "AWS_USE_DUALSTACK_ENDPOINT": "True"}, {}),
    ({"AWS_USE_FIPS_ENDPOINT": "false", "AWS_USE_DUALSTACK_ENDPOINT": "1"}, {}),
    ({"AWS_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt"}, {}),
    ({"AWS_CA_BUNDLE": "relative/bundle.pem"}, {}),
    ({"AWS_CA_BUNDLE": ""}, {}),
    ({"AWS_S3_USE_ARN_REGION": "true", "AWS_S3_US_EAST_1_REGIONAL_ENDPOINT": "regional",
      "AWS_S3_DISABLE_MULTIREGION_ACCESS_POINTS": "false"}, {}),
    ({}, {"path_style": True}),
    ({"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK"}, {"no_sign_request": True}),
])
def test_settings_from_the_environment_are_botocores(environ, env, opts):
    environ(**env)
    options = S3Options(**opts)
    mine = s3setup.settings_from_environment(options)
    assert mine is not None
    assert mine == s3setup._from_botocore(options)


def test_a_bad_endpoint_in_the_environment_is_refused_as_botocore_s_is(environ):
    from s3bulk.errors import UsageError

    environ(AWS_ENDPOINT_URL="localhost:4566")
    with pytest.raises(UsageError) as mine:
        s3setup.settings_from_environment(S3Options())
    with pytest.raises(UsageError) as theirs:
        s3setup._from_botocore(S3Options())
    assert str(mine.value) == str(theirs.value)


@pytest.mark.parametrize("env, opts", [
    ({}, {"profile": "p"}),                      # a profile named: botocore says whether it exists
    ({"AWS_PROFILE": "p"}, {}),
    ({"AWS_DEFAULT_PROFILE": "p"}, {}),
    ({"AWS_CONFIG_FILE": "$HOME/config"}, {}),   # botocore expands variables in the path
    ({"AWS_CONFIG_FILE": ""}, {}),
])
def test_anything_else_is_left_to_botocore(environ, env, opts):
    environ(**env)
    assert s3setup.settings_from_environment(S3Options(**opts)) is None


@pytest.mark.parametrize("which", ["AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"])
def test_a_config_or_credentials_file_is_left_to_botocore(environ, tmp_path, which):
    path = tmp_path / "file"
    path.write_text("[default]\nregion = eu-west-1\n")  # either file can set the region
    environ(**{which: str(path)})
    assert s3setup.settings_from_environment(S3Options()) is None


def _botocore_addresses(settings: S3Settings):
    """bucket -> (address, endpoint, region, signing region) as store.py _resolve has botocore make
    them: one client for the settings, one presigned URL per bucket."""
    from urllib.parse import parse_qs, urlsplit

    import botocore.session
    from botocore.config import Config

    from s3bulk.stores.s3.store import _shared_loader

    session = botocore.session.Session()
    session.register_component("data_loader", _shared_loader(session.get_config_variable("data_path")))
    s3setup.pin(session, settings)
    client = session.create_client("s3", **s3setup.client_args(settings),
                                   config=Config(**s3setup.config_args(settings)),
                                   aws_access_key_id="presign-only", aws_secret_access_key="presign-only")

    def address(bucket: str) -> tuple[str, str, str | None, str | None]:
        parts = urlsplit(client.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "k"}))
        scope = parse_qs(parts.query).get("X-Amz-Credential", [""])[0].split("/")
        return (f"{parts.scheme}://{parts.netloc}{parts.path}", client.meta.endpoint_url, client.meta.region_name,
                scope[2] if len(scope) >= 4 else client.meta.region_name)
    return address


def test_the_comparison_makes_addresses_as_the_store_does(environ):
    """The helper above is store.py's _resolve, one client for many buckets."""
    settings = S3Settings(endpoint_url=None, region="eu-central-1")
    r = S3Store(parse_location("s3://my-bucket/", S3Options(settled=settings)))._resolve()
    assert _botocore_addresses(settings)("my-bucket") == (r.object_url, r.endpoint_url, r.region,
                                                          r.signing_region or r.region)


ENDPOINTS = ["http://127.0.0.1:4566", "http://localhost:4566", "https://minio.example.com",
             "https://minio.example.com/base/", "https://minio.example.com/base", "http://[::1]:9000",
             "https://s3.eu-west-1.amazonaws.com"]
BUCKETS = ["abc", "my-bucket-1", "a.b.c", "ABC", "a_b", "a--b", "xn--abc", "ab", "a" * 63, "a" * 64, "1abc9",
           "192.168.1.1"]
REGIONS = ["us-east-1", "eu-west-1", "eu-central-1", "il-central-1", "cn-north-1", "us-gov-west-1",
           "us-iso-east-1"]


# endpoints given as URLs, in turn in each region and addressing style; AWS in each kind of region
STYLES = [("us-east-1", ()), ("eu-central-1", (("addressing_style", "path"),)),
          ("eu-west-1", (("addressing_style", "auto"),))]
CASES = [S3Settings(endpoint_url=e, region=STYLES[i % 3][0], s3=STYLES[i % 3][1]) for i, e in enumerate(ENDPOINTS)] \
    + [S3Settings(endpoint_url=None, region=r) for r in REGIONS]


def test_a_plain_address_is_botocores(environ):
    """Where plain_address answers, it answers as botocore does (the address, the endpoint, the region
    and the region requests are signed for); across buckets, regions and endpoints."""
    answered = 0
    for settings in CASES:
        theirs = None
        for bucket in BUCKETS:
            mine = s3setup.plain_address(bucket, settings)
            if mine is None:
                continue
            answered += 1
            theirs = theirs or _botocore_addresses(settings)
            assert (mine.object_url, mine.endpoint_url, mine.region, mine.signing_region or mine.region) \
                == theirs(bucket), (settings, bucket)
    assert answered > len(CASES) * 3  # the common cases are answered without botocore


@pytest.mark.parametrize("settings", [
    S3Settings(endpoint_url=None, region="us-east-1", use_fips_endpoint=True),
    S3Settings(endpoint_url=None, region="us-east-1", use_dualstack_endpoint=True),
    S3Settings(endpoint_url=None, region="us-east-1", s3=(("use_accelerate_endpoint", True),)),
    S3Settings(endpoint_url=None, region="us-east-1", s3=(("us_east_1_regional_endpoint", "regional"),)),
    S3Settings(endpoint_url="http://127.0.0.1:4566", region="us-east-1", s3=(("addressing_style", "virtual"),)),
    S3Settings(endpoint_url=None, region="cn-north-1"),
    S3Settings(endpoint_url=None, region="us-gov-west-1"),
    S3Settings(endpoint_url="http://127.0.0.1:4566", region="bad region!"),   # botocore refuses it
    S3Settings(endpoint_url="http://127.0.0.1:4566", region="12345"),
    S3Settings(endpoint_url="http://127.0.0.1:port", region="us-east-1"),
    S3Settings(endpoint_url=None, region="bad region!"),
])
def test_other_addresses_are_left_to_botocore(settings):
    assert s3setup.plain_address("abc", settings) is None
    assert s3setup.plain_address("a.b.c", settings) is None


@pytest.mark.parametrize("proxies", [{}, {"HTTPS_PROXY": "http://user:pw@proxy:3128", "no_proxy": "localhost"},
                                     {"http_proxy": ""}])
def test_the_proxies_are_urllibs(monkeypatch, proxies):
    """No *_proxy variable: none, without importing urllib.request; else urllib's reading."""
    import os
    from urllib.request import getproxies

    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    for name, value in proxies.items():
        monkeypatch.setenv(name, value)
    found = getproxies()
    assert s3setup._env_proxies() == (
        tuple((s, s3setup._without_credentials(s3setup._with_scheme(found[s]))) for s in ("http", "https")
              if found.get(s)), found.get("no") or None)


# --------------------------------------------------------------- a plain profile's static keys

CREDS_FILE = """[default]
aws_access_key_id = AKDEFAULT
aws_secret_access_key = SKDEFAULT
[static]
aws_access_key_id = AKSTATIC
aws_secret_access_key = SKSTATIC
aws_session_token = TSTATIC
[both-tokens]
aws_access_key_id = AKBOTH
aws_secret_access_key = SKBOTH
aws_session_token = TSESSION
aws_security_token = TSECURITY
[role]
role_arn = arn:aws:iam::123456789012:role/r
source_profile = default
[process]
credential_process = /bin/false
[partial]
aws_access_key_id = AKPARTIAL
"""
CONFIG_FILE = """[default]
region = eu-west-1
[profile in-config]
aws_access_key_id = AKCONFIG
aws_secret_access_key = SKCONFIG
region = eu-west-1
s3 =
    addressing_style = path
[profile static]
region = us-west-2
[profile sso]
sso_session = s
sso_account_id = 123456789012
sso_role_name = r
[sso-session s]
sso_start_url = https://example.awsapps.com/start
sso_region = us-east-1
[profile with-role]
aws_access_key_id = AKX
aws_secret_access_key = SKX
role_arn = arn:aws:iam::123456789012:role/r
"""


@pytest.fixture
def profiles(environ, tmp_path):
    (tmp_path / "credentials").write_text(CREDS_FILE)
    (tmp_path / "config").write_text(CONFIG_FILE)
    environ(AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "credentials"), AWS_CONFIG_FILE=str(tmp_path / "config"))
    return environ


@pytest.mark.parametrize("given, env", [
    (None, {}), ("static", {}), ("both-tokens", {}), ("in-config", {}), (None, {"AWS_PROFILE": "static"}),
    (None, {"AWS_DEFAULT_PROFILE": "in-config"}), ("static", {"AWS_PROFILE": "in-config"}),
    (None, {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}),
])
def test_a_plain_profile_s_keys_are_botocore_s(profiles, given, env):
    import botocore.session

    profiles(**env)
    mine = s3setup.profile_credentials(S3Options(profile=given))
    theirs = botocore.session.Session(profile=given).get_credentials().get_frozen_credentials()
    assert mine is not None and (mine.access_key, mine.secret_key, mine.token) == (
        theirs.access_key, theirs.secret_key, theirs.token)


@pytest.mark.parametrize("given, env", [
    ("role", {}), ("process", {}), ("sso", {}), ("with-role", {}), ("partial", {}), ("missing", {}),
    (None, {"AWS_PROFILE": "role"}),
    (None, {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK"}),       # the environment's keys first
    ("static", {"AWS_ACCESS_KEY_ID": "AK"}),
    (None, {"AWS_WEB_IDENTITY_TOKEN_FILE": "/tmp/token", "AWS_ROLE_ARN": "arn:aws:iam::1:role/r"}),
    (None, {"AWS_PROFILE": "static", "AWS_DEFAULT_PROFILE": "in-config"}),
])
def test_other_profiles_go_to_botocore_s_chain(profiles, given, env):
    profiles(**env)
    assert s3setup.profile_credentials(S3Options(profile=given)) is None


def test_no_files_no_keys_goes_to_botocore_s_chain(environ):
    """Containers and instances: botocore's chain asks their metadata endpoints."""
    assert s3setup.profile_credentials(S3Options()) is None
