"""versitygw (Versity's S3 gateway, posix backend) on loopback, for tests that need a server that
checks SigV4 signatures: LocalStack accepts any signature, versitygw recomputes each one and answers
SignatureDoesNotMatch when s3bulk signed something other than what it sent. `started()` builds it
once (scripts/versitygw.sh, into ~/.cache/s3bulk/bin) and starts it on a free port with its own
keys; without go (and no binary) the test is skipped. `from versitygw import versitygw  # noqa: F401`
in a test module gives the module one server."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import ROOT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Versitygw:
    """One versitygw on 127.0.0.1 with a root user of its own (`access`, `secret`)."""

    def __init__(self, exe: str, work: Path, access: str | None = None, secret: str | None = None) -> None:
        self.access = access or "VGW" + secrets.token_hex(6).upper()
        self.secret = secret or secrets.token_urlsafe(24)
        self.root = work / "root"
        self.root.mkdir()
        self.url = f"http://127.0.0.1:{_free_port()}"
        self._log_path = work / "versitygw.log"
        self._log = open(self._log_path, "wb")
        self.proc = subprocess.Popen(
            [exe, "--port", self.url.removeprefix("http://"), "--access", self.access, "--secret", self.secret,
             "--quiet", "posix", str(self.root)],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120  # generous: a busy 2-core machine
        while True:
            try:
                urllib.request.urlopen(self.url + "/", timeout=2)
                break
            except urllib.error.HTTPError:
                break  # it answers (403 to an unsigned request)
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"versitygw did not start; its log:\n{self._log_path.read_text()[-2000:]}")
                time.sleep(0.1)

    @property
    def env(self) -> dict[str, str]:
        """The environment a `cli` run needs for this server's credentials."""
        return {"AWS_ACCESS_KEY_ID": self.access, "AWS_SECRET_ACCESS_KEY": self.secret,
                "AWS_DEFAULT_REGION": "us-east-1"}

    def client(self, access: str | None = None, secret: str | None = None):
        """A plain botocore client of this server (its own keys unless others are given)."""
        import botocore.session

        return botocore.session.get_session().create_client(
            "s3", endpoint_url=self.url, region_name="us-east-1",
            aws_access_key_id=access or self.access, aws_secret_access_key=secret or self.secret)

    def bucket(self) -> str:
        name = f"v-{uuid.uuid4().hex[:20]}"
        self.client().create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._log.close()


def started(tmp_path_factory: pytest.TempPathFactory, access: str | None = None,
            secret: str | None = None) -> Versitygw:
    """A running versitygw (built first if needed); skips the test when go is missing. The caller stops it.
    Its root user's keys are its own unless given (the tests' own `test`/`test`, say)."""
    built = subprocess.run(["bash", str(ROOT / "scripts" / "versitygw.sh")], capture_output=True, text=True,
                           timeout=1800)
    if built.returncode == 3:
        pytest.skip("go is not installed: cannot build versitygw for the signature tests")
    assert built.returncode == 0, f"building versitygw failed:\n{built.stderr[-3000:]}"
    return Versitygw(built.stdout.strip().splitlines()[-1], tmp_path_factory.mktemp("versitygw"), access, secret)


@pytest.fixture(scope="module")
def versitygw(tmp_path_factory):
    """A module's versitygw: `from versitygw import versitygw  # noqa: F401` in the test module."""
    server = started(tmp_path_factory)
    yield server
    server.stop()
