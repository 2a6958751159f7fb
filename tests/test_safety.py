"""Nothing is written outside DST, no partial file sits under a final name, and bad input gets one
clear line and a non-zero exit (never a traceback)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import put_tree, read_tree

ESCAPING = ["../x", "a/../../x", "/abs", "./dot", "a/./b", "a//b", "..", "a/..", "../../../../../../tmp/s3bulk-evil"]


def _snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_keys_that_would_escape_dst_are_refused_and_reported(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {k: b"evil" for k in ESCAPING})
    put_tree(s3, bucket, {"fine/file": b"good"})
    outer = tmp_path / "outer"
    dst = outer / "inner" / "dst"
    dst.mkdir(parents=True)
    before = _snapshot(tmp_path)
    run = cli("copy", f"s3://{bucket}", str(dst), "--json")
    assert run.code == 1, run  # some objects failed
    assert run.summary["copied"] == 1
    assert run.summary["failed"] == len(ESCAPING)
    failed = {e["src"] for e in run.events if e["event"] == "failure"}
    assert failed == {f"s3://{bucket}/{k}" for k in ESCAPING}
    assert all(e["kind"] == "UnsafeKey" for e in run.events if e["event"] == "failure")
    # only dst gained anything, and only the one good file
    after = _snapshot(tmp_path)
    assert {p for p in after - before} == {"outer/inner/dst/fine", "outer/inner/dst/fine/file"}
    assert read_tree(dst) == {"fine/file": b"good"}
    assert not Path("/tmp/s3bulk-evil").exists()


def test_symlink_inside_dst_cannot_lead_outside(cli, s3, bucket, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    dst = tmp_path / "dst"
    dst.mkdir()
    os.symlink(outside, dst / "link")
    put_tree(s3, bucket, {"link/planted": b"evil", "ok": b"good"})
    run = cli("copy", f"s3://{bucket}", str(dst), "--json")
    assert run.code == 1, run
    assert list(outside.iterdir()) == []
    assert (dst / "ok").read_bytes() == b"good"


def test_existing_file_under_final_name_is_replaced_whole(cli, s3, bucket, tmp_path):
    dst = tmp_path / "dst"
    dst.mkdir()
    (dst / "k").write_bytes(b"old contents that are longer")
    put_tree(s3, bucket, {"k": b"new"})
    assert cli("copy", f"s3://{bucket}", str(dst), "-q").code == 0
    assert (dst / "k").read_bytes() == b"new"
    assert sorted(os.listdir(dst)) == ["k"]


def _one_line_error(run, code: int, *needles: str) -> None:
    assert run.code == code, run
    assert "Traceback" not in run.err and "Traceback" not in run.out, run
    lines = [line for line in run.err.splitlines() if line.strip()]
    assert len(lines) == 1, run
    assert lines[0].startswith("s3bulk: error:"), run
    for needle in needles:
        assert needle.lower() in lines[0].lower(), run


@pytest.mark.parametrize("src,needle", [
    ("s3://", "no bucket"),
    ("s3:///key", "no bucket"),
    ("s3://bad bucket!/x", "not a valid bucket"),
    ("ftp://host/x", "unsupported url scheme"),
    ("s3:/one-slash", "malformed"),
    ("", "empty location"),
])
def test_malformed_urls(cli, tmp_path, src, needle):
    _one_line_error(cli("copy", src, str(tmp_path / "d")), 2, needle)
    assert not (tmp_path / "d").exists()


def test_bucket_that_does_not_exist(cli, tmp_path):
    _one_line_error(cli("copy", "s3://no-such-bucket-s3bulk-test/", str(tmp_path / "d")), 3, "bucket does not exist")
    _one_line_error(cli("copy", str(tmp_path), "s3://no-such-bucket-s3bulk-test/x/"), 3, "bucket does not exist")


def test_missing_local_source(cli, tmp_path):
    _one_line_error(cli("copy", str(tmp_path / "nope"), str(tmp_path / "d")), 3, "no such file")


def test_no_credentials(cli, bucket, tmp_path):
    env = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    run = cli("copy", f"s3://{bucket}/", str(tmp_path / "d"), env=env)
    _one_line_error(run, 3, "credentials")


def test_unknown_profile(cli, bucket, tmp_path):
    _one_line_error(cli("copy", f"s3://{bucket}/", str(tmp_path / "d"), "--profile", "nobody"), 2, "profile")


def test_wrong_credentials(cli, bucket, tmp_path, endpoint):
    # LocalStack accepts any key, so a proxy in front of it answers as AWS does for an unknown key.
    from urllib.parse import urlsplit

    from faultproxy import FaultProxy, reject_access_key

    up = urlsplit(endpoint)
    env = {"AWS_ACCESS_KEY_ID": "AKIAWRONGKEY0000", "AWS_SECRET_ACCESS_KEY": "wrong"}
    with FaultProxy(up.hostname, up.port, [reject_access_key("AKIAWRONGKEY0000")]) as proxy:
        run = cli("copy", f"s3://{bucket}/", str(tmp_path / "d"), "--endpoint-url", proxy.url, env=env)
        _one_line_error(run, 3, "access key is unknown to the server")
        # the right key through the same proxy works: the proxy is transparent otherwise
        ok = cli("copy", f"s3://{bucket}/", str(tmp_path / "d"), "--endpoint-url", proxy.url, "-q")
        assert ok.code == 0, ok


def test_endpoint_refusing_connections(cli, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        run = cli("copy", "s3://some-bucket/", str(tmp_path / "d"), "--endpoint-url", f"http://127.0.0.1:{port}")
    _one_line_error(run, 3, "cannot connect")


def test_bad_endpoint_url(cli, tmp_path):
    _one_line_error(cli("copy", "s3://b/", str(tmp_path / "d"), "--endpoint-url", "not a url"), 2, "endpoint")


def test_dst_is_a_file_where_a_directory_is_needed(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {"a": b"1", "b": b"2"})
    f = tmp_path / "file"
    f.write_bytes(b"i am a file")
    _one_line_error(cli("copy", f"s3://{bucket}/", str(f)), 3, "directory is needed")
    assert f.read_bytes() == b"i am a file"


def test_dst_inside_src_is_refused(cli, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "x").write_bytes(b"x")
    _one_line_error(cli("copy", str(tmp_path / "src"), str(tmp_path / "src" / "sub")), 2, "inside the source")


def test_bad_option_values(cli, tmp_path):
    _one_line_error(cli("copy", str(tmp_path), str(tmp_path / "d"), "--part-size", "lots"), 2, "part-size")
    _one_line_error(cli("copy", str(tmp_path), str(tmp_path / "d"), "--part-size", "1MiB"), 2, "5MiB")
    _one_line_error(cli("copy", str(tmp_path), str(tmp_path / "d"), "--concurrency", "0"), 2)


def test_ls_errors_are_one_line(cli):
    _one_line_error(cli("ls", "s3://no-such-bucket-s3bulk-test/"), 3, "bucket does not exist")
    _one_line_error(cli("ls", "gopher://x"), 2, "unsupported")


def test_credentials_never_appear_in_output(cli, bucket, tmp_path):
    secret = "SuperSecretValue1234567890abcdefSECRET"
    env = {"AWS_ACCESS_KEY_ID": "AKIAS3BULKTESTKEY", "AWS_SECRET_ACCESS_KEY": secret}
    for args in (("copy", f"s3://{bucket}/", str(tmp_path / "d"), "--json"),
                 ("copy", f"s3://{bucket}/", str(tmp_path / "d")),
                 ("ls", f"s3://{bucket}/")):
        run = cli(*args, env=env)
        assert secret not in run.out and secret not in run.err
