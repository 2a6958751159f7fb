"""`s3bulk mv`: each source object is deleted only after its copy landed; a copy that fails leaves its
source; a killed mv resumed moves the rest and deletes the sources the killed run had copied. Through
the real CLI against LocalStack, failures injected by a proxy that refuses (or holds) some PUTs."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading

from conftest import ROOT, bucket_tree, put_tree, read_tree, write_tree
from faultproxy import FaultProxy, s3_error


def test_mv_local_to_s3_keeps_the_sources_whose_copy_failed(cli, s3, bucket, tmp_path, endpoint):
    tree = {f"d{i % 3}/f{i:03d}": f"body {i}".encode() for i in range(120)}
    write_tree(tmp_path / "src", tree)
    refused = {k for k in tree if k.endswith("7")}

    def refuse(method, target, headers):
        if method == "PUT" and any(target.split("?")[0].endswith("/" + k) for k in refused):
            return s3_error(403, "Forbidden", "AccessDenied", "Access Denied")
        return None

    host, port = re.match(r"http://([^:]+):(\d+)", endpoint).groups()
    with FaultProxy(host, int(port), [refuse]) as proxy:
        r = cli("mv", str(tmp_path / "src"), f"s3://{bucket}/", "--json", "--endpoint-url", proxy.url,
                "--no-journal", "--page-size", "25")
    assert r.code == 1, r
    assert r.summary["copied"] == len(tree) - len(refused) and r.summary["failed"] == len(refused), r.summary
    assert r.summary["deleted"] == len(tree) - len(refused), r.summary
    assert bucket_tree(s3, bucket) == {k: v for k, v in tree.items() if k not in refused}
    assert read_tree(tmp_path / "src") == {k: tree[k] for k in refused}, "only failed copies keep their source"


def test_mv_s3_to_local_and_one_object(cli, s3, bucket, tmp_path):
    tree = {f"p/{i:03d}": bytes([i]) * (i + 1) for i in range(60)} | {"single.txt": b"one"}
    put_tree(s3, bucket, tree)
    r = cli("mv", f"s3://{bucket}/p/", str(tmp_path / "out"), "--json", "--no-journal")
    assert r.code == 0, r
    assert read_tree(tmp_path / "out") == {k[2:]: v for k, v in tree.items() if k.startswith("p/")}
    assert bucket_tree(s3, bucket) == {"single.txt": b"one"}
    r = cli("mv", f"s3://{bucket}/single.txt", str(tmp_path / "one.txt"), "--no-journal")
    assert r.code == 0, r
    assert (tmp_path / "one.txt").read_bytes() == b"one" and bucket_tree(s3, bucket) == {}


def test_mv_killed_then_resumed_ends_with_everything_at_dst_and_nothing_at_src(cli, s3, bucket, tmp_path, endpoint,
                                                                               state_home):
    """SIGKILL while a proxy holds the 30th PUT (pages of 20: the first page's copies landed and its
    sources were deleted; copies of the second page landed, their sources wait for the page), then the
    same line with --resume: every object is at DST and no source is left, including those whose
    copy the killed run had landed but not yet deleted."""
    tree = {f"f{i:03d}": f"body {i}".encode() for i in range(120)}
    write_tree(tmp_path / "src", tree)
    held, release = threading.Event(), threading.Event()
    puts = []

    def hold_30th(method, target, headers):
        if method == "PUT":
            puts.append(target)
            if len(puts) == 30:
                held.set()
                release.wait(300)
                return s3_error(503, "Service Unavailable", "SlowDown", "held by the test")
        return None

    host, port = re.match(r"http://([^:]+):(\d+)", endpoint).groups()
    with FaultProxy(host, int(port), [hold_30th]) as proxy:  # the journal is the endpoint's: one proxy throughout
        args = ["mv", str(tmp_path / "src"), f"s3://{bucket}/", "--json", "-w", "1", "-c", "4", "--page-size", "20",
                "--journal", str(tmp_path / "mv.sqlite"), "--endpoint-url", proxy.url]
        proc = subprocess.Popen([sys.executable, "-m", "s3bulk", *args], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=ROOT, env=dict(os.environ, XDG_STATE_HOME=state_home),
                                start_new_session=True)
        try:
            assert held.wait(300), "the 30th PUT never came"
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            release.set()
        landed = set(bucket_tree(s3, bucket))
        left = set(read_tree(tmp_path / "src"))
        assert landed and left, "killed midway"
        assert landed & left, "some copies landed whose sources the killed run had not deleted yet"
        assert landed | left == set(tree), "the killed run lost nothing"
        r = cli(*args, "--resume")
        assert r.code == 0, r
        assert bucket_tree(s3, bucket) == tree
        assert read_tree(tmp_path / "src") == {}, "the resumed run deleted every source, those copied before the kill too"
        r = cli(*args, "--resume")
        assert r.code == 0, r  # the same line again, after completion: nothing left to move


def test_mv_resume_after_completion_on_an_emptied_prefix_exits_0(cli, s3, bucket, make_bucket):
    """The scheduler's line `mv s3://A/p/ s3://B/ --resume` run again after it completed: the source
    prefix is gone, which means done (exit 0, one line), not "no such key or prefix" (exit 3)."""
    put_tree(s3, bucket, {f"p/{i}": b"x" for i in range(5)})
    dst = make_bucket()
    args = ["mv", f"s3://{bucket}/p/", f"s3://{dst}/", "--resume"]
    assert cli(*args).code == 0
    r = cli(*args)
    assert r.code == 0 and "nothing left to move" in r.err, r
    assert bucket_tree(s3, dst) == {f"p/{i}"[2:]: b"x" for i in range(5)} and bucket_tree(s3, bucket) == {}
    r = cli("mv", f"s3://{bucket}/p/", f"s3://{dst}/")
    assert r.code == 3 and "no such key or prefix" in r.err, "without --resume an empty SRC is still an error"
