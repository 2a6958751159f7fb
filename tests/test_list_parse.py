"""ListObjectsV2 pages read by the fast one-match-per-object path give exactly what the reference
parser's reading gives (odd keys, XML entities, timestamps with and without fractions), and a page in another
field order falls back to the field-by-field reading. In-process, milliseconds."""

from __future__ import annotations

import random

import pytest

from s3bulk.stores.s3 import wire as w, xml_reference

KEYS = ["a&amp;b", "&lt;x&gt;", "plain", "é日😀", "a&#x1F600;", "q&quot;", "%2Fenc%20oded"]
TIMES = ["2024-01-01T00:00:00.000Z", "2023-05-06T07:08:09Z", "2023-05-06T07:08:09.5Z", "2024-02-29T23:59:59.999+00:00"]
ETAGS = ["&quot;abc&quot;", "&quot;d41d8cd98f00b204e9800998ecf8427e-3&quot;", '"raw"']


def page(entries: list[tuple[str, str, str, int]], s3_order: bool = True, versitygw: bool = False) -> bytes:
    parts = []
    for i, (k, lm, et, size) in enumerate(entries):
        if versitygw:  # LastModified first, checksum fields, ETag quoted as &#34;, Key, Size, StorageClass
            et = et.replace("&quot;", "&#34;")
            sc = ("<StorageClass>STANDARD</StorageClass>", "")[i % 2]
            parts.append(f"<Contents><LastModified>{lm}</LastModified><ChecksumAlgorithm>CRC32</ChecksumAlgorithm>"
                         f"<ChecksumType>FULL_OBJECT</ChecksumType><ETag>{et}</ETag><Key>{k}</Key>"
                         f"<Size>{size}</Size>{sc}</Contents>")
        elif s3_order:  # storage classes vary, and some servers leave it out
            sc = ("<StorageClass>STANDARD</StorageClass>", "<Owner><ID>x</ID></Owner><StorageClass>GLACIER_IR"
                  "</StorageClass>", "")[i % 3]
            parts.append(f"<Contents><Key>{k}</Key><LastModified>{lm}</LastModified><ETag>{et}</ETag>"
                         f"<ChecksumAlgorithm>CRC32</ChecksumAlgorithm><Size>{size}</Size>{sc}</Contents>")
        else:
            parts.append(f"<Contents><Key>{k}</Key><Size>{size}</Size><ETag>{et}</ETag>"
                         f"<LastModified>{lm}</LastModified></Contents>")
    return ("<ListBucketResult>" + "".join(parts) + "</ListBucketResult>").encode()


def field_by_field(body: bytes, encoded: bool) -> list[tuple[str, int, float, str | None, str | None]]:
    """The page as the reference parser reads it (stores/s3/xml_reference.py: ElementTree), which
    also reads the pages the fast path leaves."""
    return [tuple(e) for e in xml_reference.listing(body, encoded)[0]]  # type: ignore[misc]


@pytest.mark.unit
def test_fast_listing_parse_matches_the_field_by_field_one() -> None:
    rng = random.Random(1)
    for _ in range(300):
        entries = [(rng.choice(KEYS) + str(i), rng.choice(TIMES), rng.choice(ETAGS), rng.randint(0, 10**12))
                   for i in range(rng.randint(0, 6))]
        encoded = rng.random() < 0.3
        body = page(entries)
        assert w._fast_entries(body, encoded) == field_by_field(body, encoded)
        # versitygw's field order is read as fast, to the same entries
        vgw = page(entries, versitygw=True)
        got = w._fast_entries(vgw, encoded)
        assert got == field_by_field(vgw, encoded)
        assert [e[:4] for e in got] == [e[:4] for e in field_by_field(body, encoded)]  # '&#34;' is '"'
        if entries:
            assert w._fast_entries(page(entries, s3_order=False), encoded) is None
            # an ETag with an entity or a quote inside its quotes: that page is read field by field
            odd = [(k, lm, "&quot;a&amp;b&quot;" if i == 0 else et, size) for i, (k, lm, et, size) in enumerate(entries)]
            assert w._fast_entries(page(odd), encoded) is None
            assert field_by_field(page(odd), encoded)[0][3] == "a&b"


# ---------------------------------------------------------------- odd keys, as S3 escapes them

