"""S3 change events, as an SQS message body carries them, turned into `Change`s of SRC's keys.

Why a module of its own: the formats are AWS's, not ours, and each has traps worth testing on real
samples without a queue (tests/test_s3_events.py):

- S3 event notifications (a queue, or an SNS topic, as the bucket's notification target):
  `Records[]` with `eventName` "ObjectCreated:*" / "ObjectRemoved:*" (Delete and
  DeleteMarkerCreated) / "LifecycleExpiration:*", `s3.bucket.name`, and `s3.object.key`
  URL-encoded as an HTML form is (a space is "+", a "+" is "%2B"), `size`, `eTag`, `versionId`,
  `sequencer`. MinIO writes the same with "s3:" before the event name. A bucket whose notification
  target is set first sends one "s3:TestEvent": understood, and nothing changed.
- EventBridge (the bucket's events sent to EventBridge, a rule targeting the queue):
  `detail-type` "Object Created" / "Object Deleted", `detail.bucket.name`, `detail.object.key`
  (NOT URL-encoded), `size`, `etag`, `version-id`, `sequencer`.
- Either one wrapped by SNS (`Type` "Notification", the event as a JSON string in `Message`),
  unless the subscription delivers raw messages.

Other S3 events (tags, ACLs, restores, transitions, replication) are understood and change nothing
a sync compares, as are events of another bucket, keys outside SRC's prefix and keys the filters
exclude: the feed acknowledges their messages at once. A body that is none of these is "not
understood" (`Parsed.understood` False): the feed leaves such a message in the queue, for a
dead-letter queue or whoever else reads it, and says so once.

`sequencer` is S3's per-key order of events: hex strings of varying length, compared after
left-padding to equal length (`sequencer_order`). It orders the events of one key only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote_plus

from ...config.filters import CompiledFilters, Filters
from .feed import Change

__all__ = ["Scope", "Parsed", "parse_body", "sequencer_order", "newer"]

Kind = Literal["put", "delete"]


@dataclass(frozen=True, slots=True)
class Scope:
    """Which events concern SRC: its bucket, its prefix ("" or ending in "/", as sync reads SRC)
    and the run's --include/--exclude filters (matched against the key relative to the prefix)."""

    bucket: str
    prefix: str = ""
    filters: CompiledFilters | None = None

    @classmethod
    def of(cls, bucket: str, prefix: str, filters: Filters | CompiledFilters | None) -> "Scope":
        if prefix and not prefix.endswith("/"):
            prefix += "/"  # sync treats s3://b/dir as dir/ (engine/planner.py)
        if isinstance(filters, Filters):
            filters = filters.compiled() if filters else None
        return cls(bucket, prefix, filters)

    def relative(self, bucket: str, key: str) -> str | None:
        """The key relative to SRC's root, or None when the event is not SRC's to act on."""
        if bucket != self.bucket or not key.startswith(self.prefix):
            return None
        rel = key[len(self.prefix):]
        if not rel:  # the prefix's own folder marker is not a key under it
            return None
        if self.filters is not None and not self.filters.allows(rel):
            return None
        return rel


@dataclass(slots=True)
class Parsed:
    """What one message body said: the changes of SRC's keys it reports (token unset), how many
    events it held that are not SRC's concern (`dropped`), and whether it was understood at all
    (`why` says what it was instead, for a one-line notice)."""

    changes: list[Change] = field(default_factory=list)
    dropped: int = 0
    test_event: bool = False
    understood: bool = True
    why: str = ""


