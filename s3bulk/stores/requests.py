"""Requests a store sent, counted by operation and status class: what `--metrics` serves as
`s3bulk_requests_total` and the summary's `requests`.

Counting must cost next to nothing on the hot path (a small object is a handful of requests), so a
store keeps one plain dict, `{(operation, status class): count}`, and each request adds one to it
where it is answered: the lean path in stores/s3/wire.py (`S3Wire._send`), botocore's through its
`response-received` event (stores/s3/store.py). The worker takes the dict's counts into its
aggregated counters at each quarter-second flush (`take`), so nothing crosses a process per request.

Operations are named by what they are to S3, in capitals, so one name covers both data paths:
LIST (ListObjectsV2), HEAD, GET, PUT, COPY (CopyObject), DELETE (DeleteObjects: up to 1,000 keys),
the multipart ones (CREATE_MULTIPART, UPLOAD_PART, UPLOAD_PART_COPY, COMPLETE_MULTIPART,
ABORT_MULTIPART, LIST_PARTS, LIST_UPLOADS) and the rarer HEAD_BUCKET, GET_TAGGING,
GET_ATTRIBUTES, LIST_VERSIONS. A status class is "2xx", "3xx", "4xx", "5xx", or "error" for a
request that got no answer (connection refused or dropped, timeout).
"""

from __future__ import annotations

import re

Counts = dict[tuple[str, str], int]

LIST, HEAD, GET, PUT, COPY, DELETE = "LIST", "HEAD", "GET", "PUT", "COPY", "DELETE"
CREATE_MULTIPART, UPLOAD_PART, UPLOAD_PART_COPY = "CREATE_MULTIPART", "UPLOAD_PART", "UPLOAD_PART_COPY"
COMPLETE_MULTIPART, ABORT_MULTIPART = "COMPLETE_MULTIPART", "ABORT_MULTIPART"
GET_ATTRIBUTES = "GET_ATTRIBUTES"
ERROR = "error"

STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx", ERROR)
STATUS_CLASS = {1: "2xx", 2: "2xx", 3: "3xx", 4: "4xx", 5: "5xx"}  # status // 100 -> class (a 1xx is never final)

# the lean path's own names for its requests (wire.py's `op`) -> the operation
WIRE_OPS = {
    "list": LIST, "head": HEAD, "get": GET, "put": PUT, "copy": COPY, "upload part": UPLOAD_PART,
    "check bucket": "HEAD_BUCKET", "get tagging": "GET_TAGGING", "get object attributes": "GET_ATTRIBUTES",
    "create multipart upload": CREATE_MULTIPART, "complete multipart upload": COMPLETE_MULTIPART,
    "abort multipart upload": ABORT_MULTIPART,
}

# botocore's operation names -> the operation
BOTOCORE_OPS = {
    "ListObjectsV2": LIST, "ListObjects": LIST, "HeadObject": HEAD, "GetObject": GET, "PutObject": PUT,
    "CopyObject": COPY, "DeleteObjects": DELETE, "DeleteObject": DELETE,
    "CreateMultipartUpload": CREATE_MULTIPART, "UploadPart": UPLOAD_PART, "UploadPartCopy": UPLOAD_PART_COPY,
    "CompleteMultipartUpload": COMPLETE_MULTIPART, "AbortMultipartUpload": ABORT_MULTIPART,
    "ListParts": "LIST_PARTS", "ListMultipartUploads": "LIST_UPLOADS", "HeadBucket": "HEAD_BUCKET",
    "GetObjectTagging": "GET_TAGGING", "GetObjectAttributes": "GET_ATTRIBUTES",
    "ListObjectVersions": "LIST_VERSIONS",
}


def status_class(status: int | None) -> str:
    """"2xx" ... "5xx" for an HTTP status, "error" for none (the request got no answer)."""
    if status is None:
        return ERROR
    return STATUS_CLASS.get(status // 100, ERROR)


def botocore_op(name: str) -> str:
    """The operation for a botocore operation name (one not in the table: its name in capitals,
    words joined by "_")."""
    op = BOTOCORE_OPS.get(name)
    if op is None:
        op = BOTOCORE_OPS[name] = re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()
    return op


def counted_by(store: object) -> Counts | None:
    """The counts `store` keeps (its `requests`), found through wrappers that do not forward them
    (a wrapper's `inner`); None for a store that counts nothing."""
    counted, inner = None, store
    while counted is None and inner is not None:
        counted, inner = getattr(inner, "requests", None), getattr(inner, "inner", None)
    return counted


def take(counts: Counts, into: Counts) -> None:
    """Add `counts` into `into` and empty it (in place: the store's senders keep their reference)."""
    if counts:
        for k, n in counts.items():
            into[k] = into.get(k, 0) + n
        counts.clear()


def merge(into: Counts, other: Counts) -> None:
    """Add `other` into `into`."""
    for k, n in other.items():
        into[k] = into.get(k, 0) + n


def by_operation(counts: Counts) -> dict[str, int]:
    """Requests per operation, whatever their status."""
    out: dict[str, int] = {}
    for (op, _), n in counts.items():
        out[op] = out.get(op, 0) + n
    return out


def counts_of(store: object) -> Counts | None:
    """The dict `store` counts its requests in, found through the wrappers around it (one that does
    not forward `requests` holds its store in `inner`); None for a store that sends none (local
    files, memory). Asked once per store, never per request."""
    counted, inner = None, store
    while counted is None and inner is not None:
        counted, inner = getattr(inner, "requests", None), getattr(inner, "inner", None)
    return counted
