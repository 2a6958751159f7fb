"""`s3bulk copy` for every pair of stores, against a real LocalStack S3."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import bucket_tree, put_tree, read_tree, write_tree

MiB = 1024 * 1024


@pytest.fixture(params=["lean", "botocore"])
def data_path(request, monkeypatch):
    """Run a test over both S3 data paths: the lean one (default) and plain aiobotocore."""
    monkeypatch.setenv("S3BULK_DATA_PATH", request.param)
    return request.param

# Keys users really have: spaces, unicode, the characters URLs treat specially, zero bytes, depth,
# and names whose order differs between a naive directory walk and S3 ('-' and '.' sort before '/').
ODD = {
    "plain.txt": b"hello",
    "with space/and more spaces.txt": b"spaces",
    "unicodé/日本語/файл.txt": "unicode body ✓".encode(),
    "plus+sign.txt": b"plus",
    "percent%20not-a-space.txt": b"percent",
    "question?mark.txt": b"question",
    "hash#tag.txt": b"hash",
    "amp&eq=semi;.txt": b"amp",
    "zero-byte": b"",
    "deep/a/b/c/d/e/f.bin": bytes(range(256)) * 4,
    "a-b": b"dash",
    "a.b": b"dot",
    "a/b": b"slash",
    "a0": b"zero",
}


def test_local_to_s3_to_local_round_trip_with_odd_keys(data_path, cli, s3, bucket, tmp_path, no_leftovers):
    src = tmp_path / "src"
    write_tree(src, ODD)
    up = cli("copy", str(src), f"s3://{bucket}/mirror/", "--json")
    assert up.code == 0, up
    assert up.summary["copied"] == len(ODD) and up.summary["failed"] == 0
    assert bucket_tree(s3, bucket, "mirror/") == ODD

    dst = tmp_path / "dst"
    down = cli("copy", f"s3://{bucket}/mirror/", str(dst), "--json")
    assert down.code == 0, down
    assert down.summary["copied"] == len(ODD)
    assert read_tree(dst) == ODD
    no_leftovers(dst)


def test_s3_to_s3_same_endpoint_is_server_side(data_path, cli, s3, make_bucket):
    a, b = make_bucket(), make_bucket()
    put_tree(s3, a, {f"p/{k}": v for k, v in ODD.items()})
    s3.put_object(Bucket=a, Key="p/typed.json", Body=b"{}", ContentType="application/json")
    run = cli("copy", f"s3://{a}/p/", f"s3://{b}/q/", "--json")
    assert run.code == 0, run
    assert run.summary["server_side_copies"] == len(ODD) + 1
    assert bucket_tree(s3, b, "q/") == {**ODD, "typed.json": b"{}"}
    assert s3.head_object(Bucket=b, Key="q/typed.json")["ContentType"] == "application/json"


def test_s3_to_s3_different_endpoints_streams_through_the_worker(data_path, cli, s3, make_bucket, endpoint):
    a, b = make_bucket(), make_bucket()
    put_tree(s3, a, ODD)
    other = endpoint.replace("127.0.0.1", "localhost")  # same server, but we cannot know that
    run = cli("copy", f"s3://{a}", f"s3://{b}/", "--json",
              "--src-endpoint-url", endpoint, "--dst-endpoint-url", other)
    assert run.code == 0, run
    assert run.summary["server_side_copies"] == 0
    assert run.summary["copied"] == len(ODD)
    assert bucket_tree(s3, b) == ODD


def test_local_to_local(cli, tmp_path, no_leftovers):
    src, dst = tmp_path / "src", tmp_path / "out" / "dst"
    write_tree(src, ODD)
    run = cli("copy", str(src), str(dst), "--json")
    assert run.code == 0, run
    assert read_tree(dst) == ODD
    no_leftovers(dst)


def test_multipart_upload_download_and_copy(data_path, cli, s3, make_bucket, tmp_path, no_leftovers):
    a, b = make_bucket(), make_bucket()
    body = os.urandom(23 * MiB + 12345)
    src = tmp_path / "src"
    write_tree(src, {"big.bin": body, "small": b"s"})
    opts = ["--part-size", "5MiB", "--multipart-threshold", "6MiB", "--json"]
    up = cli("copy", str(src), f"s3://{a}/", *opts)
    assert up.code == 0, up
    head = s3.head_object(Bucket=a, Key="big.bin", PartNumber=1)
    assert head["PartsCount"] == 5, "uploaded in 5 MiB parts"

    dst = tmp_path / "dst"
    down = cli("copy", f"s3://{a}/", str(dst), *opts)
    assert down.code == 0, down
    assert (dst / "big.bin").read_bytes() == body
    no_leftovers(dst)

    # server-side copy above the (lowered) CopyObject limit goes by UploadPartCopy
    cp = cli("copy", f"s3://{a}/big.bin", f"s3://{b}/copied.bin", "--json",
             "--copy-threshold", "6MiB", "--copy-part-size", "5MiB")
    assert cp.code == 0, cp
    assert cp.summary["server_side_copies"] == 1
    assert s3.head_object(Bucket=b, Key="copied.bin", PartNumber=1)["PartsCount"] == 5
    assert s3.get_object(Bucket=b, Key="copied.bin")["Body"].read() == body

    # and streamed s3->s3 in parts
    other = cli("copy", f"s3://{a}/big.bin", f"s3://{b}/streamed.bin", *opts,
                "--src-endpoint-url", s3.meta.endpoint_url,
                "--dst-endpoint-url", s3.meta.endpoint_url.replace("127.0.0.1", "localhost"))
    assert other.code == 0, other
    assert other.summary["server_side_copies"] == 0
    assert s3.get_object(Bucket=b, Key="streamed.bin")["Body"].read() == body


@pytest.mark.parametrize("dst_form", ["dir/", "existing-dir", "new-name.txt"])
def test_single_object_from_s3(cli, s3, bucket, tmp_path, dst_form):
    put_tree(s3, bucket, {"x/report.txt": b"the report", "x/report.txt.bak": b"not me"})
    (tmp_path / "existing-dir").mkdir()
    run = cli("copy", f"s3://{bucket}/x/report.txt", str(tmp_path / dst_form) + ("/" if dst_form.endswith("/") else ""),
              "--json")
    assert run.code == 0, run
    assert run.summary["copied"] == 1
    target = tmp_path / dst_form / "report.txt" if dst_form != "new-name.txt" else tmp_path / "new-name.txt"
    assert target.read_bytes() == b"the report"


def test_single_file_to_s3_prefix_and_name(cli, s3, bucket, tmp_path):
    f = tmp_path / "one file.txt"
    f.write_bytes(b"one")
    assert cli("copy", str(f), f"s3://{bucket}/in/", "--json").code == 0
    assert cli("copy", str(f), f"s3://{bucket}/renamed", "--json").code == 0
    assert bucket_tree(s3, bucket) == {"in/one file.txt": b"one", "renamed": b"one"}


def test_prefix_without_trailing_slash_means_directory(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {"logs/a": b"1", "logs/b/c": b"2", "logs-old/x": b"no", "logsx": b"no"})
    run = cli("copy", f"s3://{bucket}/logs", str(tmp_path / "d"), "--json")
    assert run.code == 0, run
    assert read_tree(tmp_path / "d") == {"a": b"1", "b/c": b"2"}


def test_whole_bucket_many_pages(data_path, cli, s3, bucket, tmp_path):
    # 25 listing pages either way (what the test is about), at 40 keys a page: 1,000 objects, not 2,500
    objects = {f"k{i:05d}": str(i).encode() for i in range(1000)}
    src = tmp_path / "src"
    write_tree(src, objects)
    assert cli("copy", str(src), f"s3://{bucket}", "-q").code == 0
    run = cli("copy", f"s3://{bucket}", str(tmp_path / "dst"), "--json", "--page-size", "40", "--workers", "2")
    assert run.code == 0, run
    assert run.summary["listed"] == 1000 and run.summary["copied"] == 1000
    assert read_tree(tmp_path / "dst") == objects


def test_empty_source_copies_nothing_and_succeeds(cli, bucket, tmp_path):
    run = cli("copy", f"s3://{bucket}/", str(tmp_path / "d"), "--json")  # an empty bucket is no mistake
    assert run.code == 0, run
    assert run.summary["copied"] == 0 and run.summary["listed"] == 0


def test_single_worker_in_process(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {f"k/{i}": b"x" * i for i in range(50)})
    run = cli("copy", f"s3://{bucket}/k/", str(tmp_path / "d"), "--json", "--workers", "1", "-c", "3")
    assert run.code == 0, run
    assert run.summary["workers"] == 1
    assert read_tree(tmp_path / "d") == {str(i): b"x" * i for i in range(50)}


def test_ls_lists_recursively_with_sizes(data_path, cli, s3, bucket):
    put_tree(s3, bucket, {"a/b/c": b"123", "a/d": b"", "e": b"12345"})
    run = cli("ls", f"s3://{bucket}", "--json")
    assert run.code == 0, run
    assert [(e["key"], e["size"]) for e in run.events] == [("a/b/c", 3), ("a/d", 0), ("e", 5)]
    text = cli("ls", f"s3://{bucket}/a/")
    assert text.code == 0
    lines = text.out.splitlines()
    assert len(lines) == 2 and lines[0].split()[-2:] == ["3", "a/b/c"]


def test_human_summary_reports_peak_rss(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {"x": b"1"})
    run = cli("copy", f"s3://{bucket}", str(tmp_path / "d"), "-v")  # developer figures: on request
    assert run.code == 0, run
    assert "peak RSS" in run.out and "copied" in run.out


def test_s3_connection_options_reach_the_wire(data_path, cli, s3, bucket, endpoint):
    """AWS_ENDPOINT_URL is honoured without --endpoint-url; --no-sign-request sends no signature;
    --path-style puts the bucket in the path."""
    from urllib.parse import urlsplit

    from faultproxy import FaultProxy

    put_tree(s3, bucket, {"k": b"v"})
    seen: list[tuple[str, str, dict]] = []

    def record(method, target, headers):
        seen.append((method, target, headers))
        return None

    up = urlsplit(endpoint)
    with FaultProxy(up.hostname, up.port, [record]) as proxy:
        run = cli("ls", f"s3://{bucket}", "--json", endpoint_url=False, env={"AWS_ENDPOINT_URL": proxy.url})
        assert run.code == 0, run
        assert [e["key"] for e in run.events] == ["k"]
        assert seen and "Credential=test/" in seen[-1][2].get("authorization", "")

        seen.clear()
        run = cli("ls", f"s3://{bucket}", "--endpoint-url", proxy.url, "--no-sign-request", "--path-style")
        assert run.code == 0, run
        assert seen and all("authorization" not in h for _, _, h in seen)
        assert all(t.startswith(f"/{bucket}") for _, t, _ in seen)


def test_profile_from_a_credentials_file(data_path, cli, s3, bucket, tmp_path):
    creds = tmp_path / "credentials"
    creds.write_text("[other]\naws_access_key_id = test\naws_secret_access_key = test\n")
    put_tree(s3, bucket, {"via-profile": b"p"})
    env = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SHARED_CREDENTIALS_FILE": str(creds)}
    run = cli("copy", f"s3://{bucket}/", str(tmp_path / "d"), "--profile", "other", "--json", env=env)
    assert run.code == 0, run
    assert (tmp_path / "d" / "via-profile").read_bytes() == b"p"
    without = cli("copy", f"s3://{bucket}/", str(tmp_path / "e"), env=env)
    assert without.code == 3 and "credentials" in without.err, without
