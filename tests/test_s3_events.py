"""S3 change events as an SQS message body carries them (s3bulk/engine/watch/s3_events.py), on the
samples AWS documents: S3 event notifications (keys URL-encoded with "+" for spaces), EventBridge
events (keys as they are), either wrapped by SNS, the test event a new notification target gets;
what concerns no key of SRC is dropped, and what is no S3 event at all is said to be so."""

from __future__ import annotations

import json

import pytest

from s3bulk.config.filters import Filters
from s3bulk.engine.watch.feed import Change
from s3bulk.engine.watch.s3_events import Scope, newer, parse_body

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def s3_record(name: str, key: str, bucket: str = "amzn-s3-demo-bucket", **obj) -> dict:
    """One record as S3 writes it (the documented example, version 2.1)."""
    return {
        "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-west-2",
        "eventTime": "1970-01-01T00:00:00.000Z", "eventName": name,
        "userIdentity": {"principalId": "AIDAJDPLRKLG7UEXAMPLE"},
        "requestParameters": {"sourceIPAddress": "172.16.0.1"},
        "responseElements": {"x-amz-request-id": "C3D13FE58DE4C810",
                             "x-amz-id-2": "FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD"},
        "s3": {"s3SchemaVersion": "1.0", "configurationId": "testConfigRule",
               "bucket": {"name": bucket, "ownerIdentity": {"principalId": "A3NL1KOZZKExample"},
                          "arn": f"arn:aws:s3:::{bucket}"},
               "object": {"key": key, **obj}},
    }


CREATED = {"Records": [s3_record("ObjectCreated:Put", "photos/my+summer%2Bfun+%C3%BC.jpg", size=1024,
                                 eTag="d41d8cd98f00b204e9800998ecf8427e",
                                 versionId="096fKKXTRTtl3on89fVO.nfljtsv6qko", sequencer="0055AED6DCD90281E5")]}

EB_CREATED = {
    "version": "0", "id": "17793124-05d4-b198-2fde-7ededc63b103", "detail-type": "Object Created",
    "source": "aws.s3", "account": "111122223333", "time": "2021-11-12T00:00:00Z", "region": "ca-central-1",
    "resources": ["arn:aws:s3:::amzn-s3-demo-bucket"],
    "detail": {"version": "0", "bucket": {"name": "amzn-s3-demo-bucket"},
               "object": {"key": "photos/a+b%20c.jpg", "size": 5, "etag": "b1946ac92492d2347c6235b4d2611184",
                          "version-id": "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e", "sequencer": "617f08299329d189"},
               "request-id": "N4N7GDK58NMKJ12R", "requester": "123456789012",
               "source-ip-address": "1.2.3.4", "reason": "PutObject"},
}

EB_DELETED = {
    "version": "0", "id": "2ee9cc15-d022-99ea-1fb8-1b1bac4850f9", "detail-type": "Object Deleted",
    "source": "aws.s3", "account": "111122223333", "time": "2021-11-12T00:00:00Z", "region": "ca-central-1",
    "resources": ["arn:aws:s3:::amzn-s3-demo-bucket"],
    "detail": {"version": "0", "bucket": {"name": "amzn-s3-demo-bucket"},
               "object": {"key": "photos/example-key", "etag": "d41d8cd98f00b204e9800998ecf8427e",
                          "version-id": "1QW9g1Z99LUNbvaaYVpW9xDlOLU.qxgF", "sequencer": "617f0837b476e463"},
               "request-id": "0BH729840619AG5K", "requester": "123456789012", "source-ip-address": "1.2.3.4",
               "reason": "DeleteObject", "deletion-type": "Delete Marker Created"},
}

TEST_EVENT = {"Service": "Amazon S3", "Event": "s3:TestEvent", "Time": "2014-10-13T15:57:02.089Z",
              "Bucket": "amzn-s3-demo-bucket", "RequestId": "5582815E1AEA5ADF",
              "HostId": "8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE"}


def sns(message: dict) -> str:
    """The envelope SNS puts a message in, delivered to SQS without raw message delivery."""
    return json.dumps({
        "Type": "Notification", "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": "arn:aws:sns:us-west-2:123456789012:MyTopic", "Subject": "Amazon S3 Notification",
        "Message": json.dumps(message), "Timestamp": "2012-05-02T00:54:06.655Z", "SignatureVersion": "1",
        "Signature": "EXAMPLEw6JRN...", "SigningCertURL": "https://sns.us-west-2.amazonaws.com/cert.pem",
        "UnsubscribeURL": "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe",
    })


SCOPE = Scope.of("amzn-s3-demo-bucket", "photos", None)


def test_s3_notification_key_is_form_decoded_and_relative_to_the_prefix():
    parsed = parse_body(json.dumps(CREATED), SCOPE)
    assert parsed.understood and parsed.dropped == 0
    assert parsed.changes == [Change("my summer+fun ü.jpg", "put", sequencer="0055AED6DCD90281E5",
                                     etag="d41d8cd98f00b204e9800998ecf8427e",
                                     version_id="096fKKXTRTtl3on89fVO.nfljtsv6qko", size=1024)]


