"""The SQS change feed of an S3 SRC (s3bulk/engine/watch/queue_feed.py) against LocalStack's S3 and
SQS: a bucket whose notifications go to a queue, and messages sent to the queue by hand (EventBridge's
format, SNS-wrapped, duplicated, reordered, for another bucket, not S3 events at all). What a user
relies on: the right changes come out, newest per key; a message goes only after its changes are
acked (depth back to 0); the ones not acked come back after their visibility timeout when the
watcher dies, and not while it lives."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from s3bulk.config.filters import Filters
from s3bulk.config.urls import S3Options
from s3bulk.engine.events import Notice, Subscriber
from s3bulk.engine.watch.feed import Change
from s3bulk.engine.watch.queue_feed import QueueFeed
from s3bulk.errors import NotFound, UsageError

from test_s3_events import EB_CREATED, s3_record, sns


@pytest.fixture(scope="session")
def sqs(endpoint):
    import botocore.session

    return botocore.session.get_session().create_client("sqs", endpoint_url=endpoint, region_name="us-east-1")


@pytest.fixture
def queue(sqs) -> str:
    url = sqs.create_queue(QueueName=f"t-{uuid.uuid4().hex[:20]}")["QueueUrl"]
    yield url
    sqs.delete_queue(QueueUrl=url)


def counts(sqs, url: str) -> tuple[int, int]:
    """(messages waiting, messages received and not deleted) as the queue says."""
    a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return int(a["ApproximateNumberOfMessages"]), int(a["ApproximateNumberOfMessagesNotVisible"])


async def until(condition, what: str, deadline: float = 30.0):
    """Wait for `condition()` (sync or async) to hold, checking every 0.1 s; fail after `deadline`."""
    end = time.monotonic() + deadline
    while True:
        got = condition()
        if asyncio.iscoroutine(got):
            got = await got
        if got:
            return got
        if time.monotonic() > end:
            pytest.fail(f"not within {deadline:.0f} s: {what}")
        await asyncio.sleep(0.1)


async def drain(feed: QueueFeed, want, max_changes: int = 100, deadline: float = 30.0) -> list[Change]:
    """Batches from the feed until `want(changes so far)` holds."""
    got: list[Change] = []
    end = time.monotonic() + deadline
    while not want(got):
        if time.monotonic() > end:
            pytest.fail(f"the feed did not yield what was expected; it yielded {got}")
        got += await feed.next_batch(max_changes, 1.0)
    return got


def opts(endpoint: str) -> S3Options:
    return S3Options(endpoint_url=endpoint)


def send(sqs, url: str, *bodies) -> None:
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body if isinstance(body, str) else json.dumps(body))


def test_bucket_notifications_become_changes_and_acks_empty_the_queue(endpoint, s3, sqs, bucket, queue):
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration={"QueueConfigurations": [
        {"QueueArn": arn, "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]}]})

    async def main() -> None:
        feed = await QueueFeed.open(queue, f"s3://{bucket}/data", Filters(((False, "*.tmp"),)), opts(endpoint))
        try:
            # one S3 request after another, each event received before the next request: LocalStack
            # writes the same sequencer into every event and sends them from several threads, so
            # nothing could order events of one key sent together (S3 orders them by sequencer:
            # test_newest_per_key_duplicates_and_messages_acked_whole)
            got: list[Change] = []

            async def step(request, key: str | None) -> Change | None:
                request()
                if key is None:
                    return None
                new = await drain(feed, lambda new: any(c.key == key for c in new))
                got.extend(new)
                return [c for c in new if c.key == key][-1]

            a1 = await step(lambda: s3.put_object(Bucket=bucket, Key="data/a", Body=b"1"), "a")
            a2 = await step(lambda: s3.put_object(Bucket=bucket, Key="data/a", Body=b"22"), "a")  # overwritten
            b1 = await step(lambda: s3.put_object(Bucket=bucket, Key="data/b b+c/ü", Body=b"3"), "b b+c/ü")
            b2 = await step(lambda: s3.delete_object(Bucket=bucket, Key="data/b b+c/ü"), "b b+c/ü")
            await step(lambda: s3.put_object(Bucket=bucket, Key="data/x.tmp", Body=b"4"), None)   # excluded
            await step(lambda: s3.put_object(Bucket=bucket, Key="elsewhere/a", Body=b"5"), None)  # outside SRC
            z = await step(lambda: s3.put_object(Bucket=bucket, Key="data/z", Body=b"66"), "z")
            assert {c.key for c in got} == {"a", "b b+c/ü", "z"}  # nothing of x.tmp or elsewhere/
            assert (a1.kind, a1.size, a2.kind, a2.size) == ("put", 1, "put", 2)
            assert (b1.kind, b2.kind) == ("put", "delete")
            assert z.etag == s3.head_object(Bucket=bucket, Key="data/z")["ETag"].strip('"')
            assert feed.in_hand == 5  # the messages of SRC's changes are not deleted before their acks

            await feed.ack(got)
            assert feed.in_hand == 0

            async def empty() -> bool:  # receiving what is left (the events of x.tmp and elsewhere/ may be late)
                assert await feed.next_batch(100, 0) == []
                return counts(sqs, queue) == (0, 0)

            await until(empty, "the queue empty after the acks")
            assert await feed.depth() == 0
        finally:
            await feed.aclose()

    asyncio.run(main())


def test_newest_per_key_duplicates_and_messages_acked_whole(endpoint, sqs, queue):
    scope_bucket = "watched"
    b = "photos/"

    def put(key: str, seq: str, name: str = "ObjectCreated:Put") -> dict:
        return {"Records": [s3_record(name, b + key, bucket=scope_bucket, size=1, sequencer=seq)]}

    eb = json.loads(json.dumps(EB_CREATED))
    eb["detail"]["bucket"]["name"] = scope_bucket
    eb["detail"]["object"]["key"] = "photos/eb key+1"  # EventBridge: the key as it is
    notices: list[str] = []

    class Notices(Subscriber):
        def on_notice(self, event: Notice) -> None:
            notices.append(event.message)

    async def main() -> None:
        feed = await QueueFeed.open(queue, f"s3://{scope_bucket}/photos/", None, opts(endpoint),
                                    events=Notices())
        try:
            send(sqs, queue,
                 put("k1", "00A"), put("k1", "00A"),                       # the same event twice
                 put("k3", "0100"), put("k3", "0FF", "ObjectRemoved:Delete"),  # the newer first
                 sns(put("k2", "01")), eb,
                 {"Records": [s3_record("ObjectCreated:Put", "photos/k9", bucket="other", sequencer="01")]},
                 "hello, not an S3 event")
            two = {"Records": [s3_record("ObjectCreated:Put", b + "m1", bucket=scope_bucket, sequencer="01"),
                               s3_record("ObjectCreated:Put", b + "m2", bucket=scope_bucket, sequencer="01")]}
            send(sqs, queue, two)

            got = await drain(feed, lambda got: {c.key for c in got} >= {"k1", "k2", "k3", "eb key+1", "m1", "m2"})
            by_key: dict[str, list[Change]] = {}
            for c in got:
                by_key.setdefault(c.key, []).append(c)
            assert "k9" not in by_key
            assert [(c.kind, c.sequencer) for c in by_key["k3"]] == [("put", "0100")]  # never the older delete
            assert by_key["eb key+1"][0].version_id == "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e"
            assert len(notices) == 1 and "left in the queue" in notices[0] and "\n" not in notices[0]

            # a message of two changes is deleted once both landed, not before
            await feed.ack([c for c in got if c.key != "m2"])
            m2 = [c for c in got if c.key == "m2"]
            await until(lambda: counts(sqs, queue) == (0, 2), "only the two-change message and the foreign one left")
            assert feed.in_hand == 1
            await feed.ack(m2)
            await feed.ack(m2)  # acked twice: harmless
            await until(lambda: counts(sqs, queue) == (0, 1), "only the message that is no S3 event left (hidden)")
            assert feed.in_hand == 0
        finally:
            await feed.aclose()
        assert counts(sqs, queue) == (0, 1)  # closing does not bring back what is no S3 event

    asyncio.run(main())


def test_the_feed_holds_what_it_was_asked_for_plus_one_receive(endpoint, sqs, queue):
    async def main() -> None:
        feed = await QueueFeed.open(queue, "s3://bkt/", None, opts(endpoint))
        try:
            for i in range(0, 40, 10):
                sqs.send_message_batch(QueueUrl=queue, Entries=[
                    {"Id": str(j), "MessageBody": json.dumps({"Records": [
                        s3_record("ObjectCreated:Put", f"k{i + j:03}", bucket="bkt", sequencer="01")]})}
                    for j in range(10)])
            seen: set[str] = set()
            while len(seen) < 40:
                batch = await feed.next_batch(7, 1.0)
                assert len(batch) <= 7
                assert feed.in_hand <= 7 + 10
                seen.update(c.key for c in batch)
                await feed.ack(batch)
            await until(lambda: counts(sqs, queue) == (0, 0), "every message deleted")
        finally:
            await feed.aclose()

    asyncio.run(main())


CHILD = """
import asyncio, json, sys
from s3bulk.config.urls import S3Options
from s3bulk.engine.watch.queue_feed import QueueFeed

