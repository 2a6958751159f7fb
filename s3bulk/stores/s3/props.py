"""ObjectProps as S3 sends and takes them: request headers for the lean path (wire.py), request
parameters for botocore, and back from a HEAD/GET answer of either.

Kept apart from store.py so both data paths map the same fields the same way, in one place.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import datetime
from typing import Any, Mapping

from ...http.dates import http_datetime
from ...model import ObjectProps
from ..file_times import MTIME_KEY, format_mtime

# ObjectProps field -> (HTTP header, botocore parameter)
_FIELDS = (
    ("content_type", "content-type", "ContentType"),
    ("cache_control", "cache-control", "CacheControl"),
    ("content_disposition", "content-disposition", "ContentDisposition"),
    ("content_encoding", "content-encoding", "ContentEncoding"),
    ("content_language", "content-language", "ContentLanguage"),
    ("expires", "expires", "Expires"),
    ("tagging", "x-amz-tagging", "Tagging"),
    ("storage_class", "x-amz-storage-class", "StorageClass"),
    ("acl", "x-amz-acl", "ACL"),
    ("sse", "x-amz-server-side-encryption", "ServerSideEncryption"),
    ("sse_kms_key_id", "x-amz-server-side-encryption-aws-kms-key-id", "SSEKMSKeyId"),
    ("request_payer", "x-amz-request-payer", "RequestPayer"),
)
# what a copy with the COPY directive may still set (not metadata): sent with a plain CopyObject
_WRITE_ONLY = ("storage_class", "acl", "sse", "sse_kms_key_id", "request_payer")
_META = "x-amz-meta-"
_MTIME_HEADER = _META + MTIME_KEY


_CACHE: dict[tuple[ObjectProps, bool], dict[str, str]] = {}


def headers(props: ObjectProps | None, *, write_only: bool = False) -> dict[str, str]:
    """Request headers for a PUT, CreateMultipartUpload or CopyObject with these properties
    (read-only: the same dict is handed out again for equal properties, as most uploads share them)."""
    if props is None:
        return {}
    hit = _CACHE.get((props, write_only))
    if hit is None:
        if len(_CACHE) > 1024:
            _CACHE.clear()
        hit = _CACHE[(props, write_only)] = _headers(props, write_only)
    return hit


def _headers(props: ObjectProps, write_only: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, header, _ in _FIELDS:
        value = getattr(props, name)
        if value and (not write_only or name in _WRITE_ONLY):
            out[header] = value
    if props.metadata and not write_only:
        for k, v in props.metadata:
            out[_META + k.lower()] = v
    out.update(sse_c_headers(props))
    return out


def with_mtime(headers: dict[str, str], mtime: float | None) -> dict[str, str]:
    """`headers` (read-only, maybe cached) and x-amz-meta-mtime for a local file's time, in
    rclone's form (stores/file_times.py): a new dict, the file's time over an `mtime` the
    properties carried."""
    if mtime is None:
        return headers
    return {**headers, _MTIME_HEADER: format_mtime(mtime)}


def params_with_mtime(props: ObjectProps | None, mtime: float | None) -> dict[str, Any]:
    """params(props), and the file's time in Metadata as with_mtime puts it in the headers."""
    out = params(props)
    if mtime is not None:
        out["Metadata"] = {**out.get("Metadata", {}), MTIME_KEY: format_mtime(mtime)}
    return out


def sse_c_headers(props: ObjectProps | None) -> dict[str, str]:
    """The SSE-C headers every write of the object (each UploadPart too) must carry."""
    if props is None or props.sse_c_key is None:
        return {}
    return customer_key_headers(props.sse_c_key)


_SSE_C = "x-amz-server-side-encryption-customer-"
_COPY_SOURCE_SSE_C = "x-amz-copy-source-server-side-encryption-customer-"


