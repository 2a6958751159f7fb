"""The exact-layout listing reader (stores/s3/list_exact.py) against the reference parser: pages in
S3's and versitygw's layouts (checksum fields or none, a storage class or none, each server's ETag
quotes, non-ASCII keys, empty pages, a continuation token holding an entity) are read by it, to
the reference's entries; pages it must not read (an entity in a key, an Owner, a RestoreStatus,
whitespace, a time in other digits, an odd class) are handed back (None) and still read right by
wire.py. In-process, well under a second."""

from __future__ import annotations

import random

import pytest

from s3bulk.stores.s3 import list_exact, wire, xml_reference

pytestmark = pytest.mark.unit

NS = "http://s3.amazonaws.com/doc/2006-03-01/"
KEYS = ["obj-1", "a/b/c.parquet", "é日本😀", "sp ace+%2F", "x'y", "tab\tin", "~tilde", "ünï/cödé"]
TIMES = ["2026-11-23T04:05:06.000Z", "2026-11-23T04:05:06Z", "2024-02-29T23:59:59.999Z", "2023-05-06T07:08:09.5Z"]
CLASSES = ["STANDARD", "GLACIER", "INTELLIGENT_TIERING", ""]
CHECKSUMS = ["", "<ChecksumAlgorithm>CRC32</ChecksumAlgorithm>",
             "<ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType>"]


def entry(key: str, when: str, etag: str, size: int, sc: str, checksum: str, quote: str, gateway: bool,
          extra: str = "") -> str:
    cls = f"<StorageClass>{sc}</StorageClass>" if sc else ""
    if gateway:
        return (f"<Contents><LastModified>{when}</LastModified>{checksum}<ETag>{quote}{etag}{quote}</ETag>"
                f"<Key>{key}</Key><Size>{size}</Size>{cls}{extra}</Contents>")
    return (f"<Contents><Key>{key}</Key><LastModified>{when}</LastModified><ETag>{quote}{etag}{quote}</ETag>"
            f"{checksum}<Size>{size}</Size>{extra}{cls}</Contents>")


def page(rows: list[str], token: str | None = None) -> bytes:
    more = f"<IsTruncated>true</IsTruncated><NextContinuationToken>{token}</NextContinuationToken>" if token \
        else "<IsTruncated>false</IsTruncated>"
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="{NS}"><Name>b</Name>'
            f"<Prefix></Prefix><KeyCount>{len(rows)}</KeyCount>{more}{''.join(rows)}</ListBucketResult>").encode()


def random_page(rng: random.Random, gateway: bool, quote: str, **odd: str) -> tuple[bytes, list[str]]:
    keys = sorted({rng.choice(KEYS) + str(rng.randrange(1000)) for _ in range(rng.randint(1, 8))})
    rows = [entry(k, rng.choice(TIMES), f"{rng.randrange(16**32):032x}" + rng.choice(["", "-3"]),
                  rng.randrange(10**12), rng.choice(CLASSES), rng.choice(CHECKSUMS), quote, gateway)
            for k in keys]
    if odd:
        i = rng.randrange(len(rows))
        rows[i] = rows[i].replace(odd["old"], odd["new"], 1)
    return page(rows, rng.choice([None, "tok", "a&amp;b"])), keys


@pytest.mark.parametrize("gateway", [False, True], ids=["s3-order", "versitygw-order"])
@pytest.mark.parametrize("quote", ["&quot;", "&#34;", '"'])
def test_exact_pages_are_read_by_the_exact_reader_as_the_reference_reads_them(gateway: bool, quote: str) -> None:
    rng = random.Random(7)
    for _ in range(150):
        body, keys = random_page(rng, gateway, quote)
        got = list_exact.entries(body, gateway, None)
        assert got is not None, body
        assert got == xml_reference.listing(body, False)[0]
        assert [e.key for e in got] == keys
        assert wire.read_listing(body, False) == xml_reference.listing(body, False)
        for until in (keys[0], keys[-1] + "~", keys[len(keys) // 2] + "\x00"):
            assert list_exact.entries(body, gateway, until) == xml_reference.listing(body, False, until)[0]


ODD = {
    "entity in a key": ("<Key>", "<Key>a&amp;b"),
    "character reference in a key": ("<Key>", "<Key>&#x1;"),
    "escaped quote in a key": ("<Key>", "<Key>q&quot;"),
    "owner": ("<Size>", "<Owner><ID>x</ID><DisplayName>me</DisplayName></Owner><Size>"),
    "restore status": ("</Contents>", "<RestoreStatus><IsRestoreInProgress>false</IsRestoreInProgress>"
                                      "</RestoreStatus></Contents>"),
    "whitespace": ("<Size>", "\n  <Size>"),
    "time in other digits": ("<LastModified>2", "<LastModified>\u0662"),
    "entity in a class": ("<StorageClass>", "<StorageClass>A&amp;"),
    "odd class": ("<StorageClass>", "<StorageClass>\u00e9"),
    "unknown element": ("</Contents>", "<Foo>1</Foo></Contents>"),
    "empty-element key": ("<Key>", "<Key/><Kx>"),
}


@pytest.mark.parametrize("odd", ODD, ids=list(ODD))
@pytest.mark.parametrize("gateway", [False, True], ids=["s3-order", "versitygw-order"])
def test_pages_outside_the_exact_layout_are_handed_back_and_read_right(odd: str, gateway: bool) -> None:
    old, new = ODD[odd]
    rng = random.Random(11)
    handed_back = 0
    for _ in range(40):
        body, _ = random_page(rng, gateway, "&quot;", old=old, new=new)
        if old.encode() not in body:  # the random page had no such element (no class, say)
            continue
        try:
            exact = list_exact.entries(body, gateway, None)
        except ValueError:
            exact = None
        if exact is None:
            handed_back += 1
        else:  # what it reads, it reads as the reference does
            assert exact == xml_reference.listing(body, False)[0]
        try:
            want = xml_reference.listing(body, False)
        except Exception as exc:  # the reference refuses it: so must the whole reader
            with pytest.raises(type(exc)):
                wire.read_listing(body, False)
        else:
            assert wire.read_listing(body, False) == want
    assert handed_back > 0


def test_empty_pages_and_pages_without_etags_are_left_to_the_general_reader() -> None:
    for body in (page([]), page([], "tok"), page(["<Contents><Key>k</Key><LastModified>2026-11-23T04:05:06Z</LastModified><Size>1</Size></Contents>"])):
        assert list_exact.entries(body, False, None) is None
        assert wire.read_listing(body, False) == xml_reference.listing(body, False)


@pytest.mark.parametrize("gateway", [False, True], ids=["s3-order", "versitygw-order"])
def test_times_and_classes_beyond_the_remembered_ones_are_read_from_the_page(gateway: bool) -> None:
    """The shared tables of times (4,096) and classes (64) fill up: entries then take their time and
    class from the page's own table, the same values the reference reads."""
    rows = [entry(f"k{i:05d}", f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                  f"{i:032x}", i, f"CLASS{i % 80}", "", "&quot;", gateway) for i in range(4200)]
    body = page(rows)
    want = xml_reference.listing(body, False)[0]
    for _ in range(2):  # the second time with the tables as the first left them
        assert list_exact.entries(body, gateway, None) == want
    assert list_exact.entries(page([entry("k", "2026-13-01T00:00:00Z", "e", 1, "", "", '"', gateway)]),
                              gateway, None) is None  # no such month: the general reader says why
