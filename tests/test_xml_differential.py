"""The lean path's XML readers (stores/s3/wire.py, multipart_xml.py: regexes) against the reference
reader (stores/s3/xml_reference.py: ElementTree on expat), side by side, on

- answers recorded from real servers (tests/data/xml/: LocalStack and versitygw by record.py there)
  and written by hand in the formatting of AWS (the API reference's examples and its real answers),
  MinIO, moto, s3proxy and a JAXB server (prefixed namespace);
- generated documents (hypothesis, derandomized, bounded): CDATA sections, comments, namespace
  prefixes, attributes, entities and character references, reordered and unknown elements,
  whitespace between elements and inside tags, empty-element tags, declarations or none;
- the same documents cut short anywhere.

What each generated document means is known (the model it was written from), so both readers are
also checked against it. Where the regexes cannot read a formatting they must notice and hand the
answer to the reference (xml_plain.py); on S3's own formatting they must read it themselves (the
fast path is what keeps listings fast: bench/list_parse_bench.py). In-process, a few seconds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3bulk.model import ObjectInfo
from s3bulk.stores.s3 import multipart_xml, wire, xml_reference
from s3bulk.errors import MalformedXml as Malformed

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

DATA = Path(__file__).parent / "data" / "xml"
S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
SETTINGS = settings(derandomize=True, max_examples=300, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def outcome(fn: Callable[[], Any]) -> Any:
    """What a reader returns, or that it refused (Malformed, or a ValueError of int())."""
    try:
        return fn()
    except ValueError as exc:
        return ("refused", type(exc).__name__ if not isinstance(exc, Malformed) else "Malformed")


# ------------------------------------------------------------------ the readers, side by side

def listing_fast(body: bytes, encoded: bool, until: str | None = None) -> Any:
    return outcome(lambda: wire.read_listing(body, encoded, until))


def listing_ref(body: bytes, encoded: bool, until: str | None = None) -> Any:
    return outcome(lambda: xml_reference.listing(body, encoded, until))


READERS: dict[str, tuple[Callable[[bytes], Any], Callable[[bytes], Any]]] = {
    "list": (lambda b: listing_fast(b, False), lambda b: listing_ref(b, False)),
    "list-url": (lambda b: listing_fast(b, True), lambda b: listing_ref(b, True)),
    "error": (wire.error_fields, lambda b: outcome(lambda: xml_reference.error_fields(b))),
    "create-multipart": (lambda b: outcome(lambda: multipart_xml.upload_id(b)),
                         lambda b: outcome(lambda: xml_reference.upload_id(b))),
    "error-in-200": (multipart_xml.error_in_200, xml_reference.error_in_200),
    "object-parts": (lambda b: outcome(lambda: wire.parse_object_parts(b)),
                     lambda b: outcome(lambda: xml_reference.object_parts(b))),
    "tagging": (lambda b: outcome(lambda: wire.read_tags(b)), lambda b: outcome(lambda: xml_reference.tags(b))),
}


def kind_of(name: str) -> str:
    if "-list" in name:
        return "list-url" if name.endswith("-url.xml") or "aws-list-real" in name else "list"
    for kind in ("create-multipart", "object-parts", "tagging"):
        if kind in name:
            return kind
    if "complete-multipart" in name or "copy" in name or "error-in-200" in name:
        return "error-in-200"
    assert "error" in name, name
    return "error"


FIXTURES = sorted(p.name for p in DATA.glob("*.xml"))


def test_the_fixtures_cover_every_server_and_answer() -> None:
    servers = {name.split("-")[0] for name in FIXTURES}
    assert {"localstack", "versitygw", "aws", "minio", "moto", "s3proxy"} <= servers
    assert set(READERS) == {kind_of(name) for name in FIXTURES}


@pytest.mark.parametrize("name", FIXTURES)
def test_recorded_and_documented_answers_read_alike(name: str) -> None:
    body = (DATA / name).read_bytes()
    fast, ref = READERS[kind_of(name)]
    assert fast(body) == ref(body)
    if kind_of(name) == "error":
        code, message = fast(body)
        assert code and message  # every error fixture names its error
    if kind_of(name) == "error-in-200":
        assert fast(body) == ("error" in name)


# the answers the regexes must read themselves, not hand to the reference: S3's field order
# (AWS, MinIO, s3proxy, moto) and versitygw's
FAST_PAGES = [n for n in FIXTURES if kind_of(n).startswith("list") and n.split("-")[0] in
              ("aws", "minio", "moto", "s3proxy", "versitygw")
              and n not in ("versitygw-list-owner.xml", "versitygw-list-delimiter.xml")]  # fetch-owner: not asked


@pytest.mark.parametrize("name", FAST_PAGES)
def test_usual_pages_take_the_fast_path(name: str) -> None:
    body = (DATA / name).read_bytes()
    assert wire._fast_listing(body, kind_of(name) == "list-url", None) is not None


def test_recorded_listings_hold_the_keys_written() -> None:
    """Both servers stored the odd keys of record.py; read back exactly (LocalStack lists &#x1;
    as S3 does; \\r comes back as written, as a character reference)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("record", DATA / "record.py")
    record = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(record)  # type: ignore[union-attr]
    want = sorted(record.KEYS + ["class/STANDARD_IA", "class/GLACIER"])
    for server in ("localstack", "versitygw"):
        # versitygw 1.8 ignores encoding-type=url (its answer says <EncodingType></EncodingType>): its
        # "url" page is read as asked, not as what it is (left to the listing-robustness work)
        for name, encoded in (("list-odd", False), ("list-url", server == "localstack")):
            got = wire.read_listing((DATA / f"{server}-{name}.xml").read_bytes(), encoded)
            # versitygw stores control characters as U+FFFD (Go's XML escaping, not the reading)
            stored = [k.replace("\x01", "\ufffd").replace("\x1f", "\ufffd") if server == "versitygw" else k
                      for k in want]
            assert sorted(e.key for e in got[0]) == sorted(stored), (server, name)
        classes = {e.key: e.storage_class for e in wire.read_listing(
            (DATA / f"{server}-list-owner.xml").read_bytes(), False)[0]}
        assert classes["class/GLACIER"] in ("GLACIER", "STANDARD")  # versitygw keeps no classes
        entries, truncated, token = wire.read_listing((DATA / f"{server}-list-truncated.xml").read_bytes(), False)
        assert len(entries) == 3 and truncated and token


