"""Start-up of an S3 copy: the lean path moves one object without loading aiobotocore/aiohttp or
building a botocore S3 client once the bucket's address is known, and without botocore at all when
keys are in the environment and no AWS config file has a say; the cached address never outlives the
settings it was resolved from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

HEAVY = ("aiobotocore", "aiohttp", "botocore.client")


def _run(args: list[str], env: dict[str, str], state: Path) -> subprocess.CompletedProcess:
    """s3bulk with -X importtime: stderr then names every module the run imported."""
    full = dict(os.environ, XDG_STATE_HOME=str(state), **env)
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "s3bulk", *args], capture_output=True,
                          text=True, env=full, cwd=ROOT, timeout=300)


def _imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def _errors(stderr: str) -> str:
    return "\n".join(line for line in stderr.splitlines() if not line.startswith("import time:"))


@pytest.fixture
def cache_home(tmp_path) -> Path:
    return tmp_path / "cache"


def _botocore_config(tmp_path: Path) -> dict[str, str]:
    """An AWS config file whose `s3` section only botocore reads: the side's settings and the
    bucket's address then come from botocore (and are kept in the cache)."""
    config = tmp_path / "aws-config"
    config.write_text("[default]\ns3 =\n    us_east_1_regional_endpoint = regional\n")
    return {"AWS_CONFIG_FILE": str(config)}


def test_one_object_with_keys_in_the_environment_needs_no_botocore(s3, bucket, endpoint, tmp_path, cache_home):
    """No config file, keys in the environment (a Lambda function, a container, CI): botocore is
    never imported, not even on the first run; profiles and config files still go to botocore."""
    s3.put_object(Bucket=bucket, Key="one/hello.txt", Body=b"h" * 100)
    env = {"XDG_CACHE_HOME": str(cache_home)}
    down = ["copy", f"s3://{bucket}/one/hello.txt", str(tmp_path / "d") + "/", "--endpoint-url", endpoint, "-q"]
    first = _run(down, env, tmp_path)
    assert first.returncode == 0, _errors(first.stderr)
    assert (tmp_path / "d" / "hello.txt").read_bytes() == b"h" * 100
    assert not [m for m in _imported(first.stderr) if m.startswith("botocore")]
    # nor what only other runs use: email (HTTP dates: http/dates.py), pickle (spread helpers)
    assert not [m for m in _imported(first.stderr) if m.split(".")[0] in ("email", "pickle")]

    (tmp_path / "up.txt").write_bytes(b"u" * 100)
    up = _run(["copy", str(tmp_path / "up.txt"), f"s3://{bucket}/up/", "--endpoint-url", endpoint, "-q"], env, tmp_path)
    assert up.returncode == 0, _errors(up.stderr)
    assert not [m for m in _imported(up.stderr) if m.split(".")[0] in ("botocore", "email", "pickle")]
    assert s3.get_object(Bucket=bucket, Key="up/up.txt")["Body"].read() == b"u" * 100

    # HeadBucket on the lean path still tells a missing bucket apart
    missing = _run(["copy", str(tmp_path / "up.txt"), "s3://no-such-bucket-s3bulk-startup/x", "--endpoint-url",
                    endpoint], env, tmp_path)
    assert missing.returncode == 3 and "bucket does not exist" in _errors(missing.stderr)


def test_one_object_needs_no_botocore_client_once_the_address_is_known(s3, bucket, endpoint, tmp_path, cache_home):
    s3.put_object(Bucket=bucket, Key="one/hello.txt", Body=b"h" * 100)
    env = {"XDG_CACHE_HOME": str(cache_home), **_botocore_config(tmp_path)}
    down = ["copy", f"s3://{bucket}/one/hello.txt", str(tmp_path / "d") + "/", "--endpoint-url", endpoint, "-q"]
    first = _run(down, env, tmp_path)  # resolves the address through botocore and keeps it
    assert first.returncode == 0, _errors(first.stderr)
    assert (tmp_path / "d" / "hello.txt").read_bytes() == b"h" * 100
    assert (cache_home / "s3bulk" / "endpoints.json").exists()
    # resolving it took a plain botocore client, not aiobotocore over aiohttp
    assert "botocore.client" in _imported(first.stderr)
    assert not [m for m in _imported(first.stderr) if m.startswith(("aiobotocore", "aiohttp"))]

    again = _run(down, env, tmp_path)
    assert again.returncode == 0, _errors(again.stderr)
    assert not [m for m in _imported(again.stderr) if m.startswith(HEAVY)]

    (tmp_path / "up.txt").write_bytes(b"u" * 100)
    up = _run(["copy", str(tmp_path / "up.txt"), f"s3://{bucket}/up/", "--endpoint-url", endpoint, "-q"], env, tmp_path)
    assert up.returncode == 0, _errors(up.stderr)
    assert not [m for m in _imported(up.stderr) if m.startswith(HEAVY)]
    assert s3.get_object(Bucket=bucket, Key="up/up.txt")["Body"].read() == b"u" * 100


