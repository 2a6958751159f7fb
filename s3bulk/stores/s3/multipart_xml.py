"""The XML of the multipart control requests on the lean path (wire.py): CompleteMultipartUpload's
body built, CreateMultipartUpload's UploadId read, and the 200 answers that are errors told apart.

A string join and a regular expression: the bodies are a few hundred bytes a part, and building
or parsing them is no reason to load botocore (about 0.4 s of start-up on a busy machine) for an
upload whose parts already go without it. An answer not in the plain formatting (xml_plain.py) is
read by the reference parser (xml_reference.py).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from . import xml_plain, xml_reference

_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
# a Part's members after its PartNumber, in the order botocore writes them
PART_FIELDS = ("ETag", "ChecksumCRC32", "ChecksumCRC32C", "ChecksumCRC64NVME", "ChecksumSHA1", "ChecksumSHA256")
_UPLOAD_ID = re.compile(rb"<UploadId>([^<]*)</UploadId>")


def escape(text: str) -> str:
    """Text as XML element content (what ElementTree escapes: &, <, >)."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def complete_body(parts: Iterable[Mapping[str, Any]]) -> bytes:
    """CompleteMultipartUpload's body for parts as the store keeps them ({"PartNumber", "ETag",
    "Checksum...": ...}, in part-number order): the bytes botocore sends for them."""
    out = [f'<CompleteMultipartUpload xmlns="{_NAMESPACE}">']
    for part in parts:
        out.append(f"<Part><PartNumber>{int(part['PartNumber'])}</PartNumber>")
        for name in PART_FIELDS:
            value = part.get(name)
            if value:
                out.append(f"<{name}>{escape(str(value))}</{name}>")
        out.append("</Part>")
    out.append("</CompleteMultipartUpload>")
    return "".join(out).encode("utf-8")


def upload_id(body: bytes) -> str | None:
    """The UploadId of a CreateMultipartUpload answer (entities replaced), or None when it has none.
    Raises ValueError (xml_reference.Malformed) when the answer is not its XML."""
    if xml_plain.small_root(body) != b"InitiateMultipartUploadResult" or body.count(b"UploadId") != 2:
        return xml_reference.upload_id(body)
    m = _UPLOAD_ID.search(body)
    return xml_plain.unescape(m.group(1).decode("utf-8")) if m and m.group(1) else None


def error_in_200(body: bytes) -> bool:
    """Whether a 200 answer is an error all the same, as botocore reads it (and then retries it as
    a 500): its root element is <Error>, or the XML is cut off (the connection failed while S3
    was still answering). An empty body is a success. S3 may send whitespace before the XML while
    a completion runs, to keep the connection alive."""
    if not body.strip():
        return False
    root = xml_plain.small_root(body)
    return root == b"Error" if root is not None else xml_reference.error_in_200(body)


_ETAG = re.compile(rb"<ETag>([^<]*)</ETag>")


def answered_etag(body: bytes) -> str | None:
    """The ETag a CompleteMultipartUpload or CopyObject answer names in its XML (entities replaced,
    quotes kept), or None when it names none: what --verify holds the object to (stores/written.py).
    Only read when a write is to be checked; a body it cannot read names none (no check)."""
    m = _ETAG.search(body)
    if not m or not m.group(1):
        return None
    try:
        return xml_plain.unescape(m.group(1).decode("utf-8", "replace"))
    except ValueError:
        return None
