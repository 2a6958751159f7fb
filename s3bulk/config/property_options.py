"""The object-property options (aws-cli's names: --metadata, --tagging, --sse-c, ...) checked as
S3 would check them and turned into one WriteProps, and the SSE-C keys each side is read with.
A bad value is a UsageError (one line, exit 2), raised before anything is sent.

Kept free of typer and the command line: cli/props.py declares the options for the CLI, the
Lambda handler (aws_lambda.py) passes the same names from its event's "options" here.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from ..errors import UsageError
from ..model import ObjectProps, WriteProps
from .urls import S3Options

STORAGE_CLASSES = ("STANDARD", "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER",
                   "DEEP_ARCHIVE", "OUTPOSTS", "GLACIER_IR", "SNOW", "EXPRESS_ONEZONE")
ACLS = ("private", "public-read", "public-read-write", "authenticated-read", "aws-exec-read", "bucket-owner-read",
        "bucket-owner-full-control", "log-delivery-write")


def write_props(content_type: Optional[str] = None, no_guess_mime_type: bool = False, metadata: Optional[str] = None,
                cache_control: Optional[str] = None, content_disposition: Optional[str] = None,
                content_encoding: Optional[str] = None, content_language: Optional[str] = None,
                expires: Optional[str] = None, storage_class: Optional[str] = None, acl: Optional[str] = None,
                tagging: Optional[str] = None, sse: Optional[str] = None, sse_kms_key_id: Optional[str] = None,
                sse_c: Optional[str] = None, sse_c_key: Optional[str] = None, request_payer: Optional[str] = None,
                copy_props: str = "default", metadata_directive: Optional[str] = None,
                preserve_xattrs: bool = False) -> WriteProps:
    """The options as one WriteProps, each value checked as S3 would (before anything is sent)."""
    for flag, value in (("--content-type", content_type), ("--cache-control", cache_control),
                        ("--content-disposition", content_disposition), ("--content-encoding", content_encoding),
                        ("--content-language", content_language), ("--sse-kms-key-id", sse_kms_key_id)):
        _header_value(flag, value)
    if storage_class is not None and storage_class not in STORAGE_CLASSES:
        raise UsageError(f"--storage-class must be one of {', '.join(STORAGE_CLASSES)}, not {storage_class!r}")
    if acl is not None and acl not in ACLS:
        raise UsageError(f"--acl must be one of {', '.join(ACLS)}, not {acl!r}")
    if sse is not None and sse not in ("AES256", "aws:kms"):
        raise UsageError(f"--sse must be AES256 or aws:kms, not {sse!r}")
    if sse_kms_key_id is not None and sse != "aws:kms":
        raise UsageError("--sse-kms-key-id needs --sse aws:kms")
    if sse_c is not None and sse_c != "AES256":
        raise UsageError(f"--sse-c must be AES256, not {sse_c!r}")
    if (sse_c is None) != (sse_c_key is None):
        raise UsageError("--sse-c and --sse-c-key go together")
    if sse_c is not None and sse is not None:
        raise UsageError("choose one of --sse and --sse-c")
    if request_payer is not None and request_payer != "requester":
        raise UsageError(f"--request-payer must be requester, not {request_payer!r}")
    given = ObjectProps(
        content_type=content_type, cache_control=cache_control, content_disposition=content_disposition,
        content_encoding=content_encoding, content_language=content_language,
        expires=_expires(expires) if expires is not None else None,
        metadata=_metadata(metadata) if metadata is not None else None,
        tagging=_tagging(tagging) if tagging is not None else None, storage_class=storage_class, acl=acl,
        sse=sse, sse_kms_key_id=sse_kms_key_id, sse_c_key=_sse_c_key(sse_c_key) if sse_c_key is not None else None,
        request_payer=request_payer)
    return WriteProps(set=given, guess_mime_type=not no_guess_mime_type, copy_props=copy_props,
                      metadata_directive=metadata_directive.upper() if metadata_directive else None,
                      preserve_xattrs=preserve_xattrs)


def _header_value(flag: str, value: Optional[str]) -> None:
    if value is not None and (not value.isascii() or any(c in value for c in "\r\n\0")):
        raise UsageError(f"{flag} must be printable ASCII on one line")


def _metadata(text: str) -> tuple[tuple[str, str], ...]:
    """k=v,k2=v2 (aws-cli's shorthand) or a JSON object of strings."""
    pairs: list[tuple[str, str]] = []
    if text.lstrip().startswith("{"):
        try:
            obj: Any = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--metadata is not valid JSON: {exc}") from None
        if not isinstance(obj, dict) or not all(isinstance(v, str) for v in obj.values()):
            raise UsageError("--metadata JSON must be an object of strings")
        pairs = list(obj.items())
    elif text:
        for item in text.split(","):
            key, eq, value = item.partition("=")
            if not eq:
                raise UsageError(f"--metadata expects KEY=VALUE[,KEY=VALUE...], got {item!r}")
            pairs.append((key.strip(), value))
    for key, value in pairs:
        if not key or not all(c.isalnum() or c in "-_." for c in key) or not key.isascii():
            raise UsageError(f"--metadata key {key!r}: letters, digits, '-', '_' and '.' only")
        _header_value(f"--metadata value of {key}", value)
    return tuple(pairs)


def _tagging(text: str) -> str:
    from urllib.parse import parse_qsl

    try:
        tags = parse_qsl(text, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise UsageError(f"--tagging expects URL-encoded KEY=VALUE&KEY=VALUE, got {text!r}") from None
    if len(tags) > 10 or any(not k for k, _ in tags):
        raise UsageError("--tagging takes 1 to 10 tags, each with a key")
    return text


def _expires(text: str) -> str:
    """An HTTP-date, from ISO 8601, an HTTP date or seconds since the epoch (aws-cli takes these)."""
    from datetime import datetime, timezone
    from email.utils import format_datetime, parsedate_to_datetime

    when: datetime | None = None
    try:
        when = datetime.fromtimestamp(float(text), timezone.utc)
    except (ValueError, OverflowError, OSError):
        for parse in (lambda t: datetime.fromisoformat(t.replace("Z", "+00:00")), parsedate_to_datetime):
            try:
                when = parse(text)
                break
            except (ValueError, TypeError, IndexError):
                continue
    if when is None:
        raise UsageError(f"--expires: not a time: {text!r} (use ISO 8601, e.g. 2030-01-01T00:00:00Z)")
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return format_datetime(when.astimezone(timezone.utc), usegmt=True)


def _sse_c_key(text: str, flag: str = "--sse-c-key") -> bytes:
    """aws-cli's --sse-c-key: the key itself (32 bytes) or fileb://PATH holding it. Never printed."""
    if text.startswith("fileb://"):
        try:
            with open(text[len("fileb://"):], "rb") as f:
                key = f.read()
        except OSError as exc:
            raise UsageError(f"{flag}: cannot read {text[len('fileb://'):]!r}: {exc.strerror}") from None
    else:
        key = text.encode()
    if len(key) != 32:
        raise UsageError(f"{flag} must be 32 bytes (AES-256), not {len(key)}")
    return key


def customer_keys(src: str, dst: str, src_s3: S3Options, dst_s3: S3Options,
                  props: dict[str, Any]) -> tuple[S3Options, S3Options]:
    """The SSE-C keys each side's objects are read with, as aws-cli takes them, on the sides'
    S3Options (so every store opened for that side sends them): SRC's from
    --sse-c-copy-source/--sse-c-copy-source-key (taken out of `props`), or on a download from
    --sse-c/--sse-c-key, which aws-cli uses there to read the object; DST's from --sse-c-key
    (an S3 DST is then read with it too, as sync --checksum's HEADs need)."""
    from dataclasses import replace

    algorithm, text = props.pop("sse_c_copy_source", None), props.pop("sse_c_copy_source_key", None)
    if algorithm is not None and algorithm != "AES256":
        raise UsageError(f"--sse-c-copy-source must be AES256, not {algorithm!r}")
    if (algorithm is None) != (text is None):
        raise UsageError("--sse-c-copy-source and --sse-c-copy-source-key go together")
    src_s3_side, dst_s3_side = _is_s3(src), _is_s3(dst)
    if text is not None and not src_s3_side:
        raise UsageError("--sse-c-copy-source-key is the key of an S3 SRC's objects; SRC is not S3")
    source_key = _sse_c_key(text, "--sse-c-copy-source-key") if text is not None else None
    dst_text = props.get("sse_c_key")
    if dst_text is not None and props.get("sse_c") is not None:
        dst_key = _sse_c_key(dst_text)
        if dst_s3_side:
            dst_s3 = replace(dst_s3, sse_c_key=dst_key)
        elif src_s3_side:  # a download: aws-cli reads the object with --sse-c-key
            if source_key is not None:
                raise UsageError("on a download --sse-c-key is SRC's key (as in aws-cli): "
                                 "give it or --sse-c-copy-source-key, not both")
            source_key = dst_key
    if source_key is not None:
        src_s3 = replace(src_s3, sse_c_key=source_key)
    return src_s3, dst_s3


def _is_s3(text: str) -> bool:
    from .urls import parse_location

    return text != "-" and parse_location(text).kind == "s3"


FLAGS = ("no_guess_mime_type", "preserve_xattrs")
NAMES = frozenset(("content_type", "metadata", "cache_control", "content_disposition", "content_encoding",
                   "content_language", "expires", "storage_class", "acl", "tagging", "sse", "sse_kms_key_id",
                   "sse_c", "sse_c_key", "request_payer", "copy_props", "metadata_directive",
                   "sse_c_copy_source", "sse_c_copy_source_key", *FLAGS))


def from_json(values: dict[str, Any]) -> dict[str, Any]:
    """Property options as a JSON document gives them (the Lambda event's "options", the CLI's names
    with '_'): each a string as on the command line, --metadata and --tagging also as an object of
    strings, the flags as booleans. A value of another kind is a UsageError naming the option."""
    from urllib.parse import urlencode

    out: dict[str, Any] = {}
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        if name in FLAGS:
            if not isinstance(value, bool):
                raise UsageError(f"{flag} must be true or false, not {value!r}")
        elif name in ("metadata", "tagging") and isinstance(value, dict):
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
                raise UsageError(f"{flag} must be an object of strings")
            value = json.dumps(value) if name == "metadata" else urlencode(list(value.items()))
        elif not isinstance(value, str):
            raise UsageError(f"{flag} must be a string, not {type(value).__name__}")
        out[name] = value
    return out