def test_the_cache_holds_no_secret(s3, bucket, endpoint, tmp_path, cache_home):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    secret = "s3bulk-secret-that-must-not-be-written"
    key_id = "AKIAS3BULKSTARTUPTEST"
    env = {"XDG_CACHE_HOME": str(cache_home), "AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": secret,
           "AWS_SESSION_TOKEN": "token-that-must-not-be-written", **_botocore_config(tmp_path)}
    run = _run(["copy", f"s3://{bucket}/k", str(tmp_path / "k"), "--endpoint-url", endpoint], env, tmp_path)
    assert run.returncode == 0, _errors(run.stderr)
    text = (cache_home / "s3bulk" / "endpoints.json").read_text()
    assert secret not in text and key_id not in text and "token-that" not in text
    assert oct((cache_home / "s3bulk" / "endpoints.json").stat().st_mode & 0o777) == "0o600"


def test_a_changed_endpoint_in_the_environment_is_not_served_from_the_cache(s3, bucket, endpoint, tmp_path,
                                                                            cache_home):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    env = {"XDG_CACHE_HOME": str(cache_home), "AWS_ENDPOINT_URL": endpoint}
    ok = _run(["copy", f"s3://{bucket}/k", str(tmp_path / "a")], env, tmp_path)
    assert ok.returncode == 0, _errors(ok.stderr)
    # the same command, the endpoint now elsewhere (nothing listens there): it must go there and fail
    dead = _run(["copy", f"s3://{bucket}/k", str(tmp_path / "b"), "--retries", "0"],
                dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:9"), tmp_path)
    assert dead.returncode == 3, _errors(dead.stderr)
    assert "connect" in _errors(dead.stderr) and not (tmp_path / "b").exists()


def test_an_edited_config_file_is_not_served_from_the_cache(s3, bucket, endpoint, tmp_path, cache_home):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    config = tmp_path / "aws-config"
    config.write_text(f"[default]\nendpoint_url = {endpoint}\n")
    env = {"XDG_CACHE_HOME": str(cache_home), "AWS_CONFIG_FILE": str(config)}
    ok = _run(["copy", f"s3://{bucket}/k", str(tmp_path / "a")], env, tmp_path)
    assert ok.returncode == 0, _errors(ok.stderr)
    # same length, same mtime put back: only the inode's ctime tells it changed
    st = config.stat()
    dead = "http://127.0.0.1:9"
    config.write_text(f"[default]\nendpoint_url = {dead}" + " " * (len(endpoint) - len(dead)) + "\n")
    assert config.stat().st_size == st.st_size
    os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns))
    failed = _run(["copy", f"s3://{bucket}/k", str(tmp_path / "b"), "--retries", "0"], env, tmp_path)
    assert failed.returncode == 3, _errors(failed.stderr)
    assert not (tmp_path / "b").exists()


