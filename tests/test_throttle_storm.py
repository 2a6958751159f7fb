"""Throttling backoff outlasts a storm (issue 33, item 7).

A SlowDown storm of 10 s (503 on half the requests) used to fail an object after its 5 retries in
about 4 s: throttling answers used up `--retries` like any failure. Now they are retried on their
own count, with exponential backoff capped at 20 s and full jitter, for as long as
`--retry-max-time` allows (stores/resilient.py), while any other failure still fails after its
retries, and a storm that never ends fails with one line once `--retry-max-time` is spent.

Storms are made by tests/faultproxy.py in front of LocalStack, counted in requests rather than
seconds (deterministic, no clock): a rule answers 503 SlowDown to the first K requests of a kind
(or every other one of them), then lets everything through."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Callable

import pytest

from faultproxy import s3_error

from s3bulk.config.urls import S3Options, parse_location
from s3bulk.errors import StoreError, Throttled, Transient
from s3bulk.stores import StoreOptions, open_store
from s3bulk.stores.resilient import ResilienceOptions

PATHS = ["lean", "botocore"]
SLOWDOWN = s3_error(503, "Slow Down", "SlowDown", "Please reduce your request rate.", keep_alive=True)


def storm(first: int, every: int = 1, method: str = "PUT",
          per_target: bool = False) -> Callable[[str, str, dict[str, str]], bytes | None]:
    """A faultproxy rule: of the first `first` requests with `method` (each target counted alone
    with per_target), every `every`-th one (1: all) is answered 503 SlowDown; `.throttled` counts them."""
    seen: dict[str, int] = {}

    def rule(method_: str, target: str, headers: dict[str, str]) -> bytes | None:
        if method_ != method:
            return None
        key = target if per_target else ""
        n = seen[key] = seen.get(key, 0) + 1
        if n > first or (n - 1) % every:
            return None
        rule.throttled += 1  # type: ignore[attr-defined]
        return SLOWDOWN

    rule.throttled = 0  # type: ignore[attr-defined]
    return rule


def always(answer: bytes, method: str = "PUT") -> Callable[[str, str, dict[str, str]], bytes | None]:
    def rule(method_: str, target: str, headers: dict[str, str]) -> bytes | None:
        if method_ != method:
            return None
        rule.count += 1  # type: ignore[attr-defined]
        return answer
    rule.count = 0  # type: ignore[attr-defined]
    return rule


def _store_options(data_path: str, **resilience) -> StoreOptions:
    # fast backoff for these in-process runs: the count of retries is what is tested, not their pace
    return StoreOptions(lean=data_path == "lean",
                        resilience=ResilienceOptions(backoff_base=0.005, backoff_cap=0.05, **resilience))


async def _put_all(url: str, bucket: str, objects: dict[str, bytes], options: StoreOptions) -> None:
    store = await open_store(parse_location(f"s3://{bucket}/", S3Options(endpoint_url=url)), options)
    try:
        for key, body in objects.items():  # one after another: the first meets the whole storm
            await store.put(key, body)  # type: ignore[attr-defined]
    finally:
        await store.close()


@pytest.mark.parametrize("data_path", PATHS)
def test_a_storm_longer_than_the_retries_is_ridden_out(data_path, make_fault_proxy, endpoint, s3,
                                                       bucket):
    """30 SlowDowns in a row to the first PUT, with --retries 5: it lands on its 31st attempt, and
    the objects after it too. Before: it failed on its 6th."""
    rule = storm(30)
    proxy = make_fault_proxy(endpoint, [rule])
    objects = {f"o{i}": os.urandom(1000 + i) for i in range(3)}
    asyncio.run(_put_all(proxy.url, bucket, objects, _store_options(data_path, retries=5)))
    assert rule.throttled == 30
    for key, body in objects.items():
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == body


@pytest.mark.parametrize("data_path", PATHS)
def test_a_failure_that_is_no_throttle_still_fails_after_its_retries(data_path, make_fault_proxy, endpoint,
                                                                     bucket):
    rule = always(s3_error(500, "Internal Server Error", "InternalError", "try again", keep_alive=True))
    proxy = make_fault_proxy(endpoint, [rule])
    with pytest.raises(Transient):
        asyncio.run(_put_all(proxy.url, bucket, {"k": b"x"}, _store_options(data_path, retries=5)))
    assert rule.count == 6  # the first attempt and its 5 retries


@pytest.mark.parametrize("data_path", PATHS)
def test_a_storm_that_never_ends_stops_at_the_retry_max_time(data_path, make_fault_proxy, endpoint,
                                                             bucket):
    rule = always(SLOWDOWN)
    proxy = make_fault_proxy(endpoint, [rule])
    began = time.monotonic()
    with pytest.raises(Throttled) as caught:
        asyncio.run(_put_all(proxy.url, bucket, {"k": b"x"}, _store_options(data_path, retries=5,
                                                                             retry_max_time=2.0)))
    assert time.monotonic() - began < 30
    assert "--retry-max-time 2" in str(caught.value)
    assert rule.count > 6  # beyond --retries: throttles count on their own


def test_retries_0_retries_no_throttle(make_fault_proxy, endpoint, bucket):
    rule = always(SLOWDOWN)
    proxy = make_fault_proxy(endpoint, [rule])
    with pytest.raises(StoreError):
        asyncio.run(_put_all(proxy.url, bucket, {"k": b"x"}, _store_options("lean", retries=0)))
    assert rule.count == 1


@pytest.mark.parametrize("data_path", PATHS)
def test_a_copy_through_a_storm_ends_right(data_path, cli, make_fault_proxy, endpoint, s3, bucket, tmp_path):
    """The command line with its default backoff: each object's PUT is throttled 6 times (one more
    than --retries 5 allowed before), and half of the first 40 requests of every kind are throttled
    too; every object lands, exit 0."""
    src = tmp_path / "src"
    src.mkdir()
    objects = {f"f{i:02d}": os.urandom(2000 + i) for i in range(8)}
    for name, body in objects.items():
        (src / name).write_bytes(body)
    per_object = storm(6, per_target=True)
    half = storm(40, every=2, method="GET")
    proxy = make_fault_proxy(endpoint, [per_object, half])
    run = cli("copy", str(src), f"s3://{bucket}/", "--json", "--retries", "5", "--endpoint-url", proxy.url,
              env={"S3BULK_DATA_PATH": data_path}, timeout=300)
    assert run.code == 0, run
    assert per_object.throttled == 6 * len(objects)
    assert run.summary["throttled"] >= 6 * len(objects), run.summary
    for name, body in objects.items():
        assert s3.get_object(Bucket=bucket, Key=name)["Body"].read() == body


@pytest.mark.parametrize("data_path", PATHS)
def test_a_permanent_storm_fails_in_one_line_within_the_retry_max_time(data_path, cli, make_fault_proxy, endpoint,
                                                                       bucket, tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 1000)
    proxy = make_fault_proxy(endpoint, [always(SLOWDOWN)])
    began = time.monotonic()
    run = cli("copy", str(tmp_path / "f"), f"s3://{bucket}/f", "--retry-max-time", "3", "--endpoint-url", proxy.url,
              env={"S3BULK_DATA_PATH": data_path}, timeout=120)
    assert run.code == 1, run
    assert time.monotonic() - began < 60
    lines = [x for x in run.err.splitlines() if "ERROR" in x]
    assert len(lines) == 1 and "SlowDown" in lines[0] and "--retry-max-time 3" in lines[0], run.err
    assert "Traceback" not in run.err
