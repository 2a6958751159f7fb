"""Slow and stalling links, made by toxiproxy (Shopify's TCP proxy) between s3bulk and LocalStack.

`--request-timeout` is a limit on silence: a download and an upload that each take several times
the timeout through a bandwidth-limited connection succeed, and connections that stall for good
are retried until the copy ends identical. toxiproxy is built once by scripts/toxiproxy.sh into
~/.cache/s3bulk/bin (go install); without go these tests are skipped."""

from __future__ import annotations

import json
import os
import time
import urllib.request

from conftest import put_tree, read_tree, write_tree
from toxiproxy import toxiproxy  # noqa: F401  (the fixture)

TIMEOUT = "3"  # --request-timeout for these runs: one request below takes 2-3 times as long


def test_a_slow_download_and_upload_outlasting_the_timeout_succeed(toxiproxy, endpoint, cli, s3, bucket,
                                                                   tmp_path):
    """4 MiB each way at 512 KB/s per connection: ~8 s per request against --request-timeout 3
    (before, the timeout was a deadline for the whole request and every attempt was cut off)."""
    url = toxiproxy.proxy("slow", endpoint)
    for stream in ("upstream", "downstream"):
        toxiproxy.toxic("slow", "bandwidth", stream, rate=512)
    tree = {"big.bin": os.urandom(4 * 1024 * 1024)}
    write_tree(tmp_path / "src", tree)
    up = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/", "--json", "-w", "1",
             "--request-timeout", TIMEOUT, "--endpoint-url", url)
    assert up.code == 0, up
    assert s3.get_object(Bucket=bucket, Key="big.bin")["Body"].read() == tree["big.bin"]
    down = cli("copy", f"s3://{bucket}/", str(tmp_path / "dst"), "--json", "-w", "1",
               "--request-timeout", TIMEOUT, "--endpoint-url", url)
    assert down.code == 0, down
    assert read_tree(tmp_path / "dst") == tree


def test_stalled_connections_are_retried_and_the_copy_ends_identical(toxiproxy, endpoint, cli, s3, bucket,
                                                                     tmp_path):
    """A fifth of the connections go silent for good (timeout toxic, no close). 60 objects fetched
    at once open ~60 connections, so some stall (all 60 escaping has odds of 0.8^60, ~1e-6); each
    stalled request times out after --request-timeout 3 and is retried on another connection."""
    tree = {f"o/{i:03d}": os.urandom(2000 + i) for i in range(60)}
    put_tree(s3, bucket, tree)
    url = toxiproxy.proxy("stall", endpoint)
    toxiproxy.toxic("stall", "timeout", "downstream", toxicity=0.2, timeout=0)
    down = cli("copy", f"s3://{bucket}/o/", str(tmp_path / "dst"), "--json", "-w", "1", "-c", "60",
               "--retries", "10", "--request-timeout", TIMEOUT, "--endpoint-url", url)
    assert down.code == 0, down
    assert read_tree(tmp_path / "dst") == {k[2:]: v for k, v in tree.items()}
    assert down.summary["retries"] >= 1, down.summary
