"""A run whose server listens on this machine's loopback gets half the cores' workers by default,
each starting with proportionally more transfers in flight (engine/plan.py sharing_cores; Location.served_here): the
server spends about as much CPU a small object as the client, on the same cores. What the user
asked for (--workers, -c) and a server elsewhere are left as they are."""

from __future__ import annotations

import os

import pytest

from s3bulk.config.urls import S3Options, parse_location
from s3bulk.engine.plan import TransferOptions, sharing_cores

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

LOCAL_DIR = parse_location("/tmp/dst/")


def s3(url: str | None):
    return parse_location("s3://b/p/", S3Options(endpoint_url=url))


@pytest.mark.parametrize("url, here", [
    ("http://127.0.0.1:7070", True), ("http://localhost:9000", True), ("http://[::1]:9000", True),
    ("http://127.1.2.3", True), ("https://s3.us-east-1.amazonaws.com", False), ("http://10.0.0.5:9000", False),
    (None, False),
])
def test_server_here_by_endpoint_host(url, here):
    assert s3(url).served_here is here
    assert LOCAL_DIR.served_here is False


def test_list_get_server_on_loopback_counts():
    assert parse_location("http://127.0.0.1:8080/data/").served_here
    assert not parse_location("http://files.example.com/data/").served_here


def test_half_the_cores_with_the_same_transfers_in_flight(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    got = sharing_cores(TransferOptions(), s3("http://127.0.0.1:7070"), LOCAL_DIR)
    assert (got.workers, got.concurrency, got.max_concurrency) == (2, 128, 0)
    # either side: an upload to a local gateway too
    up = sharing_cores(TransferOptions(), LOCAL_DIR, s3("http://localhost:9000"))
    assert (up.workers, up.concurrency) == (2, 128)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    two = sharing_cores(TransferOptions(), s3("http://127.0.0.1:7070"), LOCAL_DIR)
    assert (two.workers, two.concurrency) == (1, 128)


def test_what_the_user_asked_and_remote_servers_are_kept(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    here = s3("http://127.0.0.1:7070")
    asked_workers = TransferOptions(workers=3)
    assert sharing_cores(asked_workers, here, LOCAL_DIR) is asked_workers
    fixed = TransferOptions(concurrency=16, max_concurrency=16)  # what -c 16 builds
    got = sharing_cores(fixed, here, LOCAL_DIR)
    assert (got.workers, got.concurrency, got.max_concurrency) == (2, 16, 16)
    default = TransferOptions()
    assert sharing_cores(default, s3("https://s3.us-east-1.amazonaws.com"), LOCAL_DIR) is default
    assert sharing_cores(default, s3(None), s3(None)) is default
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert sharing_cores(default, here, LOCAL_DIR) is default


def test_a_run_from_a_server_on_loopback_starts_half_the_workers(listget_server, tmp_path, monkeypatch):
    """Through the one path every run takes (orchestrate.run): a copy from `s3bulk serve` on
    127.0.0.1 runs one worker on a 2-core machine; --workers as given is kept."""
    import s3bulk

    (tmp_path / "src").mkdir()
    for i in range(6):
        (tmp_path / "src" / f"f{i}").write_bytes(b"x" * i)
    url = listget_server(str(tmp_path / "src"), "--processes", "1") + "/"
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    auto = s3bulk.copy(url, str(tmp_path / "auto"), journal=None)
    assert auto.ok and auto.counters.done == 6 and auto.workers == 1
    asked = s3bulk.copy(url, str(tmp_path / "asked"), options=TransferOptions(workers=2), journal=None)
    assert asked.ok and asked.counters.done == 6 and asked.workers == 2
    assert sorted(os.listdir(tmp_path / "auto")) == sorted(os.listdir(tmp_path / "asked")) == [f"f{i}" for i in range(6)]
