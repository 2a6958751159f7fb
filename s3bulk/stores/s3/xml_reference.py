"""The reference reading of the S3 answers the lean path parses (wire.py, multipart_xml.py): each
answer read by a real XML parser (ElementTree on expat) instead of regular expressions.

Two uses. At run time it is the slow path: the regexes read S3's usual formatting 1.6-1.8x faster
than expat (bench/list_parse_bench.py), and an answer in a formatting they do not cover (CDATA,
comments, namespace prefixes, attributes, a declared encoding other than UTF-8: xml_plain.py tells
them apart cheaply) is read here instead. In the tests (tests/test_xml_differential.py) it is the
oracle every regex reader is compared with, on answers recorded from real servers and on generated
documents.

What it reads is XML 1.0 with namespaces ignored (elements are matched by local name: servers send
S3's namespace, none, or a prefix for it), plus the one relaxation S3 needs: S3 writes a key's
control characters (U+0001-U+001F) as character references (&#x1;), which XML 1.0 forbids, and an
XML parser refuses the whole page for them. Here they, and the same characters sent raw, are read
as the characters, as the regexes read them; so is a carriage return sent raw but for a line
break (CRLF): XML would read it as a line feed, and LocalStack sends a key's CR raw (that key
would then not be found). Anything else that is not well-formed raises
Malformed (a page cut mid-element, a bare &, an undeclared prefix).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator
from urllib.parse import unquote

from ...model import ObjectInfo

if TYPE_CHECKING:  # imported when first needed: most runs never meet an answer the plain reader leaves
    import xml.etree.ElementTree as ET  # (ElementTree and expat cost ~3 ms of every start-up)


class Malformed(ValueError):
    """The answer is not the well-formed XML of the answer it should be."""


# the characters XML 1.0 forbids that S3 sends in keys, raw or as character references (tab, LF
# and CR are allowed), stood in for while expat reads the page by U+10FFE0 + the character
_FORBIDDEN = [c for c in range(1, 0x20) if c not in (0x9, 0xA, 0xD)]
_KEPT = _FORBIDDEN + [0xD]
_STAND_IN = 0x10FFE0
_STAND_IN_BYTES = b"\xf4\x8f\xbf"  # the UTF-8 lead of U+10FFC0-U+10FFFF
_REF = re.compile(rb"&#(?:[xX]0*([0-9a-fA-F]{1,2})|0*([0-9]{1,2}));")
_RAW = re.compile(b"[" + bytes(_FORBIDDEN) + b"]|\r(?!\n)")
_CDATA = re.compile(rb"(<!\[CDATA\[.*?\]\]>)", re.S)
_BACK = {_STAND_IN + c: c for c in _KEPT}


def _stand_in(c: int) -> bytes:
    return chr(_STAND_IN + c).encode()


def _ref_to_stand_in(m: re.Match[bytes]) -> bytes:
    c = int(m.group(1), 16) if m.group(1) is not None else int(m.group(2))
    return _stand_in(c) if c in _FORBIDDEN else m.group(0)


def _relaxed(body: bytes) -> tuple[bytes, bool]:
    """The body with the control characters S3 sends replaced by their stand-ins (outside CDATA
    sections, where a character reference is text), and whether any was."""
    has_ref = b"&#" in body
    if not has_ref and _RAW.search(body) is None:
        return body, False
    if _STAND_IN_BYTES in body:
        raise Malformed("the answer holds both control characters and U+10FFC0-U+10FFFF")
    pieces = _CDATA.split(body) if b"<![CDATA[" in body else [body]
    out = []
    for i, piece in enumerate(pieces):
        if i % 2 == 0 and has_ref:  # outside CDATA
            piece = _REF.sub(_ref_to_stand_in, piece)
        out.append(_RAW.sub(lambda m: _stand_in(m.group(0)[0]), piece))
    return b"".join(out), True


def parse(body: bytes) -> tuple[ET.Element, bool]:
    """The root element of an answer, and whether texts read from it must have the stand-ins of
    control characters put back (text()). Leading whitespace is skipped: S3 sends some before
    the XML of a CompleteMultipartUpload while it works."""
    import xml.etree.ElementTree as ET

    body, relaxed = _relaxed(body.lstrip(b" \t\r\n"))
    try:
        return ET.fromstring(body), relaxed
    except ET.ParseError as exc:
        raise Malformed(str(exc)) from None  # "unclosed token: line 2, column 80" and the like


def local(tag: str) -> str:
    """An element's name without its namespace ("{http://s3...}Key" -> "Key")."""
    return tag.rpartition("}")[2]


def children(el: ET.Element, name: str) -> Iterator[ET.Element]:
    return (c for c in el if local(c.tag) == name)


def child(el: ET.Element, name: str) -> ET.Element | None:
    return next(children(el, name), None)


def text(el: ET.Element | None, relaxed: bool) -> str | None:
    """All the character data of an element (CDATA sections included, comments not), None when
    there is no element."""
    if el is None:
        return None
    value = "".join(el.itertext())
    return value.translate(_BACK) if relaxed else value


