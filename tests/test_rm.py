"""`s3bulk rm`: everything under a prefix deleted in batches of 1,000 keys (10,000 objects in ~10
requests, counted at a proxy, on versitygw), filters and dry runs delete nothing they should not, a whole bucket needs
--all, a key the server refuses inside DeleteObjects' 200 answer is reported and exits 1, and a killed
rm resumed with --resume deletes the rest. Through the real CLI against LocalStack."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
from urllib.parse import parse_qs, urlsplit

from conftest import ROOT, put_tree, write_tree

from faultproxy import FaultProxy, s3_error
from versitygw import versitygw  # noqa: F401  (one server for this module, started only if asked)


def keys_of(s3, bucket: str) -> set[str]:
    keys, token = set(), None
    while True:
        resp = s3.list_objects_v2(Bucket=bucket, **({"ContinuationToken": token} if token else {}))
        keys |= {o["Key"] for o in resp.get("Contents", [])}
        token = resp.get("NextContinuationToken")
        if not token:
            return keys


def test_rm_filters_and_dry_run_delete_nothing_they_should_not(cli, s3, bucket):
    objects = {f"p/{i:03d}.{'log' if i % 10 else 'keep'}": b"x" for i in range(50)} | {"q/other": b"y", "p-not/x": b"z"}
    put_tree(s3, bucket, objects)
    r = cli("rm", f"s3://{bucket}/p/", "--dry-run")
    assert r.code == 0, r
    assert r.out.count("(dryrun) delete: ") == 50 and keys_of(s3, bucket) == set(objects), "a dry run deletes nothing"
    r = cli("rm", f"s3://{bucket}/p/", "--exclude", "*.keep", "--json")
    assert r.code == 0, r
    assert r.summary["deleted"] == 45 and r.summary["failed"] == 0, r.summary
    kinds = [e["event"] for e in r.events]
    assert kinds[0] == "start" and kinds[-1] == "summary", kinds  # as copy's stream: start first, summary last
    r = cli("rm", f"s3://{bucket}-missing/p/", "--json")
    assert r.code != 0 and [e["event"] for e in r.events] == ["start", "error", "summary"], r
    assert r.summary["ok"] is False and r.summary["fatal"], r.summary
    assert keys_of(s3, bucket) == {k for k in objects if not k.startswith("p/") or k.endswith(".keep")}


def test_rm_10000_objects_in_about_10_delete_objects_requests(cli, versitygw):
    """10,000 objects under a prefix go in ~10 DeleteObjects requests of up to 1,000 keys: batches fill
    across listing pages and split key ranges, so requests stay ~ keys / 1000.

    On versitygw (posix backend), whose objects are files under its root: written there directly,
    10,000 objects take a moment, where 10,000 PUTs to LocalStack took most of a minute. Counted at
    a proxy in front of the server, not in its log: the proxy sees exactly the requests this rm
    sends, which is what the count is about."""
    bucket = versitygw.bucket()
    keys = [f"d{i % 10}/f{i:05d}" for i in range(10_000)]
    write_tree(versitygw.root / bucket / "p", {key: b"x" for key in keys})
    write_tree(versitygw.root / bucket, {"q/stays": b"y"})
    s3 = versitygw.client()
    assert len(keys_of(s3, bucket)) == 10_001, "versitygw serves the files as objects"
    posts = []

    def count(method, target, headers):
        if method == "POST" and "delete" in target:
            posts.append(target)
        return None

    with FaultProxy.for_url(versitygw.url, [count]) as proxy:
        r = cli("rm", f"s3://{bucket}/p/", "--json", "--no-journal", "--endpoint-url", proxy.url, "--path-style",
                env=versitygw.env)
    assert r.code == 0, r
    assert r.summary["deleted"] == 10_000 and r.summary["failed"] == 0, r.summary
    assert keys_of(s3, bucket) == {"q/stays"}
    assert 10 <= len(posts) <= 12, f"{len(posts)} DeleteObjects requests for 10,000 keys"


def test_rm_killed_then_resumed_deletes_the_rest(cli, versitygw, tmp_path, state_home):
    """SIGKILL while the third DeleteObjects is held at a proxy (one request at a time: two batches,
    2,000 keys, are deleted and journaled), then the same line with --resume: it lists only after the
    journaled range (start-after, seen at the proxy), deletes the rest, exits 0 and removes its journal; run once more, it finds nothing left, exit 0.
    On versitygw, its objects written as files under its root (as the 10,000 above)."""
    bucket, s3 = versitygw.bucket(), versitygw.client()
    keys = [f"k{i:05d}" for i in range(3000)]
    write_tree(versitygw.root / bucket / "p", {key: b"x" for key in keys})
    assert len(keys_of(s3, bucket)) == 3000
    journal = tmp_path / "rm.sqlite"
    held, release = threading.Event(), threading.Event()
    posts, lists = [], []

    def hold_third(method, target, headers):
        if method == "GET" and "list-type=2" in target and "max-keys=1000" in target:
            lists.append(parse_qs(urlsplit(target).query))
        if method == "POST" and "delete" in target:
            posts.append(target)
            if len(posts) == 3:
                held.set()
                release.wait(300)
                return s3_error(503, "Service Unavailable", "SlowDown", "held by the test")
        return None

    with FaultProxy.for_url(versitygw.url, [hold_third]) as proxy:  # the journal is the endpoint's: one proxy throughout
        args = ["rm", f"s3://{bucket}/p/", "--journal", str(journal), "-c", "1", "--json", "--endpoint-url", proxy.url,
                "--path-style"]
        proc = subprocess.Popen([sys.executable, "-m", "s3bulk", *args], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=ROOT, start_new_session=True,
                                env=dict(os.environ, XDG_STATE_HOME=state_home, **versitygw.env))
        try:
            assert held.wait(300), "the third DeleteObjects never came"
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            release.set()
        left = keys_of(s3, bucket)
        assert len(left) == 1000, len(left)
        with sqlite3.connect(journal) as db:
            assert db.execute("SELECT sum(objects) FROM ranges").fetchone()[0] == 2000, "two batches journaled"
        lists.clear()
        r = cli(*args, "--resume", env=versitygw.env)
        assert r.code == 0, r
        assert r.summary["deleted"] == 1000 and r.summary["resumed_deleted"] == 2000, r.summary
        assert lists and all(q.get("start-after", [""])[0] >= "p/k01999" for q in lists), \
            "the resumed run lists only what the journal does not record as deleted"
        assert keys_of(s3, bucket) == set() and not journal.exists()
        r = cli(*args, "--resume", env=versitygw.env)
        assert r.code == 0 and "nothing left to delete" in r.err, r


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