async def main():
    feed = await QueueFeed.open(sys.argv[1], "s3://bkt/", None, S3Options(endpoint_url=sys.argv[2]),
                                visibility_timeout=2)
    got = []
    while not got:
        got = await feed.next_batch(10, 1.0)
    print(json.dumps([c.key for c in got]), flush=True)
    await asyncio.sleep(3600)  # holding the change, never acking it, until killed

asyncio.run(main())
"""


def test_unacked_changes_come_back_after_a_kill_and_not_while_held(endpoint, sqs, queue):
    send(sqs, queue, {"Records": [s3_record("ObjectCreated:Put", "lost", bucket="bkt", sequencer="01")]})
    child = subprocess.Popen([sys.executable, "-c", CHILD, queue, endpoint], stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(child.stdout.readline()) == ["lost"]
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()

    async def main() -> None:
        feed = await QueueFeed.open(queue, "s3://bkt/", None, opts(endpoint), visibility_timeout=2)
        try:
            # back after the dead watcher's visibility timeout
            got = await drain(feed, lambda got: len(got) > 0)
            assert [c.key for c in got] == ["lost"]
            # held by a live feed: kept invisible past several timeouts
            await until(lambda: feed.extensions >= 3, "the feed extending the visibility of what it holds")
            assert sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=0, VisibilityTimeout=0).get("Messages") is None
            assert counts(sqs, queue) == (0, 1)
        finally:
            await feed.aclose()

    asyncio.run(main())


def test_closing_the_feed_makes_what_was_not_acked_visible_at_once(endpoint, sqs, queue):
    send(sqs, queue, *({"Records": [s3_record("ObjectCreated:Put", k, bucket="bkt", sequencer="01")]}
                       for k in ("acked", "not acked")))

    async def main() -> None:
        feed = await QueueFeed.open(queue, "s3://bkt/", None, opts(endpoint), visibility_timeout=600)
        try:
            got = await drain(feed, lambda got: len(got) == 2)
            await feed.ack([c for c in got if c.key == "acked"])
        finally:
            await feed.aclose()
        # not in 600 s: at once, for the next start
        await until(lambda: counts(sqs, queue) == (1, 0), "the change not acked visible again after aclose")

    asyncio.run(main())


def test_a_released_change_is_handed_out_again(endpoint, sqs, queue):
    send(sqs, queue, {"Records": [s3_record("ObjectCreated:Put", "failed once", bucket="bkt", sequencer="01")]})

    async def main() -> None:
        feed = await QueueFeed.open(queue, "s3://bkt/", None, opts(endpoint), visibility_timeout=600)
        try:
            first = await drain(feed, lambda got: len(got) == 1)
            await feed.release(first)
            again = await drain(feed, lambda got: len(got) == 1)
            assert [c.key for c in again] == ["failed once"]
            await feed.ack(first)  # the released token acks nothing
            assert feed.in_hand == 1
            await feed.ack(again)
            await until(lambda: counts(sqs, queue) == (0, 0), "the queue empty")
        finally:
            await feed.aclose()

    asyncio.run(main())


def test_a_queue_that_cannot_be_used_is_one_line(endpoint, queue):
    async def open_(url: str, src: str = "s3://bkt/") -> QueueFeed:
        return await QueueFeed.open(url, src, None, opts(endpoint))

    with pytest.raises(NotFound) as missing:
        asyncio.run(open_(queue + "-nope"))
    assert "queue does not exist" in str(missing.value) and "\n" not in str(missing.value)
    with pytest.raises(UsageError, match="not an SQS queue URL"):
        asyncio.run(open_("my-queue"))
    with pytest.raises(UsageError, match="needs an S3 source"):
        asyncio.run(open_(queue, "/tmp/somewhere"))


@pytest.mark.unit
@pytest.mark.parametrize("url, options, env, expected", [
    # a queue on AWS: S3's --endpoint-url (here a VPC endpoint of S3) does not move it
    ("https://sqs.eu-west-1.amazonaws.com/123456789012/q", S3Options(endpoint_url="https://bucket.vpce-1.s3.eu-west-1.vpce.amazonaws.com"),
     {}, (None, "eu-west-1")),
    # ...what is configured for SQS does
    ("https://sqs.eu-west-1.amazonaws.com/123456789012/q", S3Options(),
     {"AWS_ENDPOINT_URL_SQS": "https://vpce-2.sqs.eu-west-1.vpce.amazonaws.com"},
     ("https://vpce-2.sqs.eu-west-1.vpce.amazonaws.com", "eu-west-1")),
    # a queue elsewhere is on the bucket's endpoint when one is given, its region in its path
    ("http://localstack:4566/queue/eu-central-1/000000000000/q", S3Options(endpoint_url="http://127.0.0.1:4566"),
     {}, ("http://127.0.0.1:4566", "eu-central-1")),
    # ...else where its URL says, and an endpoint configured for S3 only does not count
    ("http://127.0.0.1:9324/000000000000/q", S3Options(region="ap-south-1"),
     {"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000"}, ("http://127.0.0.1:9324", "ap-south-1")),
    ("http://127.0.0.1:9324/000000000000/q", S3Options(), {"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"},
     ("http://127.0.0.1:4566", "us-east-1")),
])
def test_where_the_queue_requests_go(monkeypatch, url, options, env, expected):
    from s3bulk.stores.s3.queue import sqs_address

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert sqs_address(url, options) == expected


@pytest.mark.unit
def test_a_queue_arn_names_its_url():
    from s3bulk.stores.s3.queue import queue_url_from

    assert queue_url_from("arn:aws:sqs:eu-west-1:123456789012:my-queue") == \
        "https://sqs.eu-west-1.amazonaws.com/123456789012/my-queue"
