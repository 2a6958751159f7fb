"""The plain list/get contract: `s3bulk serve`, and copying from it, against the real server on
loopback (with the fault proxy in front where the server itself would never misbehave)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import ROOT, bucket_tree, read_tree, write_tree
from faultproxy import FaultProxy, s3_error


@contextmanager
def served(*args: str):
    """Run `s3bulk serve ARGS --port 0` and yield its base URL (without the trailing slash)."""
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", "serve", *args, "--port", "0"],
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = proc.stderr.readline()
        assert line.startswith("serving on "), line
        yield line.split()[-1].rstrip("/")
    finally:
        proc.terminate()
        try:
            proc.wait(60)  # a busy machine may take a while
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


def http(url: str, method: str = "GET", headers: dict | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def canned(status: int, body: bytes, ctype: str = "application/json") -> bytes:
    return (f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n").encode() + body


NAMES = {"plain": b"p", "with space.txt": b"s", "unicodé/日本.txt": "u".encode(), "sub/dir/deep": b"d" * 3000,
         "a-b": b"1", "a.b": b"2", "a/b": b"3", "empty": b""}


def test_contract_pages_and_last_page_has_no_next_marker():
    with served("--synthetic", "25", "--page-size", "10", "--processes", "1") as url:
        pages, token = [], None
        while True:
            status, _, body = http(f"{url}/list" + (f"?next-marker={token}" if token else ""))
            assert status == 200
            doc = json.loads(body)
            pages.append(doc["FileNames"])
            if "NextMarker" not in doc:
                break
            token = doc["NextMarker"]
        assert [len(p) for p in pages] == [10, 10, 5]
        names = [n for p in pages for n in p]
        assert len(set(names)) == 25 and names == sorted(names)
        status, headers, body = http(f"{url}/get/{names[3]}")
        assert status == 200 and len(body) == 100 and body.startswith(names[3].encode())
        status, headers, body = http(f"{url}/get/{names[3]}", headers={"Range": "bytes=10-19"})
        assert status == 206 and headers["Content-Range"] == "bytes 10-19/100" and len(body) == 10
        status, headers, body = http(f"{url}/get/{names[3]}", method="HEAD")
        assert status == 200 and headers["Content-Length"] == "100" and body == b""
        assert http(f"{url}/get/f999999999999")[0] == 404


def test_server_refuses_names_that_leave_its_directory(tmp_path):
    root = tmp_path / "root"
    write_tree(root, {"inside.txt": b"ok"})
    (tmp_path / "secret.txt").write_bytes(b"secret")
    os.symlink(tmp_path / "secret.txt", root / "link-out")
    with served(str(root), "--processes", "1") as url:
        assert http(f"{url}/get/inside.txt")[2] == b"ok"
        for bad in ("../secret.txt", "%2e%2e/secret.txt", "..%2fsecret.txt", "%2e%2e%2fsecret.txt",
                    "sub/../../secret.txt", "link-out", "%2Fetc%2Fpasswd", "./inside.txt", "inside.txt%00"):
            status, _, body = http(f"{url}/get/{bad}")
            assert status == 404 and b"secret" not in body, bad
        status, _, body = http(f"{url}/list")
        assert json.loads(body)["FileNames"] == ["inside.txt"]


@pytest.mark.parametrize("page_size", ["1", "7", "1000"])
def test_copy_directory_server_to_local(tmp_path, cli, page_size, no_leftovers):
    src = tmp_path / "src"
    write_tree(src, NAMES)
    with served(str(src), "--page-size", page_size, "--processes", "1") as url:
        run = cli("copy", url + "/", str(tmp_path / "dst"), "--json")
    assert run.code == 0, run
    assert run.summary["copied"] == len(NAMES)
    assert read_tree(tmp_path / "dst") == NAMES
    no_leftovers(tmp_path / "dst")


def test_copy_synthetic_many_pages_two_workers(tmp_path, cli):
    with served("--synthetic", "5000", "--size", "64", "--page-size", "100") as url:
        run = cli("copy", url, str(tmp_path / "dst"), "--json", "--workers", "2")
        listed = cli("ls", url + "/", "--json")
    assert run.code == 0, run
    files = sorted(os.listdir(tmp_path / "dst"))
    assert len(files) == 5000 and run.summary["copied"] == 5000
    for name in files[::499]:
        body = (tmp_path / "dst" / name).read_bytes()
        assert len(body) == 64 and body.startswith(name.encode() + b"\n")
    assert [e["key"] for e in listed.events] == files


def test_empty_server(tmp_path, cli):
    (tmp_path / "empty").mkdir()
    for args in (("--synthetic", "0"), (str(tmp_path / "empty"),)):
        with served(*args, "--processes", "1") as url:
            run = cli("copy", url, str(tmp_path / "dst"), "--json")
        assert run.code == 0, run
        assert run.summary["copied"] == 0 and run.summary["listed"] == 0


def test_large_file_from_server_goes_in_ranged_parts(tmp_path, cli, no_leftovers):
    body = os.urandom(13 * 1024 * 1024 + 7)
    write_tree(tmp_path / "src", {"big": body, "small": b"x"})
    with served(str(tmp_path / "src"), "--processes", "1") as url:
        up = urlsplit(url)
        ranges = []

        def watch(method, target, headers):
            if target == "/get/big":
                ranges.append(headers.get("range"))
            return None

        with FaultProxy(up.hostname, up.port, [watch]) as proxy:
            run = cli("copy", proxy.url, str(tmp_path / "dst"), "--json", "--part-size", "5MiB",
                      "--multipart-threshold", "5MiB")
    assert run.code == 0, run
    assert (tmp_path / "dst" / "big").read_bytes() == body
    assert len([r for r in ranges if r and r != "bytes=0-1048575"]) == 3  # three 5 MiB parts
    no_leftovers(tmp_path / "dst")


def test_copy_from_server_to_s3(tmp_path, cli, s3, bucket):
    write_tree(tmp_path / "src", NAMES)
    with served(str(tmp_path / "src"), "--processes", "1") as url:
        run = cli("copy", url, f"s3://{bucket}/from-http/", "--json")
    assert run.code == 0, run
    assert bucket_tree(s3, bucket, "from-http/") == NAMES


def test_404_is_reported_per_file_and_the_run_goes_on(tmp_path, cli):
    write_tree(tmp_path / "src", {f"f{i}": b"x" for i in range(20)})
    with served(str(tmp_path / "src"), "--processes", "1") as url:
        up = urlsplit(url)
        gone = {"/get/f3", "/get/f17"}
        rule = lambda m, t, h: canned(404, b"not found\n", "text/plain") if t in gone else None  # noqa: E731
        with FaultProxy(up.hostname, up.port, [rule]) as proxy:
            run = cli("copy", proxy.url, str(tmp_path / "dst"), "--json")
    assert run.code == 1, run
    assert run.summary["copied"] == 18 and run.summary["failed"] == 2
    failures = [e for e in run.events if e["event"] == "failure"]
    assert {f["src"].rsplit("/", 1)[1] for f in failures} == {"f3", "f17"}
    assert all(f["kind"] == "NotFound" for f in failures)
    assert len(os.listdir(tmp_path / "dst")) == 18


def test_5xx_and_dropped_connections_are_retried(tmp_path, cli):
    files = {f"f{i:03d}": os.urandom(50) for i in range(60)}
    write_tree(tmp_path / "src", files)
    with served(str(tmp_path / "src"), "--page-size", "10", "--processes", "1") as url:
        up = urlsplit(url)
        seen: dict[str, int] = {}

        def flaky(method, target, headers):
            # every path fails on its first two requests: 503, then a reset connection
            n = seen[target] = seen.get(target, 0) + 1
            if n == 1:
                return s3_error(503, "Service Unavailable", "SlowDown", "slow down")
            if n == 2:
                return b""  # the proxy closes the connection without an answer
            return None

        with FaultProxy(up.hostname, up.port, [flaky]) as proxy:
            run = cli("copy", proxy.url, str(tmp_path / "dst"), "--json")
    assert run.code == 0, run
    assert read_tree(tmp_path / "dst") == files
    # each file needed exactly three tries; /list (also asked once up front, to check the server) at least three
    assert all(n == 3 for t, n in seen.items() if t.startswith("/get/")), seen
    assert all(n >= 3 for t, n in seen.items() if t.startswith("/list")), seen
    assert len([t for t in seen if t.startswith("/get/")]) == 60


def test_malformed_list_answer_stops_the_run_naming_the_token(tmp_path, cli):
    write_tree(tmp_path / "src", {f"f{i:03d}": b"x" for i in range(30)})
    with served(str(tmp_path / "src"), "--page-size", "10", "--processes", "1") as url:
        up = urlsplit(url)
        bad_token: list[str] = []

        def garble(method, target, headers):
            if target.startswith("/list?next-marker="):
                bad_token.append(target.split("=", 1)[1])
                return canned(200, b"<html>this is not json</html>", "text/html")
            return None

        with FaultProxy(up.hostname, up.port, [garble]) as proxy:
            run = cli("copy", proxy.url, str(tmp_path / "dst"))
    assert run.code == 3, run
    assert "Traceback" not in run.err
    errors = [line for line in run.err.splitlines() if line.startswith("s3bulk: error:")]
    assert len(errors) == 1 and "malformed /list answer" in errors[0], run
    assert bad_token and bad_token[0] in errors[0]


def test_traversal_names_from_a_server_are_refused(tmp_path, cli):
    outer = tmp_path / "outer"
    dst = outer / "dst"
    listing = {"FileNames": ["ok", "../escape", "a/../../escape2", "/abs", "./dot", "x//y"]}

    with served("--synthetic", "1", "--processes", "1") as url:
        up = urlsplit(url)

        def evil(method, target, headers):
            if target == "/list":
                return canned(200, json.dumps(listing).encode())
            if target.startswith("/get/"):
                return canned(200, b"payload", "application/octet-stream")
            return None

        with FaultProxy(up.hostname, up.port, [evil]) as proxy:
            run = cli("copy", proxy.url, str(dst), "--json")
    assert run.code == 1, run
    assert run.summary["copied"] == 1 and run.summary["failed"] == 5
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "outer", "outer/dst", "outer/dst/ok"]


def test_unreachable_server_is_one_line(tmp_path, cli):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        run = cli("copy", f"http://127.0.0.1:{port}/", str(tmp_path / "d"))
    assert run.code == 3, run
    lines = [x for x in run.err.splitlines() if x.strip()]
    assert len(lines) == 1 and "cannot connect" in lines[0], run


def test_http_destination_is_refused(tmp_path, cli):
    run = cli("copy", str(tmp_path), "http://127.0.0.1:1/")
    assert run.code == 2 and "read-only" in run.err, run
