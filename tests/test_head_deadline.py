"""A response head arrives within a bounded time, whatever trickles in (issue 33, item 5/7).

s3bulk hung on a server that sent its response headers one byte every few seconds: every byte
reset the silence timeout (`--request-timeout`), and no deadline is on by default. Now the head
must be whole `--request-timeout` seconds after the server took the whole request (http/client.py
HeadTimeout); the request is then retried as a timeout.

On the botocore data path the same deadline holds for requests without a body (stores/s3/store.py
_head_bound_session); one with a body is bounded there by --request-deadline.

tests/faultproxy.py in front of LocalStack dribbles the heads of the answers it is told to, one
byte every 0.5 s (a 300-byte head would take 2.5 minutes); every run here has a hard bound."""

from __future__ import annotations

import os
import time

import pytest

from conftest import read_tree
from faultproxy import Dribble, object_gets

BOUND = 120  # seconds any run here may take before the test calls it a hang


@pytest.mark.parametrize("data_path", ["lean", "botocore"])
def test_a_head_dribbled_once_is_cut_off_and_retried(data_path, cli, fault_proxy, s3, bucket, tmp_path):
    """The first GET's head dribbles; it is cut off after --request-timeout 4 and retried, and the
    copy ends right. Before: the copy waited for the whole dribble (~2 minutes)."""
    body = os.urandom(100_000)
    s3.put_object(Bucket=bucket, Key="k", Body=body)
    fault_proxy.dribble = Dribble(every=0.5, times=1, only=object_gets)
    began = time.monotonic()
    run = cli("copy", f"s3://{bucket}/k", str(tmp_path / "dst" / "k"), "--json", "--request-timeout", "4",
              "--endpoint-url", fault_proxy.url, env={"S3BULK_DATA_PATH": data_path}, timeout=BOUND)
    took = time.monotonic() - began
    assert run.code == 0, run
    assert read_tree(tmp_path / "dst") == {"k": body}
    assert fault_proxy.counts["dribble"] == 1
    assert run.summary["retries"] >= 1, run.summary
    assert took < 60, took


@pytest.mark.parametrize("data_path", ["lean", "botocore"])
def test_a_head_dribbled_on_every_attempt_fails_in_one_line(data_path, cli, fault_proxy, s3, bucket, tmp_path):
    """Every answer's head dribbles: each attempt is cut off, and the object fails after its
    retries with one line saying why, in bounded time."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"x" * 1000)
    fault_proxy.dribble = Dribble(every=0.5, times=10**6, only=object_gets)
    run = cli("copy", f"s3://{bucket}/k", str(tmp_path / "dst" / "k"), "--request-timeout", "4", "--retries", "2",
              "--endpoint-url", fault_proxy.url, env={"S3BULK_DATA_PATH": data_path}, timeout=BOUND)
    if data_path == "lean":
        # the lean path's first request is the GET that finds (and reads) the one object: it cannot
        # get an answer, so the run cannot start (exit 3), said in one line
        assert run.code == 3, run
        lines = [x for x in run.err.splitlines() if x.strip()]
        why = "no complete answer head within 4 s"
    else:
        assert run.code == 1, run
        lines = [x for x in run.err.splitlines() if "ERROR" in x]
        why = "Read timeout"
    assert len(lines) == 1 and why in lines[0], run.err
    assert "Traceback" not in run.err
    assert 1 <= fault_proxy.counts["dribble"] <= 3  # at most the first attempt and its 2 retries


def test_an_upload_whose_answer_head_dribbles_is_retried(cli, fault_proxy, s3, bucket, tmp_path):
    """The same after a request body: the deadline counts from when the server has the whole PUT."""
    body = os.urandom(300_000)
    (tmp_path / "f").write_bytes(body)
    fault_proxy.dribble = Dribble(every=0.5, times=1, only=lambda method, target: method == "PUT")
    run = cli("copy", str(tmp_path / "f"), f"s3://{bucket}/f", "--json", "--request-timeout", "4",
              "--endpoint-url", fault_proxy.url, env={"S3BULK_DATA_PATH": "lean"}, timeout=BOUND)
    assert run.code == 0, run
    assert fault_proxy.counts["dribble"] == 1
    assert s3.get_object(Bucket=bucket, Key="f")["Body"].read() == body