def parse_body(body: str | bytes, scope: Scope) -> Parsed:
    """The changes of SRC's keys one SQS message body reports; never raises."""
    try:
        doc = json.loads(body)
    except (ValueError, TypeError, RecursionError):
        return _not_understood("not JSON")
    if isinstance(doc, dict) and doc.get("Type") in ("Notification", "SubscriptionConfirmation",
                                                      "UnsubscribeConfirmation") and "TopicArn" in doc:
        if doc.get("Type") != "Notification":
            return _not_understood(f"an SNS {doc.get('Type')} (confirm the subscription of the queue to the topic)")
        inner = doc.get("Message")
        if not isinstance(inner, str):
            return _not_understood("an SNS notification without a message")
        try:
            doc = json.loads(inner)
        except (ValueError, RecursionError):
            return _not_understood("an SNS notification whose message is not JSON")
    if not isinstance(doc, dict):
        return _not_understood("not a JSON object")
    if doc.get("Event") == "s3:TestEvent":
        return Parsed(test_event=True)
    if isinstance(doc.get("Records"), list):
        return _records(doc["Records"], scope)
    if doc.get("source") == "aws.s3" and isinstance(doc.get("detail"), dict):
        return _eventbridge(doc, scope)
    return _not_understood("neither an S3 event notification nor an EventBridge S3 event")


def _not_understood(why: str) -> Parsed:
    return Parsed(understood=False, why=why)


_PUT_EVENTS = ("ObjectCreated:",)
_DELETE_EVENTS = ("ObjectRemoved:", "LifecycleExpiration:Delete")  # ...:Delete and ...:DeleteMarkerCreated


def _records(records: list[Any], scope: Scope) -> Parsed:
    out = Parsed()
    for rec in records:
        try:
            name = str(rec["eventName"])
            s3 = rec["s3"]
            bucket = str(s3["bucket"]["name"])
            obj = s3["object"]
            raw_key = obj["key"]
        except (KeyError, TypeError):
            return _not_understood("an S3 event record without eventName, bucket or key")
        if name.startswith("s3:"):  # MinIO's spelling
            name = name[3:]
        kind: Kind | None = ("put" if name.startswith(_PUT_EVENTS)
                             else "delete" if name.startswith(_DELETE_EVENTS) else None)
        try:
            key = unquote_plus(str(raw_key), errors="strict")
        except UnicodeDecodeError:
            return _not_understood(f"an S3 event whose key {raw_key!r} is not URL-encoded UTF-8")
        rel = scope.relative(bucket, key) if kind is not None else None
        if kind is None or rel is None:
            out.dropped += 1
            continue
        out.changes.append(Change(rel, kind, sequencer=_text(obj.get("sequencer")), etag=_etag(obj.get("eTag")),
                                  version_id=_text(obj.get("versionId")),
                                  size=_size(obj.get("size")) if kind == "put" else None))
    return out


def _eventbridge(doc: dict[str, Any], scope: Scope) -> Parsed:
    detail = doc["detail"]
    try:
        bucket = str(detail["bucket"]["name"])
        obj = detail["object"]
        key = obj["key"]
    except (KeyError, TypeError):
        return _not_understood("an EventBridge S3 event without bucket or key")
    if not isinstance(key, str):
        return _not_understood("an EventBridge S3 event whose key is not a string")
    detail_type = doc.get("detail-type")
    kind: Kind | None = ("put" if detail_type == "Object Created"
                         else "delete" if detail_type == "Object Deleted" else None)
    rel = scope.relative(bucket, key) if kind is not None else None
    if kind is None or rel is None:
        return Parsed(dropped=1)
    return Parsed(changes=[Change(rel, kind, sequencer=_text(obj.get("sequencer")), etag=_etag(obj.get("etag")),
                                  version_id=_text(obj.get("version-id")),
                                  size=_size(obj.get("size")) if kind == "put" else None)])


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _etag(value: Any) -> str | None:
    text = _text(value)
    return text.strip('"') if text else None  # the listing's ETags are unquoted (model.ObjectInfo)


def _size(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def sequencer_order(sequencer: str | None, width: int) -> str:
    """A sequencer as a string that sorts in S3's order among sequencers of `width` digits or fewer
    (hex, left-padded with zeros; S3 writes them in upper case, compared case-blind)."""
    return (sequencer or "").upper().rjust(width, "0")


def newer(a: str | None, b: str | None) -> bool:
    """Whether sequencer `a` is strictly after `b` (events of the same key). An event without one
    is never newer, and nothing is newer than it: it cannot be ordered."""
    if a is None or b is None:
        return False
    width = max(len(a), len(b))
    return sequencer_order(a, width) > sequencer_order(b, width)
