"""A listing in an unusual but valid XML formatting lists the right keys, and a listing cut
mid-element is retried or refused in one line, through a real server: tests/faultproxy.py in front
of LocalStack rewrites each ListObjectsV2 answer (keys in CDATA sections, a comment and an
attribute on every entry, every element under a namespace prefix), on both data paths. The
readers themselves are compared with the reference in tests/test_xml_differential.py."""

from __future__ import annotations

import asyncio
import html
import json
import re

import pytest

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
KEYS = ["p/a&b", "p/x<y>.txt", "p/é日本", "p/sp ace", "p/q\"uote's", "p/]]>end", "p/plain", "p/sub/deep"]


@pytest.fixture(params=["lean", "botocore"])
def data_path(request, monkeypatch) -> str:
    monkeypatch.setenv("S3BULK_DATA_PATH", request.param)
    return request.param


def unusual(body: bytes, prefixed: bool = True) -> bytes:
    """A plain listing (LocalStack's) written another valid way: every element prefixed (s3:,
    declared on the root) or none, keys in CDATA sections, a comment before and an attribute on
    every entry, entries on lines of their own."""
    text = body.decode("utf-8")
    text = re.sub(r"<(/?)([A-Za-z]+)(?=[ >/])", r"<\1s3:\2", text)
    text = text.replace("<s3:ListBucketResult", f'<s3:ListBucketResult xmlns:s3="{S3_NS}"', 1)

    def cdata(m: re.Match[str]) -> str:
        return "<s3:Key><![CDATA[" + html.unescape(m.group(1)).replace("]]>", "]]]]><![CDATA[>") + "]]></s3:Key>"
    text = re.sub(r"<s3:Key>([^<]*)</s3:Key>", cdata, text)
    text = text.replace("<s3:Contents>", '\n  <!-- an entry --><s3:Contents n="1">')
    if not prefixed:
        text = text.replace("<s3:", "<").replace("</s3:", "</")
    return text.encode("utf-8")


def is_listing(method: str, target: str, body: bytes) -> bool:
    return method == "GET" and "list-type=2" in target and b"ListBucketResult" in body[:300]


def rewrite_listings(method: str, target: str, headers: dict[str, str], body: bytes) -> bytes | None:
    return unusual(body) if is_listing(method, target, body) else None


def rewrite_listings_unprefixed(method: str, target: str, headers: dict[str, str], body: bytes) -> bytes | None:
    return unusual(body, prefixed=False) if is_listing(method, target, body) else None