# ------------------------------------------------------------------ generated documents

# characters a key's text is drawn from: XML's specials, what S3 escapes, CDATA's end, non-BMP
ODD_CHARS = ["a", "b", "/", "&", "<", ">", '"', "'", "]", "]]>", "\x01", "\x1f", "\t", "\n", "\r", " ",
             "é", "日", "\U0001F600", "%", "+", "=", "!", "?", "-", ":", ";", "#", "\u00a0", "\x7f"]
key_text = st.one_of(
    st.lists(st.sampled_from(ODD_CHARS), min_size=1, max_size=8).map("".join),
    st.text(st.characters(min_codepoint=1, max_codepoint=0x10FFDF, exclude_categories=("Cs",),
                          exclude_characters="\ufffe\uffff"), min_size=1, max_size=12),
)


@dataclass
class Style:
    """How one generated document is written."""
    rng: random.Random
    decl: str
    prefix: str | None       # namespace prefix some elements are written with
    sep: list[str]           # whitespace between elements
    odd: float               # how often an element or a text is written an unusual way

    def chance(self) -> bool:
        return self.rng.random() < self.odd


def make_style(seed: int, odd: float) -> Style:
    rng = random.Random(seed)
    decl = rng.choice(["", '<?xml version="1.0" encoding="UTF-8"?>', "<?xml version='1.0' encoding='utf-8'?>\n",
                       '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n', '<?xml version="1.0"?>'])
    prefix = rng.choice([None, None, "s3", "ns2"])
    sep = rng.choice([[""], ["\n"], ["\n  ", "\n    "], ["\r\n"], [" \t", ""]])
    return Style(rng, decl, prefix, sep, odd)


