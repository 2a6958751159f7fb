"""Toxiproxy (Shopify's TCP proxy) on loopback, for tests that need slow or stalling links in
front of a real S3 server: `started()` builds it once (scripts/toxiproxy.sh, into
~/.cache/s3bulk/bin) and starts a server; `proxy(name, upstream)` gives a URL to use instead of the
upstream one, and `toxic(...)` slows or stalls it. Without go (and no binary) the test is skipped."""

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

from conftest import ROOT


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
        """Add a toxic (bandwidth: rate in KB/s; timeout: ms, 0 = never) to one direction of a proxy."""
        self._call("POST", f"/proxies/{proxy}/toxics", {"name": f"{kind}_{stream}", "type": kind, "stream": stream,
                                                       "toxicity": toxicity, "attributes": attributes})

    def remove_toxic(self, proxy: str, kind: str, stream: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{kind}_{stream}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()


def started(tmp_path_factory: pytest.TempPathFactory) -> Toxiproxy:
    """A running toxiproxy server (built first if needed); skips the test when go is missing.
    The caller stops it."""
    built = subprocess.run(["bash", str(ROOT / "scripts" / "toxiproxy.sh")], capture_output=True, text=True,
                           timeout=900)
    if built.returncode == 3:
        pytest.skip("go is not installed: cannot build toxiproxy for the slow-link tests")
    assert built.returncode == 0, f"building toxiproxy failed:\n{built.stderr[-3000:]}"
    return Toxiproxy(built.stdout.strip().splitlines()[-1], tmp_path_factory.mktemp("toxiproxy") / "log")


@pytest.fixture(scope="module")
def toxiproxy(tmp_path_factory):
    """A module's toxiproxy server: `from toxiproxy import toxiproxy  # noqa: F401` in the test module."""
    server = started(tmp_path_factory)
    yield server
    server.stop()