def cut_listings(times: int):
    """An edit: the first `times` listing answers cut two thirds of the way (mid-element)."""
    def edit(method: str, target: str, headers: dict[str, str], body: bytes) -> bytes | None:
        if not is_listing(method, target, body) or edit.done >= times:  # type: ignore[attr-defined]
            return None
        edit.done += 1  # type: ignore[attr-defined]
        return body[:len(body) * 2 // 3]
    edit.done = 0  # type: ignore[attr-defined]
    return edit


@pytest.fixture
def odd_bucket(s3, bucket) -> str:
    for k in KEYS:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    return bucket


@pytest.mark.unit
def test_the_rewritten_listing_is_unusual() -> None:
    page = (f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="{S3_NS}"><IsTruncated>false'
            "</IsTruncated><Prefix /><Contents><Key>a&amp;b]]&gt;</Key><Size>1</Size></Contents></ListBucketResult>")
    assert unusual(page.encode()).decode() == (
        f'<?xml version="1.0" encoding="UTF-8"?><s3:ListBucketResult xmlns:s3="{S3_NS}" xmlns="{S3_NS}">'
        "<s3:IsTruncated>false</s3:IsTruncated><s3:Prefix />\n  <!-- an entry -->"
        '<s3:Contents n="1"><s3:Key><![CDATA[a&b]]]]><![CDATA[>]]></s3:Key><s3:Size>1</s3:Size></s3:Contents>'
        "</s3:ListBucketResult>")


@pytest.mark.parametrize("prefixed", [True, False], ids=["prefixed", "attributes"])
def test_ls_and_copy_of_a_listing_in_another_formatting_get_exactly_the_keys(
        cli, odd_bucket, fault_proxy, tmp_path, data_path, prefixed) -> None:
    """(Before the reference reader, the lean path refused the prefixed pages and read the others
    as empty: an entry with an attribute was not counted.)"""
    fault_proxy.edits.append(rewrite_listings if prefixed else rewrite_listings_unprefixed)
    run = cli("ls", f"s3://{odd_bucket}/p/", "--json", "--endpoint-url", fault_proxy.url)
    assert run.code == 0, run.err
    assert sorted(json.loads(line)["key"] for line in run.out.splitlines()) == sorted(KEYS)
    assert fault_proxy.counts["edited"] >= 1
    dst = tmp_path / "dst"
    run = cli("copy", f"s3://{odd_bucket}/p/", str(dst), "--endpoint-url", fault_proxy.url)
    assert run.code == 0, run.err
    got = {str(f.relative_to(dst)): f.read_bytes() for f in dst.rglob("*") if f.is_file()}
    assert got == {k[2:]: k.encode() for k in KEYS}


def test_pages_in_another_formatting_follow_their_tokens(s3, odd_bucket, fault_proxy) -> None:
    """Two keys a page: truncation flags and continuation tokens read from the prefixed pages, on the
    lean path (the store's own reading, not the CLI's split ranges)."""
    from s3bulk.config.urls import S3Options, parse_location
    from s3bulk.model import WorkUnit
    from s3bulk.stores import StoreOptions, open_store

    fault_proxy.edits.append(rewrite_listings)

    async def listed() -> list[str]:
        store = await open_store(parse_location(f"s3://{odd_bucket}/p/", S3Options(endpoint_url=fault_proxy.url)),
                                 StoreOptions(lean=True))
        try:
            keys, unit = [], WorkUnit()
            for _ in range(20):
                page = await store.list_page("p/", unit, 2)
                keys += [e.key for e in page.entries]
                if page.next_after is None and page.next_token is None:
                    return keys
                unit = WorkUnit(after=page.next_after, token=page.next_token)
            raise AssertionError("the listing did not end")
        finally:
            await store.close()

    assert asyncio.run(listed()) == sorted(KEYS, key=lambda k: k.encode())
    assert fault_proxy.counts["edited"] >= 4


def test_a_listing_cut_mid_element_once_is_read_again(cli, odd_bucket, fault_proxy, data_path) -> None:
    fault_proxy.edits.append(cut_listings(1))
    run = cli("ls", f"s3://{odd_bucket}/p/", "--json", "--endpoint-url", fault_proxy.url)
    assert run.code == 0, run.err
    assert sorted(json.loads(line)["key"] for line in run.out.splitlines()) == sorted(KEYS)
    assert fault_proxy.counts["edited"] == 1


def test_a_listing_always_cut_is_refused_in_one_line(cli, odd_bucket, fault_proxy, tmp_path, data_path) -> None:
    """Never a shorter listing taken for the whole, never a traceback: the run gives up after its
    retries with the reason in one line, and copies nothing."""
    fault_proxy.edits.append(cut_listings(10**6))
    dst = tmp_path / "dst"
    run = cli("copy", f"s3://{odd_bucket}/p/", str(dst), "--endpoint-url", fault_proxy.url,
              "--retries", "2", "--retry-max-time", "60")
    assert run.code != 0
    assert "Traceback" not in run.err
    lines = [line for line in run.err.splitlines() if line.strip()]
    assert len(lines) == 1, run.err
    assert ("not S3 XML" if data_path == "lean" else "list") in lines[0]
    assert not dst.exists() or not any(f.is_file() for f in dst.rglob("*"))