def escape_char(c: str, s: Style, prev: str = "") -> str:
    """One character of text as XML, in one of the ways XML allows (control characters, which XML
    forbids, as S3 writes them: character references; > after ] escaped, so that no ]]> is)."""
    o = ord(c)
    if c == ">" and prev == "]":
        return s.rng.choice(["&gt;", "&#62;"])
    if c == "&":
        return s.rng.choice(["&amp;", "&#38;", "&#x26;"])
    if c == "<":
        return s.rng.choice(["&lt;", "&#60;", "&#x3C;"])
    if c in "\r" or (o < 0x20 and c not in "\t\n"):
        return s.rng.choice([f"&#x{o:X};", f"&#{o};", f"&#x{o:x};"])
    if c in "\"'>" or s.chance():
        return s.rng.choice([c, f"&#{o};", f"&#x{o:X};"] + ({'"': ["&quot;"], "'": ["&apos;"], ">": ["&gt;"]}
                                                              .get(c, [])))
    return c


def write_text(text: str, s: Style) -> str:
    """Text as element content: escaped, in CDATA sections, with comments between pieces."""
    if not text:
        return ""
    out = []
    i = 0
    while i < len(text):
        n = s.rng.randint(1, max(1, len(text) - i))
        piece = text[i:i + n]
        i += n
        if s.chance() and "\r" not in piece:  # CDATA: all but its own end as it is (CR would be read as LF)
            out.append("<![CDATA[" + piece.replace("]]>", "]]]]><![CDATA[>") + "]]>")
        else:
            out.append("".join(escape_char(c, s, text[i - n + j - 1] if i - n + j > 0 else "")
                               for j, c in enumerate(piece)))
        if s.chance():
            out.append(s.rng.choice(["<!-- a comment -->", "<!---->", "<?pi some data?>"]))
    return "".join(out)


def tag(name: str, s: Style) -> tuple[str, str]:
    """A start and end tag: plain, prefixed, with attributes or whitespace inside."""
    full = f"{s.prefix}:{name}" if s.prefix and s.chance() else name
    start, end = full, full
    if s.chance():
        start += s.rng.choice([' id="1"', " a='x' b=\"y\"", f' xmlns="{S3_NS}"', ' xmlns:x="urn:x"', "\n"])
    if s.chance():
        start += " "
    if s.chance():
        end += s.rng.choice([" ", "\n", "\t"])
    return f"<{start}>", f"</{end}>"


def element(name: str, inner: str, s: Style, raw: bool = False) -> str:
    """An element holding text (escaped here) or, with raw, markup already written."""
    start, end = tag(name, s)
    if not inner and s.chance():
        return start[:-1] + "/>"
    return start + (inner if raw else write_text(inner, s)) + end


def between(s: Style) -> str:
    sep = s.rng.choice(s.sep)
    if s.chance():
        sep += s.rng.choice(["<!-- between -->", "<?between?>"]) + s.rng.choice(s.sep)
    return sep


def document(root: str, children: list[str], s: Style) -> bytes:
    if s.prefix and s.rng.random() < 0.5:
        attrs = f' xmlns:{s.prefix}="{S3_NS}"' + (f' xmlns="{S3_NS}"' if s.rng.random() < 0.5 else "")
        start, end = f"<{s.prefix}:{root}{attrs}>", f"</{s.prefix}:{root}>"
    else:
        xmlns = f' xmlns:{s.prefix}="{S3_NS}"' if s.prefix else ""
        start = f"<{root}" + (f' xmlns="{S3_NS}"' if s.rng.random() < 0.7 else "") + xmlns + ">"
        end = f"</{root}>"
    body = s.decl + start + "".join(between(s) + c for c in children) + between(s) + end
    return body.encode("utf-8")


TIMES = [("2026-11-23T04:05:06.000Z", "2026-11-23T04:05:06+00:00"), ("2023-05-06T07:08:09Z", "2023-05-06T07:08:09+00:00"),
         ("2023-05-06T07:08:09.5Z", "2023-05-06T07:08:09.5+00:00"), ("2024-02-29T23:59:59.999+00:00", "2024-02-29T23:59:59.999+00:00")]


