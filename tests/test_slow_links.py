"""Slow and stalling links, made by toxiproxy (Shopify's TCP proxy) between s3bulk and LocalStack.

`--request-timeout` is a limit on silence: a download and an upload that each take several times
the timeout through a bandwidth-limited connection succeed, and connections that stall for good
are retried until the copy ends identical. toxiproxy is built once by scripts/toxiproxy.sh into
~/.cache/s3bulk/bin (go install); without go these tests are skipped."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import ROOT, put_tree, read_tree, write_tree

TIMEOUT = "3"  # --request-timeout for these runs: one request below takes 2-3 times as long


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Toxiproxy:
    """A toxiproxy server on loopback, driven through its HTTP API."""

    def __init__(self, exe: str, log: Path) -> None:
        self.api = f"http://127.0.0.1:{_free_port()}"
        port = urlsplit(self.api).port
        self._log = open(log, "wb")
        self.proc = subprocess.Popen([exe, "-host", "127.0.0.1", "-port", str(port)], stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{self.api}/version", timeout=2):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"toxiproxy did not start; its log:\n{log.read_text()[-2000:]}")
                time.sleep(0.1)

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.api}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            text = resp.read()
        return json.loads(text) if text.strip() else {}

    def proxy(self, name: str, upstream: str) -> str:
        """A new proxy to upstream (an http:// URL); returns the URL to use instead."""
        up = urlsplit(upstream)
        made = self._call("POST", "/proxies", {"name": name, "listen": "127.0.0.1:0",
                                                "upstream": f"{up.hostname}:{up.port}"})
        return f"http://{made['listen']}"

    def toxic(self, proxy: str, kind: str, stream: str, toxicity: float = 1.0, **attributes: int) -> None:
        self._call("POST", f"/proxies/{proxy}/toxics", {"name": f"{kind}_{stream}", "type": kind, "stream": stream,
                                                       "toxicity": toxicity, "attributes": attributes})

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()


@pytest.fixture(scope="module")
def toxiproxy(tmp_path_factory):
    built = subprocess.run(["bash", str(ROOT / "scripts" / "toxiproxy.sh")], capture_output=True, text=True,
                           timeout=900)
    if built.returncode == 3:
        pytest.skip("go is not installed: cannot build toxiproxy for the slow-link tests")
    assert built.returncode == 0, f"building toxiproxy failed:\n{built.stderr[-3000:]}"
    server = Toxiproxy(built.stdout.strip().splitlines()[-1], tmp_path_factory.mktemp("toxiproxy") / "log")
    yield server
    server.stop()


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