def test_s3_removals_and_lifecycle_expirations_are_deletes():
    body = {"Records": [
        s3_record("ObjectRemoved:Delete", "photos/a", sequencer="01"),
        s3_record("ObjectRemoved:DeleteMarkerCreated", "photos/b", versionId="dm1", sequencer="02"),
        s3_record("LifecycleExpiration:Delete", "photos/c", sequencer="03"),
        s3_record("LifecycleExpiration:DeleteMarkerCreated", "photos/d", sequencer="04"),
        s3_record("s3:ObjectCreated:CompleteMultipartUpload", "photos/e", size=7, sequencer="05"),  # MinIO's spelling
    ]}
    parsed = parse_body(json.dumps(body), SCOPE)
    assert [(c.key, c.kind) for c in parsed.changes] == [
        ("a", "delete"), ("b", "delete"), ("c", "delete"), ("d", "delete"), ("e", "put")]
    assert parsed.changes[1].version_id == "dm1" and parsed.changes[0].size is None


def test_what_concerns_no_key_of_src_is_dropped():
    scope = Scope.of("amzn-s3-demo-bucket", "photos/", Filters(((False, "*.tmp"),)))
    body = {"Records": [
        s3_record("ObjectCreated:Put", "photos/keep.jpg", sequencer="01"),
        s3_record("ObjectCreated:Put", "photos/part.tmp", sequencer="02"),       # excluded by the filters
        s3_record("ObjectCreated:Put", "photosynthesis/x", sequencer="03"),      # outside the prefix
        s3_record("ObjectCreated:Put", "photos/x", bucket="other", sequencer="04"),  # another bucket
        s3_record("ObjectTagging:Put", "photos/keep.jpg", sequencer="05"),       # changes nothing sync compares
        s3_record("ObjectCreated:Put", "photos/", sequencer="06"),               # the prefix's own marker
    ]}
    parsed = parse_body(json.dumps(body), scope)
    assert [c.key for c in parsed.changes] == ["keep.jpg"]
    assert parsed.dropped == 5 and parsed.understood


def test_eventbridge_keys_are_taken_as_they_are():
    created = parse_body(json.dumps(EB_CREATED), SCOPE)
    assert created.changes == [Change("a+b%20c.jpg", "put", sequencer="617f08299329d189",
                                      etag="b1946ac92492d2347c6235b4d2611184",
                                      version_id="IYV3p45BT0ac8hjHg1houSdS1a.Mro8e", size=5)]
    deleted = parse_body(json.dumps(EB_DELETED), SCOPE)
    assert [(c.key, c.kind, c.version_id) for c in deleted.changes] == [
        ("example-key", "delete", "1QW9g1Z99LUNbvaaYVpW9xDlOLU.qxgF")]
    tags = dict(EB_CREATED, **{"detail-type": "Object Tags Added"})
    assert parse_body(json.dumps(tags), SCOPE).changes == [] and parse_body(json.dumps(tags), SCOPE).dropped == 1


def test_sns_wrapped_events_and_the_test_event():
    assert parse_body(sns(CREATED), SCOPE).changes[0].key == "my summer+fun ü.jpg"
    assert parse_body(sns(EB_DELETED), SCOPE).changes[0].kind == "delete"
    for body in (json.dumps(TEST_EVENT), sns(TEST_EVENT)):
        parsed = parse_body(body, SCOPE)
        assert parsed.understood and parsed.test_event and parsed.changes == []


def test_what_is_no_s3_event_is_not_understood_and_never_raises():
    confirm = json.dumps({"Type": "SubscriptionConfirmation", "TopicArn": "arn:aws:sns:us-west-2:1:t",
                          "SubscribeURL": "https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription"})
    for body in ("hello", "", "[1, 2]", json.dumps({"Records": [{"eventName": "ObjectCreated:Put"}]}),
                 json.dumps({"detail-type": "Object Created", "source": "aws.ec2", "detail": {}}),
                 json.dumps({"Records": [s3_record("ObjectCreated:Put", "photos/%FF")]}),
                 "[" * 100000, confirm):
        parsed = parse_body(body, SCOPE)
        assert not parsed.understood and parsed.why and parsed.changes == []
    assert "confirm the subscription" in parse_body(confirm, SCOPE).why


def test_sequencers_compare_as_hex_numbers_of_equal_length():
    assert newer("10", "F")          # 0x10 > 0xF, though "10" < "F" as strings
    assert newer("0055AED6DCD90281E6", "55AED6DCD90281E5")
    assert newer("617f0837b476e463", "617F08299329D189")  # case-blind
    assert not newer("0A", "A") and not newer("A", "0A")   # equal
    assert not newer(None, "01") and not newer("01", None)