def test_a_plain_profile_s_keys_need_no_botocore_session(s3, bucket, endpoint, tmp_path, cache_home):
    """Static keys of a profile in the credentials file are read with botocore's file parser alone:
    once the profile's settings are known (the first run asks botocore), no session, no chain."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"p")
    creds = tmp_path / "credentials"
    creds.write_text("[other]\naws_access_key_id = test\naws_secret_access_key = test\n")
    env = {"XDG_CACHE_HOME": str(cache_home), "AWS_SHARED_CREDENTIALS_FILE": str(creds),
           "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    args = ["copy", f"s3://{bucket}/k", str(tmp_path / "d") + "/", "--endpoint-url", endpoint, "--profile", "other"]
    assert _run(args, env, tmp_path).returncode == 0
    again = _run(args, env, tmp_path)
    assert again.returncode == 0, _errors(again.stderr)
    assert (tmp_path / "d" / "k").read_bytes() == b"p"
    assert not [m for m in _imported(again.stderr)
                if m.startswith(("aiobotocore", "aiohttp", "botocore.session", "botocore.credentials"))]


def test_a_profile_with_a_credential_process_goes_through_botocore_s_chain(s3, bucket, endpoint, tmp_path,
                                                                           cache_home):
    """Anything but static keys (here credential_process; SSO, assume-role, web identity alike) is
    botocore's chain, as before."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"c")
    script = tmp_path / "creds.sh"
    script.write_text('#!/bin/sh\necho \'{"Version": 1, "AccessKeyId": "test", "SecretAccessKey": "test"}\'\n')
    script.chmod(0o755)
    config = tmp_path / "config"
    config.write_text(f"[profile proc]\ncredential_process = {script}\n")
    env = {"XDG_CACHE_HOME": str(cache_home), "AWS_CONFIG_FILE": str(config),
           "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    args = ["copy", f"s3://{bucket}/k", str(tmp_path / "d") + "/", "--endpoint-url", endpoint, "--profile", "proc"]
    assert _run(args, env, tmp_path).returncode == 0
    again = _run(args, env, tmp_path)
    assert again.returncode == 0, _errors(again.stderr)
    assert (tmp_path / "d" / "k").read_bytes() == b"c"
    assert "botocore.credentials" in _imported(again.stderr)
    assert not [m for m in _imported(again.stderr) if m.startswith(("aiobotocore", "aiohttp"))]


def test_the_cache_file_is_plain_json_of_addresses(s3, bucket, endpoint, tmp_path, cache_home):
    """A corrupt cache file is ignored and replaced, never fatal."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    (cache_home / "s3bulk").mkdir(parents=True)
    (cache_home / "s3bulk" / "endpoints.json").write_text("{not json")
    run = _run(["copy", f"s3://{bucket}/k", str(tmp_path / "a"), "--endpoint-url", endpoint],
               {"XDG_CACHE_HOME": str(cache_home), **_botocore_config(tmp_path)}, tmp_path)
    assert run.returncode == 0, _errors(run.stderr)
    entries = json.loads((cache_home / "s3bulk" / "endpoints.json").read_text())["entries"].values()
    assert [e["endpoint_url"] for e in entries if "object_url" in e] == [endpoint]  # the bucket's address
    assert [e["settings"]["endpoint_url"] for e in entries if "settings" in e] == [endpoint]  # the side's settings


@pytest.mark.unit
@pytest.mark.parametrize("env", [
    {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK"},
    {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "T1"},
    {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "T1", "AWS_SECURITY_TOKEN": "T2"},
    {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": ""},
    {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_PROFILE": "elsewhere"},
])
def test_keys_in_the_environment_are_what_botocore_would_sign_with(env):
    """The shortcut past botocore's chain takes exactly the keys its EnvProvider (first in the chain
    without --profile) returns."""
    from botocore.credentials import EnvProvider

    from s3bulk.stores.s3.setup import env_credentials
    from s3bulk.config.urls import S3Options

    mine = env_credentials(S3Options(), env)
    theirs = EnvProvider(environ=env).load()
    assert mine is not None and (mine.access_key, mine.secret_key, mine.token) == (
        theirs.access_key, theirs.secret_key, theirs.token)


@pytest.mark.unit
@pytest.mark.parametrize("env, opts", [
    ({"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK"}, {"profile": "p"}),  # --profile: env not used
    ({"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK",
      "AWS_CREDENTIAL_EXPIRATION": "2030-01-01T00:00:00Z"}, {}),                      # refreshable: botocore's
    ({"AWS_ACCESS_KEY_ID": "AK"}, {}),                                                # partial: botocore says why
    ({}, {}),
])
def test_other_credentials_are_left_to_botocore(env, opts):
    from s3bulk.stores.s3.setup import env_credentials
    from s3bulk.config.urls import S3Options

    assert env_credentials(S3Options(**opts), env) is None


def test_no_credentials_anywhere_is_refused_up_front(bucket, endpoint, tmp_path, cache_home):
    env = {"XDG_CACHE_HOME": str(cache_home), "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    run = _run(["copy", f"s3://{bucket}/", str(tmp_path / "d"), "--endpoint-url", endpoint], env, tmp_path)
    assert run.returncode == 3, _errors(run.stderr)
    assert "no AWS credentials found" in _errors(run.stderr)
    assert len(_errors(run.stderr).strip().splitlines()) == 1


@pytest.mark.unit
def test_a_command_typer_parses_imports_no_pydantic(tmp_path):
    """Why pyproject keeps typer below 0.29: from 0.29 typer checks every option through pydantic,
    and an `ls` of a local directory took 359 -> 610 ms of CPU. A typer that imports pydantic to
    parse a command fails here: move to it only with a way around that cost."""
    (tmp_path / "f").write_bytes(b"x")
    run = _run(["ls", str(tmp_path)], {}, tmp_path / "state")
    assert run.returncode == 0, _errors(run.stderr)
    assert not {m for m in _imported(run.stderr) if m.split(".")[0] == "pydantic"}, "pydantic was imported"
