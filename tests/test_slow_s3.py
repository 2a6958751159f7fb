"""bench/slow_s3.py, the delayed synthetic S3 endpoint of the listing benchmark, must answer as S3 does:
botocore (what boto3 and aws-cli parse with) and `s3bulk ls` read every key from it, paged, in order.
If it did not, the benchmark would time tools against a server that misleads them."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import botocore.config
import botocore.session
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import slow_s3  # noqa: E402


@pytest.fixture(scope="module")
def dated():
    srv = slow_s3.start_thread("dated", keys=2500, size=100, delay_ms=5, per_dir=100)
    yield srv
    srv.stop()


def client(url: str):
    return botocore.session.get_session().create_client(
        "s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test",
        config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def test_botocore_lists_paged_with_start_after_and_delimiter(dated):
    s3 = client(dated.url)
    want = slow_s3.make_keys("dated", 2500, per_dir=100)
    pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket="b", PaginationConfig={"PageSize": 300}))
    got = [o["Key"] for p in pages for o in p.get("Contents", [])]
    assert got == want
    assert len(pages) == 9 and all(p["KeyCount"] == 300 for p in pages[:-1]) and pages[-1]["KeyCount"] == 100
    first = pages[0]["Contents"][0]
    assert first["Size"] == 100 and first["LastModified"].year == 2024
    assert first["ETag"] == '"%s"' % hashlib.md5(slow_s3.synth_body(want[0], 100)).hexdigest()

    after = s3.list_objects_v2(Bucket="b", StartAfter=want[1234], MaxKeys=5)
    assert [o["Key"] for o in after["Contents"]] == want[1235:1240] and after["IsTruncated"]

    top = s3.list_objects_v2(Bucket="b", Delimiter="/")
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == ["year=2020/"] and "Contents" not in top
    days = [p["Prefix"] for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket="b", Prefix="year=2020/month=01/", Delimiter="/", PaginationConfig={"PageSize": 10})
        for p in page.get("CommonPrefixes", [])]
    assert days == [f"year=2020/month=01/day={d:02d}/" for d in range(1, 26)]
    leaf = s3.list_objects_v2(Bucket="b", Prefix="year=2020/month=01/day=03/", Delimiter="/")
    assert [o["Key"] for o in leaf["Contents"]] == want[200:300] and not leaf.get("CommonPrefixes")


def test_botocore_heads_gets_puts_and_deletes(dated):
    s3 = client(dated.url)
    key = slow_s3.make_keys("dated", 2500, per_dir=100)[7]
    body = slow_s3.synth_body(key, 100)
    head = s3.head_object(Bucket="b", Key=key)
    assert head["ContentLength"] == 100 and head["ETag"] == '"%s"' % hashlib.md5(body).hexdigest()
    assert s3.get_object(Bucket="b", Key=key)["Body"].read() == body
    part = s3.get_object(Bucket="b", Key=key, Range="bytes=10-19")
    assert part["Body"].read() == body[10:20] and part["ContentRange"] == "bytes 10-19/100"
    s3.head_bucket(Bucket="b")
    assert s3.get_bucket_location(Bucket="b")["LocationConstraint"] is None
    with pytest.raises(s3.exceptions.NoSuchKey):
        s3.get_object(Bucket="b", Key="year=2020/none")

    s3.put_object(Bucket="b", Key="year=2020/added é", Body=b"hello")
    assert s3.get_object(Bucket="b", Key="year=2020/added é")["Body"].read() == b"hello"
    listed = s3.list_objects_v2(Bucket="b", Prefix="year=2020/a")["Contents"]
    assert [(o["Key"], o["Size"]) for o in listed] == [("year=2020/added é", 5)]
    s3.delete_object(Bucket="b", Key="year=2020/added é")
    assert s3.list_objects_v2(Bucket="b", Prefix="year=2020/a")["KeyCount"] == 0


def test_s3bulk_ls_lists_every_key_in_order():
    srv = slow_s3.start_thread("hashed", keys=2500, size=100, delay_ms=20)
    try:
        env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
                   AWS_EC2_METADATA_DISABLED="true")
        env.pop("AWS_PROFILE", None)
        r = subprocess.run([sys.executable, "-m", "s3bulk", "ls", "s3://b/", "--endpoint-url", srv.url], env=env,
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        srv.stop()
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert [line.split()[-1] for line in lines] == slow_s3.make_keys("hashed", 2500)
    assert all(line.split()[-2] == "100" for line in lines)


def test_listing_pages_match_s3_order_and_rollup_for_odd_keys():
    """Keys above U+FFFF, keys that prefix others, prefixes ending mid-name: every page sequence, for any page
    size, prefix and delimiter, gives exactly the keys and common prefixes S3 would, in UTF-8 byte order."""
    import random
    import xml.etree.ElementTree as ET
    from urllib.parse import quote, unquote

    rng = random.Random(11)
    alphabet = ["a", "b", "/", "é", "\U0001f600", "\uffff", "-", "~", " "]
    keys = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(400)},
                  key=lambda k: k.encode())
    backend = slow_s3.S3Backend({"b": slow_s3.Bucket("b", [], 0)})
    for k in reversed(keys):
        backend.buckets["b"].put(k, k.encode())
    ns = {"s": slow_s3.NS}
    for _ in range(60):
        prefix = rng.choice(["", "a", "a/", "é", "\U0001f600", "b/a"])
        delim = rng.choice(["", "/", "a"])
        after = rng.choice([None, "a", "a/\U0001f600", "b"])
        page = rng.choice([1, 2, 7, 1000])
        want: list[tuple[str, str]] = []
        for k in keys:
            if not k.startswith(prefix) or (after is not None and k.encode() <= after.encode()):
                continue
            d = k.find(delim, len(prefix)) if delim else -1
            item = ("p", k[:d + len(delim)]) if d >= 0 else ("k", k)
            if not want or want[-1] != item:
                want.append(item)
        got: list[tuple[str, str]] = []
        token = None
        for _ in range(1000):
            q = {"list-type": "2", "encoding-type": "url", "max-keys": str(page), "prefix": prefix}
            if delim:
                q["delimiter"] = delim
            if token:
                q["continuation-token"] = token
            elif after is not None:
                q["start-after"] = after
            status, _, body, _ = backend.handle("GET", "/b?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in q.items()),
                                                {}, b"")
            assert status == 200, body
            root = ET.fromstring(body)
            items = [("k", unquote(e.text or "")) for e in root.findall("s:Contents/s:Key", ns)]
            items += [("p", unquote(e.text or "")) for e in root.findall("s:CommonPrefixes/s:Prefix", ns)]
            assert len(items) <= page and int(root.findtext("s:KeyCount", namespaces=ns)) == len(items)
            got += sorted(items, key=lambda it: it[1].encode())
            if root.findtext("s:IsTruncated", namespaces=ns) != "true":
                break
            token = root.findtext("s:NextContinuationToken", namespaces=ns)
        assert got == want, (prefix, delim, after, page)


@pytest.mark.parametrize("shape", slow_s3.SHAPES)
def test_pre_rendered_pages_are_byte_for_byte_the_pages_built_key_by_key(shape):
    """The listing's fast path (each key's <Contents> rendered once, a page is a slice) must answer
    exactly what the key-by-key path answers, for V1 and V2, both encodings, prefixes, start-after,
    markers, max-keys and delimiters: otherwise the benchmark would time tools against other answers."""
    import random
    from urllib.parse import quote

    keys = slow_s3.make_keys(shape, 2000, per_dir=100)
    fast = slow_s3.S3Backend({"b": slow_s3.Bucket("b", list(keys), 100)})
    fast.buckets["b"].render()
    slow = slow_s3.S3Backend({"b": slow_s3.Bucket("b", list(keys), 100)})
    rnd = random.Random(11)
    for _ in range(400):
        q: dict[str, str] = {}
        if rnd.random() < .5:
            q["list-type"] = "2"
        if rnd.random() < .5:
            q["encoding-type"] = "url"
        if rnd.random() < .5:
            q["prefix"] = rnd.choice(keys)[:rnd.randint(0, 12)]
        if rnd.random() < .5:
            q["start-after" if "list-type" in q else "marker"] = rnd.choice(keys)[:rnd.randint(0, 30)]
        if rnd.random() < .5:
            q["max-keys"] = str(rnd.choice([0, 1, 5, 999, 1000, 2000]))
        if rnd.random() < .2:
            q["delimiter"] = "/"
        target = "/b?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in q.items())
        assert fast.handle("GET", target, {}, b"") == slow.handle("GET", target, {}, b""), target
    assert fast.keys_listed == slow.keys_listed > 0