@dataclass
class Listing:
    body: bytes
    encoded: bool
    want: tuple[list[ObjectInfo], bool, str | None]


@st.composite
def listings(draw: st.DrawFn, odd: float | None = None) -> Listing:
    keys = sorted(set(draw(st.lists(key_text, max_size=6))))
    encoded = draw(st.booleans())
    if odd is None:
        odd = draw(st.sampled_from([0.0, 0.0, 0.05, 0.2, 0.5]))
    s = make_style(draw(st.integers(0, 2**32)), odd)
    order = draw(st.sampled_from(["s3", "versitygw", "localstack", "shuffled"]))
    want: list[ObjectInfo] = []
    contents = []
    for key in keys:
        lm, iso = s.rng.choice(TIMES)
        etag = f"{s.rng.randrange(16**32):032x}" + s.rng.choice(["", "-3"])
        size = s.rng.choice([0, 1, s.rng.randrange(10**13)])
        storage = s.rng.choice([None, "STANDARD", "GLACIER", "DEEP_ARCHIVE"])
        quoted = s.rng.choice(["&quot;{}&quot;", "&#34;{}&#34;", '"{}"', "&#x22;{}&#x22;"]).format(etag)
        pad = s.rng.choice(["", " ", "\n  "]) if s.chance() else ""
        fields = {
            "Key": element("Key", quote(key, safe="/") if encoded else key, s),
            "LastModified": element("LastModified", pad + lm + pad, s),
            "ETag": "{}" + pad + quoted + pad + "{}",
            "Size": element("Size", pad + str(size) + pad, s),
        }
        fields["ETag"] = fields["ETag"].format(*tag("ETag", s))
        if storage:
            fields["StorageClass"] = element("StorageClass", storage, s)
        if s.chance():
            fields["ChecksumAlgorithm"] = element("ChecksumAlgorithm", "CRC32", s)
        if s.chance():
            fields["Owner"] = element("Owner", element("ID", "75aa57f0", s) + element("DisplayName", "me", s), s, raw=True)
        if s.chance():
            fields["Unknown"] = element("Unknown", "x", s)
        names = {"s3": ["Key", "LastModified", "ETag", "ChecksumAlgorithm", "Size", "Owner", "StorageClass", "Unknown"],
                 "versitygw": ["LastModified", "ChecksumAlgorithm", "ETag", "Key", "Size", "StorageClass", "Owner", "Unknown"],
                 "localstack": ["Key", "ETag", "Size", "LastModified", "StorageClass", "Owner", "Unknown", "ChecksumAlgorithm"],
                 "shuffled": s.rng.sample(list(fields), len(fields))}[order]
        inner = "".join(between(s) + fields[n] for n in names if n in fields) + between(s)
        contents.append(element("Contents", inner, s, raw=True))
        want.append(ObjectInfo(key, size, datetime.fromisoformat(iso).timestamp(), etag, storage))
    truncated = draw(st.booleans())
    token = draw(st.one_of(st.none(), key_text)) if truncated else None
    head = [element("Name", "bucket", s), element("Prefix", "", s), element("KeyCount", str(len(keys)), s),
            element("MaxKeys", "1000", s)]
    flag = element("IsTruncated", ("true" if truncated else "false") + (" " if s.chance() else ""), s)
    tail = [element("NextContinuationToken", token, s)] if token is not None else []
    if s.rng.random() < 0.5:
        children = head + [flag] + contents + tail
    else:
        children = head + tail + [flag] + contents
    return Listing(document("ListBucketResult", children, s), encoded, (want, truncated, token))


@SETTINGS
@given(listings())
def test_generated_listings_read_alike_and_as_written(page: Listing) -> None:
    ref = listing_ref(page.body, page.encoded)
    assert ref == page.want  # the reference reads what the document says
    assert listing_fast(page.body, page.encoded) == ref


