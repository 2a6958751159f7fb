"""Whether an S3 answer is in the plain formatting the lean path's regexes read exactly, told
cheaply; any other answer is read by the reference parser (xml_reference.py).

Plain: an optional XML declaration (UTF-8), a root element with at most a default namespace, and
after it only `<Name>` and `</Name>` tags around text, entities and character references: no
CDATA section, comment, processing instruction or DOCTYPE, no attribute (so no namespace prefix,
which needs one to be declared), no raw carriage return (XML reads it as a line feed). Every S3
server tried formats its answers so (tests/data/xml/); a regex read of anything else can go wrong
silently (a key in CDATA, a <Contents> with an attribute that no count sees), which
tests/test_xml_differential.py checks against the reference.

A listing page is checked with byte searches only (memchr for ! ? " ' and CR, then a closer look
when one is there): a regex over every tag costs ~40% of the fast read. The small answers
(errors, multipart, tagging, object parts) are checked tag by tag. What the byte searches leave
(whitespace inside a tag, an empty-element tag) the listing's regexes refuse themselves: wire.py
counts and anchors them so that such an entry fails its match and the page goes to the reference.
"""

from __future__ import annotations

import re

from .lazy_re import lazy

# the XML declaration (version, UTF-8 if any encoding, standalone) and the root's start tag with
# no attribute but a default namespace
_DECL = (rb"(?:\xef\xbb\xbf)?\s*(?:<\?xml\s+version\s*=\s*(?:\"1\.[0-9]\"|'1\.[0-9]')"
         rb"(?:\s+encoding\s*=\s*(?:\"(?i:utf-8)\"|'(?i:utf-8)'))?"
         rb"(?:\s+standalone\s*=\s*(?:\"(?:yes|no)\"|'(?:yes|no)'))?\s*\?>\s*)?")
_ROOT = lazy(_DECL + rb"<([A-Za-z][\w.-]*)(?:\s+xmlns\s*=\s*\"[^\"<>&]*\")?\s*>")
_LIST_ROOT = lazy(_DECL + rb"<ListBucketResult(?:\s+xmlns\s*=\s*\"[^\"<>&]*\")?\s*>")
_ODD_TAG = lazy(rb"<(?!/?[A-Za-z][\w.-]*>)")  # any markup but <Name> and </Name>
# an attribute: = and a quoted value, then the tag's end or another attribute (text that looks so,
# a key holding a='b'>, sends its page to the reference: slower, still right)
_ATTRIBUTE = lazy(rb"=\s*(?:\"[^\"<]*\"|'[^'<]*')(?:\s*/?>|\s+[A-Za-z_])")


def listing_page(body: bytes) -> bool:
    """Whether a ListObjectsV2 answer is plain (above) but for what wire.py's regexes refuse."""
    m = _LIST_ROOT.match(body)
    if m is None:
        return False
    start = m.end()
    if b"\r" in body:
        return False
    # a key may hold ! ? ' and (not escaped by every server) ": only then the closer look
    if _after_lt(body, b"!", start) or _after_lt(body, b"?", start):
        return False
    if (body.find(b'"', start) >= 0 or body.find(b"'", start) >= 0) and _ATTRIBUTE.search(body, start):
        return False
    return True


def _after_lt(body: bytes, char: bytes, start: int) -> bool:
    """Whether `char` follows a '<' somewhere after `start` (<! or <?): a memchr for the character,
    then a look at the byte before each (a two-byte search costs ~0.3 us a key, as much again as
    the whole check; a page rarely holds the character at all)."""
    i = body.find(char, start)
    while i >= 0:
        if body[i - 1] == 0x3C:
            return True
        i = body.find(char, i + 1)
    return False


def small_root(body: bytes) -> bytes | None:
    """The root element's name of a short answer (an error, a multipart or tagging answer, object
    parts) when it is plain (above) and whole (it ends with the root's end tag), else None."""
    m = _ROOT.match(body)
    if m is None or b"\r" in body or _ODD_TAG.search(body, m.end()) is not None:
        return None
    return m.group(1) if body.rstrip().endswith(b"</" + m.group(1) + b">") else None


_XML_ENTITIES = lazy(r"&(?:(lt|gt|amp|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)?")  # no name: a bare &
_ENTITY = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def unescape(text: str) -> str:
    """Text with its entities and character references replaced. ValueError for what an XML
    parser refuses (xml_reference.py): a bare & or an unknown entity, a reference to no character
    (0, a surrogate, U+FFFE, U+FFFF, above U+10FFFF); control characters are read (S3 sends them)."""
    if "&" not in text:
        return text
    return _XML_ENTITIES.sub(_one, text)


def _one(m: re.Match[str]) -> str:
    name = m.group(1)
    if name is None:
        raise ValueError("a bare & or an unknown entity in the text")
    if name[0] != "#":
        return _ENTITY[name]
    c = int(name[2:], 16) if name[1] == "x" else int(name[1:])
    if c > 0xD7FF and (c <= 0xDFFF or c in (0xFFFE, 0xFFFF) or c > 0x10FFFF) or c == 0:
        raise ValueError(f"character reference to no character: &{name};")
    return chr(c)