# (the key, the text of <Key> as S3 writes it: & < > " escaped, control characters as &#x..;)
ODD_KEYS = [
    ("a&b", "a&amp;b"),
    ("<x>", "&lt;x&gt;"),
    ("<![CDATA[not]]>", "&lt;![CDATA[not]]&gt;"),
    ('q"uote\'s', "q&quot;uote's"),
    ("ctl\x01\x1f\x7f", "ctl&#x1;&#x1F;\x7f"),
    ("tab\tnl\ncr\r", "tab\tnl\n" + "cr&#xD;"),
    ("smile\U0001F600", "smile\U0001F600"),
    ("ref\U0001F600", "ref&#x1F600;"),
    ("dec\U0001F600", "dec&#128512;"),
    ("amp-text&amp;", "amp-text&amp;amp;"),
    ("日本/ü/\u00a0nbsp", "日本/ü/\u00a0nbsp"),
]


@pytest.mark.unit
def test_odd_keys_are_read_as_s3_meant_them() -> None:
    """Entities, CDATA-looking text, control characters (which XML 1.0 forbids, so an XML parser
    refuses the page: bench/list_parse_bench.py), characters above U+FFFF raw and as references."""
    entries = [(text, "2026-11-23T04:05:06.000Z", "&quot;abc&quot;", i) for i, (_, text) in enumerate(ODD_KEYS)]
    body = page(entries)
    got = w._fast_entries(body, False)
    assert got is not None
    assert [k for k, *_ in got] == [k for k, _ in ODD_KEYS]
    assert [size for _, size, *_ in got] == list(range(len(ODD_KEYS)))
    assert {etag for _, _, _, etag, _ in got} == {"abc"}
    # the field-by-field reading (pages in another order) agrees
    assert [k for k, *_ in field_by_field(page(entries, s3_order=False), False)] == [k for k, _ in ODD_KEYS]


def test_odd_keys_listed_from_a_real_server(s3, bucket) -> None:
    """LocalStack writes the listing; the lean path reads back every odd key exactly."""
    import asyncio

    from s3bulk.stores import StoreOptions, open_store
    from s3bulk.model import WorkUnit
    from s3bulk.config.urls import S3Options, parse_location

    keys = sorted(k for k, _ in ODD_KEYS)
    for k in keys:
        s3.put_object(Bucket=bucket, Key="odd/" + k, Body=k.encode())

    async def listed() -> list[str]:
        store = await open_store(parse_location(f"s3://{bucket}/odd/", S3Options(endpoint_url=s3.meta.endpoint_url)),
                                 StoreOptions(lean=True))
        try:
            page_ = await store.list_page("odd/", WorkUnit(), 1000)
            return [e.key for e in page_.entries]
        finally:
            await store.close()

    assert asyncio.run(listed()) == sorted(("odd/" + k for k in keys), key=lambda k: k.encode())


@pytest.mark.unit
def test_fast_parse_stops_after_the_first_key_above_until() -> None:
    """A split key range (after, until] is listed with a full page: the entries beyond `until` are
    not converted, except the first one, which tells the caller the page went past its range."""
    keys = [f"k{i:03d}" for i in range(50)] + ["k\U0001F600", "l"]
    body = page([(k, TIMES[0], ETAGS[0], 1) for k in keys])
    full = w._fast_entries(body, False)
    assert full is not None and [e[0] for e in full] == keys
    assert w._fast_entries(body, False, "k010") == full[:12]  # k000..k010, then k011
    # U+1F600 sorts above U+FFFF, as in UTF-8: it is the first key past the range, "l" is not read
    assert w._fast_entries(body, False, "k\uffff") == full[:-1]
    assert w._fast_entries(body, False, "k\U0001F600") == full
    assert w._fast_entries(body, False, "z") == full
    vgw = [e[:4] for e in w._fast_entries(page([(k, TIMES[0], ETAGS[0], 1) for k in keys], versitygw=True),
                                          False, "k010") or []]
    assert vgw == [e[:4] for e in full[:12]]


@pytest.mark.unit
def test_plain_pages_read_at_once_match_and_stop_after_the_range() -> None:
    """A page whose keys hold no entity (most pages) is read in one pass; with `until` its entries end
    at the first key past it, as the one-match-at-a-time reading's do."""
    rng = random.Random(2)
    for _ in range(200):
        keys = sorted({f"{rng.choice(['plain', 'é日😀', 'k'])}{rng.randint(0, 99):02d}" for _ in range(rng.randint(1, 8))})
        entries = [(k, rng.choice(TIMES), rng.choice(ETAGS[:2]), rng.randint(0, 10**12)) for k in keys]
        for body in (page(entries), page(entries, versitygw=True)):
            assert w._NOT_QUOTE.search(body) is None  # the one-pass reading applies
            whole = field_by_field(body, False)
            assert w._fast_entries(body, False) == whole
            until = rng.choice(keys) + rng.choice(["", "0", "~"])
            past = next((i for i, e in enumerate(whole) if e[0] > until), len(whole) - 1)
            assert w._fast_entries(body, False, until) == whole[:past + 1]
