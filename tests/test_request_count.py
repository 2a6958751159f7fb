"""What the request log (`--log-requests`) shows of a run's requests: `du` of a prefix resolves its
URL once (one HEAD, one LIST of one key) before its listing, and `--log-requests-headers` alone
logs to stderr. LocalStack, a handful of objects."""

from __future__ import annotations

import re

REQUEST = re.compile(r"^\S+ \d+ (GET|HEAD|PUT|POST|DELETE) (\S+) ")


def requests(text: str) -> list[tuple[str, str]]:
    """(method, URL) of each request line (header lines, indented, left out)."""
    return [(m.group(1), m.group(2)) for m in map(REQUEST.match, text.splitlines()) if m]


def test_du_resolves_its_url_once(cli, s3, bucket, tmp_path):
    for key in ("p/a", "p/b/c", "p/d"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"xy")
    log = tmp_path / "requests.log"
    r = cli("du", f"s3://{bucket}/p", "--json", "--log-requests", str(log))
    assert r.code == 0 and '"objects": 3, "bytes": 6' in r.out, r.err
    sent = requests(log.read_text())
    heads = [url for method, url in sent if method == "HEAD"]
    probes = [url for method, url in sent if method == "GET" and "max-keys=1&" in url + "&"]
    assert len(heads) == 1 and heads[0].endswith(f"/{bucket}/p"), sent
    assert len(probes) == 1, f"the URL is resolved once, not once for du and again for its listing: {sent}"


def test_headers_alone_log_to_stderr(cli, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    r = cli("du", f"s3://{bucket}/k", "--log-requests-headers")
    assert r.code == 0, r.err
    lines = r.err.splitlines()
    assert requests(r.err) and any(line.startswith("  > ") for line in lines) and \
        any(line.startswith("  < ") for line in lines), r.err
    assert "AWS4-HMAC-SHA256" not in r.err and "Signature=" not in r.err