@SETTINGS
@given(listings(odd=0.0), st.data())
def test_plain_generated_listings_take_the_fast_path_and_stop_after_until(page: Listing, data: st.DataObject) -> None:
    """S3's formatting with any keys (entities, character references, controls): the regexes read
    it themselves, and stop at the first key past `until` as the reference does."""
    keys = [e.key for e in page.want[0]]
    order_known = data.draw(st.booleans())
    until = data.draw(st.sampled_from(keys)) + data.draw(st.sampled_from(["", "0", "\uffff"])) if keys and order_known else None
    fast = wire._fast_listing(page.body, page.encoded, until)
    assert listing_fast(page.body, page.encoded, until) == listing_ref(page.body, page.encoded, until)
    if fast is not None:
        assert fast == listing_ref(page.body, page.encoded, until)


def s3_escape(text: str) -> str:
    """Text as S3 writes it: & < > " as entities, control characters and CR as references."""
    out = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return "".join(f"&#x{ord(c):X};" if ord(c) < 0x20 and c not in "\t\n" else c for c in out)


def test_plain_s3_pages_of_odd_keys_take_the_fast_path() -> None:
    """A page in S3's formatting is read by the regexes whatever its keys hold (a regression here
    would keep the results right and lose the speed), but for text that looks like an attribute."""
    from s3bulk.stores.s3 import xml_plain

    rng = random.Random(3)
    fast_pages = 0
    for _ in range(300):
        keys = sorted({"".join(rng.choice(ODD_CHARS) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 5))})
        rows = "".join(f"<Contents><Key>{s3_escape(k)}</Key>"
                       f"<LastModified>2026-11-23T04:05:06.000Z</LastModified><ETag>&quot;abc&quot;</ETag>"
                       f"<Size>1</Size><StorageClass>STANDARD</StorageClass></Contents>" for k in keys)
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="{S3_NS}"><Name>b</Name>'
                f"<IsTruncated>false</IsTruncated>{rows}</ListBucketResult>").encode()
        fast = wire._fast_listing(body, False, None)
        if xml_plain._ATTRIBUTE.search(body, 100) is None:
            assert fast is not None and [e.key for e in fast[0]] == keys
            fast_pages += 1
            for until in (keys[0], keys[-1] + "~", keys[len(keys) // 2] + "\x00"):
                assert wire._fast_listing(body, False, until) == xml_reference.listing(body, False, until)
    assert fast_pages > 250


# ------------------------------------------------------------------ small answers

@st.composite
def small_answers(draw: st.DrawFn) -> tuple[str, bytes, Any]:
    """(kind, body, what it means) for the short answers: errors, CreateMultipartUpload, tagging,
    object parts, a 200's body that is an error or not."""
    s = make_style(draw(st.integers(0, 2**32)), draw(st.sampled_from([0.0, 0.05, 0.2, 0.5])))
    kind = draw(st.sampled_from(["error", "create-multipart", "tagging", "object-parts", "error-in-200"]))
    if kind == "error":
        code = draw(st.sampled_from(["NoSuchKey", "SlowDown", "AccessDenied", "SignatureDoesNotMatch"]))
        message = draw(key_text)
        inner = [element("Code", code, s), element("Message", message, s), element("RequestId", "4442587F", s)]
        if s.rng.random() < 0.2:  # wrapped, as other AWS services answer
            return kind, document("ErrorResponse", [element("Error", "".join(inner), s, raw=True)], s), (code, message.strip())
        return kind, document("Error", inner, s), (code, message.strip())
    if kind == "create-multipart":
        upload = draw(st.text("abcXYZ019-_.~/+=&<", min_size=1, max_size=20))
        return kind, document("InitiateMultipartUploadResult", [
            element("Bucket", "b", s), element("Key", draw(key_text), s), element("UploadId", upload, s)], s), upload
    if kind == "tagging":
        pairs = draw(st.lists(st.tuples(key_text, st.one_of(st.just(""), key_text)), max_size=4))
        tags = []
        for k, v in pairs:
            fields = [element("Key", k, s), element("Value", v, s)]
            tags.append(element("Tag", between(s).join(fields[::-1] if s.chance() else fields), s, raw=True))
        return kind, document("Tagging", [element("TagSet", "".join(tags), s, raw=True)], s), pairs
    if kind == "object-parts":
        n = draw(st.integers(1, 4))
        parts = [(i + 1, s.rng.randrange(1, 10**10), f"{s.rng.randrange(16**8):08x}==") for i in range(n)]
        truncated = draw(st.booleans())
        rows = []
        for number, size, checksum in parts:
            fields = [element("PartNumber", str(number), s), element("Size", str(size), s),
                      element("ChecksumSHA256", checksum, s)]
            rows.append(element("Part", between(s).join(s.rng.sample(fields, 3)), s, raw=True))
        holder = element("ObjectParts", element("IsTruncated", "true" if truncated else "false", s)
                         + element("NextPartNumberMarker", str(n), s) + "".join(rows), s, raw=True)
        root = s.rng.choice(["GetObjectAttributesOutput", "GetObjectAttributesResponse"])
        return kind, document(root, [element("ETag", "abc", s), holder], s), (parts, n if truncated else None)
    is_error = draw(st.booleans())
    root = "Error" if is_error else s.rng.choice(["CompleteMultipartUploadResult", "CopyObjectResult"])
    body = document(root, [element("Code" if is_error else "ETag", "InternalError", s)], s)
    return kind, s.rng.choice([b"", b"  \n", b"\n\n"]) + body, is_error


@SETTINGS
@given(small_answers())
def test_generated_small_answers_read_alike_and_as_written(answer: tuple[str, bytes, Any]) -> None:
    kind, body, want = answer
    fast, ref = READERS[kind]
    assert ref(body) == want
    assert fast(body) == want


# ------------------------------------------------------------------ cut short

@SETTINGS
@given(st.one_of(listings().map(lambda p: ("list-url" if p.encoded else "list", p.body)),
                 small_answers().map(lambda a: (a[0], a[1]))),
       st.floats(0.0, 0.999))
def test_answers_cut_short_are_refused_never_read_as_shorter(answer: tuple[str, bytes], where: float) -> None:
    """An answer cut anywhere (the connection failed mid-body) is refused as the reference refuses
    it: a listing never comes back as a shorter page, a 200 never as a success."""
    kind, body = answer
    cut = body[:int(len(body.rstrip()) * where)]
    fast, ref = READERS[kind]
    got = fast(cut)
    if kind == "error":
        assert isinstance(got, tuple)  # whatever a cut error names: never an exception
    elif kind == "error-in-200":
        assert got == ref(cut) == bool(cut.strip())
    else:
        assert got == ref(cut)
        assert got[0] == "refused"


def test_malformed_answers_are_refused_alike() -> None:
    """Not well-formed in ways a regex could read past: a bare &, an unknown entity, a reference
    to no character, a mismatched end tag, a second root."""
    page = (DATA / "aws-list-entities.xml").read_bytes()
    for bad in (page.replace(b"a&amp;b", b"a&b"), page.replace(b"a&amp;b", b"a&nbsp;b"),
                page.replace(b"&#x1;", b"&#x0;"), page.replace(b"&#x1;", b"&#xD800;"),
                page.replace(b"</Size>", b"</Sized>", 1), page + b"<ListBucketResult/>",
                page.replace(b"<Size>1</Size>", b"<Size>1_0</Size>")):
        assert listing_fast(bad, False) == listing_ref(bad, False) == ("refused", "Malformed")


# ------------------------------------------------------------------ one page, written many ways

PAGE = (f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="{S3_NS}"><Name>b</Name>'
        "<IsTruncated>true</IsTruncated>"
        "<Contents><Key>a&amp;b</Key><LastModified>2026-11-23T04:05:06.000Z</LastModified>"
        "<ETag>&quot;1&quot;</ETag><Size>1</Size><StorageClass>STANDARD</StorageClass></Contents>"
        "<Contents><Key>k2</Key><LastModified>2026-11-23T04:05:06.000Z</LastModified>"
        "<ETag>&quot;2&quot;</ETag><Size>2</Size><StorageClass>GLACIER</StorageClass></Contents>"
        "<Contents><Key>k3</Key><LastModified>2026-11-23T04:05:06.000Z</LastModified>"
        "<ETag>&quot;3&quot;</ETag><Size>3</Size><StorageClass>STANDARD</StorageClass></Contents>"
        "<NextContinuationToken>tok</NextContinuationToken></ListBucketResult>")
VARIANTS = {
    "key in CDATA": ("<Key>a&amp;b</Key>", "<Key><![CDATA[a&b]]></Key>"),
    "key split by a comment": ("<Key>k2</Key>", "<Key>k<!-- two -->2</Key>"),
    "comment holding an entry": ("<Contents><Key>k2", "<!-- <Contents><Key>x</Key></Contents> --><Contents><Key>k2"),
    "comment holding a size": ("<Size>2</Size>", "<!-- <Size>9</Size> --><Size>2</Size>"),
    "attribute on Contents": ("<Contents><Key>k3", '<Contents id="3"><Key>k3'),
    "attribute on Key": ("<Key>k3</Key>", "<Key lang='en'>k3</Key>"),
    "prefixed entry": ("<Contents><Key>k3</Key>", f'<s3:Contents xmlns:s3="{S3_NS}"><s3:Key>k3</s3:Key>'),
    "whitespace in tags": ("<Contents><Key>k3</Key>", "<Contents\n><Key >k3</Key >"),
    "storage class tag with a space": ("<StorageClass>GLACIER</StorageClass>", "<StorageClass >GLACIER</StorageClass>"),
    "storage class by reference": ("<StorageClass>GLACIER</StorageClass>", "<StorageClass>&#71;LACIER</StorageClass>"),
    "truncation flag with a space": ("<IsTruncated>true</IsTruncated>", "<IsTruncated >true</IsTruncated>"),
    "token in CDATA": ("<NextContinuationToken>tok", "<NextContinuationToken><![CDATA[tok]]>"),
    "processing instruction": ("<Contents><Key>k2", "<?app hint?><Contents><Key>k2"),
    "entity from a DOCTYPE": ('<ListBucketResult', '<!DOCTYPE ListBucketResult [<!ENTITY two "2">]><ListBucketResult'),
    "pretty-printed with CRLF": ("</Contents>", "\r\n  </Contents>\r\n"),
    "empty-element tags": ("<Name>b</Name>", "<Name/><Prefix/>"),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_one_page_written_many_ways_lists_the_same_keys(variant: str) -> None:
    """Valid XML that S3's regex readings could read wrong (an entry or a size inside a comment, an
    entry with an attribute no count sees, a truncation flag they miss): the same entries,
    truncation and token as the plain page, by the fast path or the reference."""
    old, new = VARIANTS[variant]
    body = PAGE.replace(old, new, 1)
    if variant == "entity from a DOCTYPE":
        body = body.replace("<Key>k2</Key>", "<Key>k&two;</Key>")
    if variant in ("prefixed entry", "whitespace in tags"):
        body = body.replace("</Contents><NextContinuationToken>",
                            ("</s3:Contents>" if variant == "prefixed entry" else "</Contents >") + "<NextContinuationToken>")
        body = body.replace("</Contents></s3:Contents>", "</s3:Contents>").replace("</Contents></Contents >", "</Contents >")
    want = wire.read_listing(PAGE.encode(), False)
    assert [e.key for e in want[0]] == ["a&b", "k2", "k3"] and want[1:] == (True, "tok")
    assert listing_ref(body.encode(), False) == want
    assert listing_fast(body.encode(), False) == want


def test_a_declared_encoding_other_than_utf8_is_read_as_declared() -> None:
    body = PAGE.replace('encoding="UTF-8"', 'encoding="ISO-8859-1"').replace("k3", "k\u00e9").encode("latin-1")
    assert [e.key for e in wire.read_listing(body, False)[0]] == ["a&b", "k2", "k\u00e9"]
