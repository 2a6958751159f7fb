"""`s3bulk rm`: everything under a prefix deleted in batches of 1,000 keys (counted at a proxy), filters
and dry runs delete nothing they should not, a whole bucket needs --all, and a key the server refuses
inside DeleteObjects' 200 answer is reported and exits 1. Through the real CLI against LocalStack."""

from __future__ import annotations

import re

from conftest import put_tree

from faultproxy import FaultProxy


def keys_of(s3, bucket: str) -> set[str]:
    keys, token = set(), None
    while True:
        resp = s3.list_objects_v2(Bucket=bucket, **({"ContinuationToken": token} if token else {}))
        keys |= {o["Key"] for o in resp.get("Contents", [])}
        token = resp.get("NextContinuationToken")
        if not token:
            return keys


def test_rm_prefix_in_batches_with_filters_and_dry_run(cli, s3, bucket, endpoint):
    objects = {f"p/{i:05d}.{'log' if i % 10 else 'keep'}": b"x" for i in range(2500)} | {"q/other": b"y", "p-not/x": b"z"}
    put_tree(s3, bucket, objects)
    r = cli("rm", f"s3://{bucket}/p/", "--dry-run")
    assert r.code == 0, r
    assert r.out.count("(dryrun) delete: ") == 2500 and keys_of(s3, bucket) == set(objects), "a dry run deletes nothing"
    posts = []

    def count(method, target, headers):
        if method == "POST" and "delete" in target:
            posts.append(target)
        return None

    host, port = re.match(r"http://([^:]+):(\d+)", endpoint).groups()
    with FaultProxy(host, int(port), [count]) as proxy:
        r = cli("rm", f"s3://{bucket}/p/", "--exclude", "*.keep", "--json", "--endpoint-url", proxy.url)
    assert r.code == 0, r
    assert r.summary["deleted"] == 2250 and r.summary["failed"] == 0, r.summary
    assert keys_of(s3, bucket) == {k for k in objects if not k.startswith("p/") or k.endswith(".keep")}
    assert 3 <= len(posts) <= 8, posts  # 2,250 keys in batches of up to 1,000 (split listing ranges may cut more)


def test_rm_whole_bucket_needs_all(cli, s3, bucket):
    put_tree(s3, bucket, {"a": b"1", "b/c": b"2"})
    r = cli("rm", f"s3://{bucket}")
    assert r.code == 2 and "--all" in r.err and keys_of(s3, bucket) == {"a", "b/c"}, r
    r = cli("rm", f"s3://{bucket}", "--all")
    assert r.code == 0 and keys_of(s3, bucket) == set(), r
    r = cli("rm", f"s3://{bucket}/nothing")
    assert r.code == 3 and "no such key or prefix" in r.err, r


def test_rm_reports_keys_refused_inside_a_200(cli, s3, bucket, endpoint):
    """The proxy answers DeleteObjects itself with a 200 that refuses one key (as Object Lock or a
    bucket policy would): rm reports that key, exits 1, and does not count it as deleted."""
    put_tree(s3, bucket, {f"d/k{i}": b"x" for i in range(5)})
    host, port = re.match(r"http://([^:]+):(\d+)", endpoint).groups()

    def refuse(method, target, headers):
        if method == "POST" and "delete" in target:
            body = (b'<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                    b"<Error><Key>d/k3</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
                    b"</DeleteResult>")
            return (b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: "
                    + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        return None

    with FaultProxy(host, int(port), [refuse]) as proxy:
        r = cli("rm", f"s3://{bucket}/d/", "--endpoint-url", proxy.url)
    assert r.code == 1, r
    assert "ERROR delete" in r.err and "d/k3" in r.err and "AccessDenied" in r.err, r.err
    assert "deleted 4 objects, 1 failure" in r.err, r.err