def _int(value: str | None, what: str) -> int:
    if value is None or re.fullmatch(r"\s*[0-9]+\s*", value) is None:
        raise Malformed(f"{what} is not a number: {value!r}")
    return int(value)


def _timestamp(value: str | None) -> float:
    from datetime import datetime

    if value is None:
        raise Malformed("an entry has no LastModified")
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise Malformed(f"LastModified {value!r}: {exc}") from None


def _root(body: bytes, *names: str) -> tuple[ET.Element, bool]:
    root, relaxed = parse(body)
    if local(root.tag) not in names:
        raise Malformed(f"the answer's root element is {local(root.tag)}, not {' or '.join(names)}")
    return root, relaxed


def truncated(el: ET.Element, relaxed: bool) -> bool:
    """IsTruncated as botocore reads it: "true" (around whitespace) is true, anything else false."""
    value = text(child(el, "IsTruncated"), relaxed)
    return value is not None and value.strip() == "true"


def listing(body: bytes, encoded: bool, until: str | None = None
            ) -> tuple[list[ObjectInfo], bool, str | None]:
    """A ListObjectsV2 answer: (entries, truncated, next continuation token), as
    wire.S3Wire.list_page returns it; `encoded`: keys are URL-encoded (encoding-type=url);
    `until`: the entries stop at the first key above it (kept)."""
    root, relaxed = _root(body, "ListBucketResult")
    entries: list[ObjectInfo] = []
    for c in children(root, "Contents"):
        key = text(child(c, "Key"), relaxed)
        if key is None:
            raise Malformed("an entry has no Key")
        if encoded:
            key = unquote(key)
        etag = text(child(c, "ETag"), relaxed)
        storage = text(child(c, "StorageClass"), relaxed)
        entries.append(ObjectInfo(key, _int(text(child(c, "Size"), relaxed), "Size"),
                                  _timestamp(text(child(c, "LastModified"), relaxed)),
                                  etag.strip().strip('"') if etag is not None else None,
                                  storage or None))
        if until is not None and key > until:
            break
    return entries, truncated(root, relaxed), text(child(root, "NextContinuationToken"), relaxed)


def error_fields(body: bytes) -> tuple[str, str]:
    """An error answer's (Code, Message), each stripped; "" where it has none. The first Code and
    Message anywhere: S3 answers <Error>, some services wrap it (<ErrorResponse><Error>)."""
    root, relaxed = parse(body)
    found = {"Code": "", "Message": ""}
    for el in root.iter():
        name = local(el.tag)
        if name in found and not found[name]:
            found[name] = (text(el, relaxed) or "").strip()
    return found["Code"], found["Message"]


def upload_id(body: bytes) -> str | None:
    """A CreateMultipartUpload answer's UploadId (entities replaced), None when it has none."""
    root, relaxed = _root(body, "InitiateMultipartUploadResult")
    return text(child(root, "UploadId"), relaxed) or None


def error_in_200(body: bytes) -> bool:
    """Whether a 200 answer is an error all the same (multipart_xml.error_in_200): its root is an
    <Error>, or it is not well-formed (cut while S3 was still answering); an empty body is not."""
    if not body.strip():
        return False
    try:
        root, _ = parse(body)
    except Malformed:
        return True
    return local(root.tag) == "Error"


def object_parts(body: bytes) -> tuple[list[tuple[int, int, str]], int | None] | None:
    """A GetObjectAttributes answer's parts with checksums, as wire.parse_object_parts returns
    them: ([(number, size, base64 checksum)], the next part-number marker when truncated), or
    None when it has no parts with checksums."""
    root, relaxed = parse(body)
    holder = next((el for el in root.iter() if local(el.tag) == "ObjectParts"), None)
    if holder is None:
        return None
    parts: list[tuple[int, int, str]] = []
    for p in children(holder, "Part"):
        fields = [(local(f.tag), text(f, relaxed) or "") for f in p]
        checksum = next((v for name, v in fields if name.startswith("Checksum") and v), None)
        number = next((v for name, v in fields if name == "PartNumber"), "")
        size = next((v for name, v in fields if name == "Size"), "")
        if checksum is None or not number or not size:
            return None
        parts.append((_int(number, "PartNumber"), _int(size, "Size"), checksum))
    if not parts:
        return None
    marker = text(child(holder, "NextPartNumberMarker"), relaxed)
    nxt = _int(marker, "NextPartNumberMarker") if marker and marker.strip() else None
    return parts, (nxt if truncated(holder, relaxed) else None)


def tags(body: bytes) -> list[tuple[str, str]]:
    """A GetObjectTagging answer's (key, value) pairs, in order."""
    root, relaxed = _root(body, "Tagging")
    out = []
    for tag_set in children(root, "TagSet"):
        for tag in children(tag_set, "Tag"):
            key, value = text(child(tag, "Key"), relaxed), text(child(tag, "Value"), relaxed)
            if key is None:
                raise Malformed("a tag has no Key")
            out.append((key, value or ""))
    return out