def customer_key_headers(key: bytes | None, *, copy_source: bool = False) -> dict[str, str]:
    """The three SSE-C headers for `key`: on a GET or HEAD (and writes) of an object encrypted
    with it, or with copy_source the x-amz-copy-source-* ones a CopyObject or UploadPartCopy
    needs to read such a source. Empty without a key."""
    if key is None:
        return {}
    prefix = _COPY_SOURCE_SSE_C if copy_source else _SSE_C
    return {prefix + "algorithm": "AES256", prefix + "key": base64.b64encode(key).decode(),
            prefix + "key-md5": base64.b64encode(hashlib.md5(key).digest()).decode()}


def customer_key_params(key: bytes | None, *, copy_source: bool = False) -> dict[str, Any]:
    """The same as botocore parameters (it adds the key's MD5 itself)."""
    if key is None:
        return {}
    if copy_source:
        return {"CopySourceSSECustomerAlgorithm": "AES256", "CopySourceSSECustomerKey": key}
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}


def params(props: ObjectProps | None, *, write_only: bool = False) -> dict[str, Any]:
    """The same as botocore parameters (it computes the SSE-C key's MD5 itself)."""
    if props is None:
        return {}
    out: dict[str, Any] = {}
    for name, _, param in _FIELDS:
        value = getattr(props, name)
        if value and (not write_only or name in _WRITE_ONLY):
            out[param] = _http_date(value) if name == "expires" else value
    if props.metadata is not None and not write_only:
        out["Metadata"] = {k.lower(): v for k, v in props.metadata}
    if props.sse_c_key is not None:
        out["SSECustomerAlgorithm"] = "AES256"
        out["SSECustomerKey"] = props.sse_c_key
    return out


def sse_c_params(props: ObjectProps | None) -> dict[str, Any]:
    if props is None or props.sse_c_key is None:
        return {}
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": props.sse_c_key}


_READ = frozenset(header for _, header, _ in _FIELDS[:6]) | {"x-amz-storage-class", "x-amz-tagging-count"}
_PARSED: dict[tuple, ObjectProps] = {}


def from_headers(h: Mapping[str, str], *, tag_count_known: bool = False) -> ObjectProps:
    """An answer's headers (lower-case names) as ObjectProps. A GET that names no
    x-amz-tagging-count has no tags (`tag_count_known`); a HEAD may simply not say. Objects
    mostly share their properties: equal headers give the same (cached) ObjectProps."""
    parts: list = [tag_count_known]
    for k, v in h.items():
        if k in _READ or k[:11] == _META:
            parts += (k, v)
    key = tuple(parts)
    hit = _PARSED.get(key)
    if hit is None:
        if len(_PARSED) > 1024:
            _PARSED.clear()
        hit = _PARSED[key] = _from_headers(h, tag_count_known)
    return hit


def _from_headers(h: Mapping[str, str], tag_count_known: bool) -> ObjectProps:
    values: dict[str, Any] = {name: h.get(header) for name, header, _ in _FIELDS[:6]}
    meta = tuple(sorted((k[len(_META):], v) for k, v in h.items() if k.startswith(_META)))
    count = h.get("x-amz-tagging-count")
    return ObjectProps(**values, metadata=meta, storage_class=h.get("x-amz-storage-class"),
                       tag_count=int(count) if count and count.isdigit() else (0 if tag_count_known else None))


def from_botocore(resp: Mapping[str, Any], *, tag_count_known: bool = False) -> ObjectProps:
    """A botocore HeadObject/GetObject answer as ObjectProps (its raw headers: the same parse)."""
    raw = resp.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    return from_headers({k.lower(): v for k, v in raw.items()}, tag_count_known=tag_count_known)


def _http_date(value: str) -> datetime | str:
    try:
        return http_datetime(value)
    except (TypeError, ValueError):
        return value


def tagging_from_botocore(resp: Mapping[str, Any]) -> str:
    """GetObjectTagging's TagSet as x-amz-tagging's URL-encoded form."""
    from urllib.parse import urlencode

    return urlencode([(t["Key"], t["Value"]) for t in resp.get("TagSet", ())])
