"""Part sizes and parts in flight follow the link, and an explicit --part-size is used as given.

Requests are seen by a real proxy in front of LocalStack (tests/faultproxy.py, which forwards
everything unchanged and counts what passes); the slow link is toxiproxy (tests/toxiproxy.py)
between that proxy and LocalStack, giving each connection a fixed bandwidth. What is checked is
what the server side sees (the ranges asked for, the requests in flight at once), never a time."""

from __future__ import annotations

import os
import uuid

import pytest

from conftest import read_tree, write_tree
from toxiproxy import started

MiB = 1024 * 1024
RATE = 2048  # KB/s a connection each way: a 24 MiB object over one connection would take ~12 s


@pytest.fixture(scope="module")
def toxiproxy(tmp_path_factory):
    server = started(tmp_path_factory)
    yield server
    server.stop()


def ranges_of(seen: list[tuple[str, str, str | None]], key: str) -> list[str]:
    """The Range headers of the GETs of one object the proxy forwarded."""
    return [rng for method, target, rng in seen
            if method == "GET" and target.split("?")[0].endswith(f"/{key}") and rng is not None]


def recorder(seen: list[tuple[str, str, str | None]]):
    """A faultproxy rule that answers nothing itself and notes each request (method, target, Range)."""
    def rule(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        seen.append((method, target, headers.get("range")))
        return None
    return rule


def test_an_explicit_part_size_is_used_as_given(cli, s3, bucket, endpoint, make_fault_proxy, tmp_path):
    """--part-size 8MiB on a 24 MiB download reads three 8 MiB ranges (it used to read one 32 MiB
    range, the default for downloads written as they arrive, when the size given equalled the default)."""
    body = os.urandom(24 * MiB)
    s3.put_object(Bucket=bucket, Key="mid.bin", Body=body)
    seen: list[tuple[str, str, str | None]] = []
    proxy = make_fault_proxy(endpoint, [recorder(seen)])
    run = cli("copy", f"s3://{bucket}/mid.bin", str(tmp_path / "mid.bin"), "--json", "-w", "1",
              "--part-size", "8MiB", "--endpoint-url", proxy.url)
    assert run.code == 0, run
    assert (tmp_path / "mid.bin").read_bytes() == body
    assert sorted(ranges_of(seen, "mid.bin")) == sorted(
        f"bytes={start}-{start + 8 * MiB - 1}" for start in range(0, 24 * MiB, 8 * MiB))


def test_a_mid_size_object_on_a_slow_link_moves_over_several_connections(toxiproxy, cli, s3, bucket, endpoint,
                                                                         make_fault_proxy, tmp_path):
    """With default options, a 24 MiB object through a link of 2 MB/s a connection is read in many
    ranges, several at once, and uploaded in several parts at once (before: one 32 MiB range, and
    three 8 MiB parts)."""
    name = f"link-{uuid.uuid4().hex[:8]}"
    slow = toxiproxy.proxy(name, endpoint)
    for stream in ("downstream", "upstream"):
        toxiproxy.toxic(name, "bandwidth", stream, rate=RATE)
    seen: list[tuple[str, str, str | None]] = []
    proxy = make_fault_proxy(slow, [recorder(seen)])
    tree = {"mid.bin": os.urandom(24 * MiB)}
    write_tree(tmp_path / "src", tree)

    up = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/", "--json", "-w", "1", "--endpoint-url", proxy.url)
    assert up.code == 0, up
    assert s3.get_object(Bucket=bucket, Key="mid.bin")["Body"].read() == tree["mid.bin"]
    parts = [t for m, t, _ in seen if m == "PUT" and "partNumber=" in t]
    assert len(parts) >= 4, parts
    assert proxy.max_in_flight >= 4, proxy.max_in_flight

    # one PUT: no parts of its own to read it by (a multipart object is read by its parts, each checked)
    s3.put_object(Bucket=bucket, Key="whole/mid.bin", Body=tree["mid.bin"])
    seen.clear()
    proxy.reset_counts()
    down = cli("copy", f"s3://{bucket}/whole/", str(tmp_path / "dst"), "--json", "-w", "1",
               "--endpoint-url", proxy.url)
    assert down.code == 0, down
    assert read_tree(tmp_path / "dst") == tree
    assert len(ranges_of(seen, "mid.bin")) >= 8, seen
    assert proxy.max_in_flight >= 4, proxy.max_in_flight
