"""`--log-requests FILE` (s3bulk/http/requestlog.py): one line per request and answer, on both data
paths and from every process of a run, with a retry visible as such, and no secret ever written:
not the secret key, the session token, an SSE-C key (raw, base64 or its MD5) or a signature."""

from __future__ import annotations

import base64
import hashlib
import re
import threading

import pytest

from conftest import write_tree
from faultproxy import s3_error
from s3bulk.cli import main
from s3bulk.http import requestlog
from s3bulk.http.requestlog import REDACTED, RequestLog, redact_url, secret_header

SECRET = "wJalrXUtnFEMI-s3bulk-test-secret-K7MDENG"
TOKEN = "FwoGZXIvYXdzEXAMPLE-s3bulk-session-token-value"
SSE_KEY = "0123456789abcdef0123456789ABCDEF"  # 32 bytes: AES256
LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \d+ (GET|HEAD|PUT|POST|DELETE) (\S+) (\d{3}|ERR) "
                  r"sent=\d+ received=\d+ time=[\d.]+ms retry=(\d+)")


@pytest.fixture
def no_log_env(monkeypatch):
    """The option sets the log's variables in this process's environment: gone after the test."""
    for name in (requestlog.ENV, requestlog.HEADERS_ENV):
        # setenv first: delenv of an unset name records nothing, and what the option then sets would
        # stay in this process's environment for every later test (and the CLI runs they start)
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


@pytest.mark.unit
def test_secret_headers_and_query_parameters_are_redacted():
    for name in ("Authorization", "X-Amz-Security-Token", "x-amz-server-side-encryption-customer-key",
                 "x-amz-server-side-encryption-customer-key-MD5", "x-amz-copy-source-server-side-encryption-customer-key",
                 "X-My-Secret", "x-refresh-token", "Proxy-Authorization", "Set-Cookie"):
        assert secret_header(name), name
    for name in ("Content-Length", "x-amz-date", "x-amz-content-sha256", "ETag", "x-amz-server-side-encryption"):
        assert not secret_header(name), name
    url = ("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20261128%2Fus"
           "&X-Amz-Signature=abc123&X-Amz-Security-Token=tok&continuation-token=next&Signature=v2sig")
    got = redact_url(url)
    assert "AKIA" not in got and "abc123" not in got and "=tok" not in got and "v2sig" not in got
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in got and "continuation-token=next" in got  # not secrets
    assert redact_url("http://user:pw@proxy:8080/x") == f"http://{REDACTED}@proxy:8080/x"


@pytest.mark.unit
def test_one_line_per_exchange_headers_under_it(tmp_path):
    path = tmp_path / "log"
    log = RequestLog(str(path), headers=True)
    log.exchange(1795834361.5, 0.0123, "PUT", "http://h:1/b/k", 200, 3, 0, None,
                 [("Authorization", "AWS4-HMAC-SHA256 Credential=AKIA/x, Signature=feed"), ("Content-Length", "3")],
                 [("ETag", '"x"'), ("x-amz-server-side-encryption-customer-key-MD5", "bWQ1")])
    log.exchange(1795834362.0, 1.5, "GET", "http://h:1/b?list-type=2", None, 0, 0, ConnectionResetError("reset\nmore"))
    lines = path.read_text().splitlines()
    assert lines[0] == "2026-11-28T02:52:41.500Z %d PUT http://h:1/b/k 200 sent=3 received=0 time=12.3ms retry=0" % (
        __import__("os").getpid())
    assert lines[1:5] == [f"  > Authorization: {REDACTED}", "  > Content-Length: 3", '  < ETag: "x"',
                          f"  < x-amz-server-side-encryption-customer-key-MD5: {REDACTED}"]
    assert LINE.match(lines[5]) and lines[5].endswith("ERR sent=0 received=0 time=1500.0ms retry=0 "
                                                      "error=ConnectionResetError: reset")


@pytest.mark.unit
def test_a_client_is_logged_only_when_asked(monkeypatch, tmp_path):
    """Off, the lean client is as it was: no request method of its own, nothing per request."""
    from s3bulk.http.client import HttpClient

    monkeypatch.delenv(requestlog.ENV, raising=False)
    assert "request" not in vars(HttpClient("127.0.0.1", 9))
    monkeypatch.setenv(requestlog.ENV, str(tmp_path / "log"))
    assert "request" in vars(HttpClient("127.0.0.1", 9))


@pytest.mark.unit
def test_a_log_that_cannot_be_written_is_one_line(capsys, tmp_path, no_log_env):
    with pytest.raises(SystemExit) as done:
        main(["ls", str(tmp_path), "--log-requests", str(tmp_path / "no" / "such" / "dir" / "log")])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and "--log-requests" in err and "Traceback" not in err


@pytest.mark.parametrize("data_path", ["lean", "botocore"])
def test_requests_logged_with_a_retry_and_no_secret(data_path, cli, s3, bucket, tmp_path, make_fault_proxy, endpoint):
    """Three files up with SSE-C through a proxy that records every signature and answers the first
    PUT with a 500: the log has that PUT's 500 (retry 0) and its 200 (retry 1), with headers, from
    both processes of the run (the bucket's check in the first, the PUTs in its worker); not one
    secret, of the credentials, the SSE-C key or any request's signature."""
    write_tree(tmp_path / "src", {"a.txt": b"aaa", "d/b.txt": b"bb", "c.txt": b"c"})
    signatures: list[str] = []
    lock = threading.Lock()
    failed: list[str] = []

    def record_and_fail_once(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        with lock:
            signatures.extend(re.findall(r"Signature=([0-9a-f]+)", headers.get("authorization", "")))
            if method == "PUT" and "/a.txt" in target and not failed:
                failed.append(target)
                return s3_error(500, "Internal Server Error", "InternalError", "injected by the test")
        return None

    proxy = make_fault_proxy(endpoint, [record_and_fail_once])
    log = tmp_path / "requests.log"
    r = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/up/", "--endpoint-url", proxy.url, "-w", "2",
            "--sse-c", "AES256", "--sse-c-key", SSE_KEY, "--no-journal", "-q",
            "--log-requests", str(log), "--log-requests-headers",
            env={"S3BULK_DATA_PATH": data_path, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SESSION_TOKEN": TOKEN})
    assert r.code == 0, r.err
    text = log.read_text()
    found = [LINE.match(line) for line in text.splitlines() if not line.startswith("  ")]
    assert found and all(found), text
    puts = [(m.group(3), m.group(4)) for m in found if m and m.group(1) == "PUT" and m.group(2).endswith("/up/a.txt")]
    assert puts == [("500", "0"), ("200", "1")], text
    assert {m.group(2).rsplit("/", 1)[-1] for m in found if m and m.group(1) == "PUT"} == {"a.txt", "b.txt", "c.txt"}
    assert len({line.split()[1] for line in text.splitlines() if not line.startswith("  ")}) >= 2  # run, workers
    assert f"> authorization: {REDACTED}" in text.lower()  # either data path's spelling
    assert f"> x-amz-server-side-encryption-customer-key: {REDACTED}" in text.lower()
    secrets = [SECRET, TOKEN, SSE_KEY, base64.b64encode(SSE_KEY.encode()).decode(),
               base64.b64encode(hashlib.md5(SSE_KEY.encode()).digest()).decode()]
    assert len(signatures) >= 4
    for secret in secrets + signatures:
        assert secret not in text, "a secret was written to the request log"
    assert "Signature=" not in text and "Credential=" not in text
