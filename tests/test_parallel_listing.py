"""Parallel listing against a real S3 (LocalStack): one prefix listed through many key ranges at
once (engine/listing/units.py) still copies, syncs (with --delete) and lists every key exactly once, in
S3's order, for the awkward keys: code points above U+FFFF, keys that are prefixes of other keys,
date-partitioned, numbered and hashed names. Small pages make a few hundred keys split many times."""

from __future__ import annotations

import asyncio
import hashlib

from conftest import bucket_tree, put_tree, read_tree
from faultproxy import Faults

from s3bulk.api import ls_async
from s3bulk.config.urls import S3Options


def awkward_keys() -> dict[str, bytes]:
    keys = [f"dated/year=202{y}/month={m:02d}/day={d:02d}/part-{p}.csv"
            for y in (3, 4) for m in (1, 2, 11) for d in (1, 9, 10, 28) for p in range(3)]
    keys += [f"flat/obj-{i:05d}" for i in range(0, 1200, 9)]
    keys += [f"hashed/{hashlib.md5(str(i).encode()).hexdigest()[:8]}/o{i}" for i in range(80)]
    keys += ["odd/a", "odd/a/b", "odd/a/b/c", "odd/ab", "odd/a-", "odd/a0", "odd/\U0001F600", "odd/\U0001F600/x",
             "odd/\U0010FFFD", "odd/\ue000", "odd/é", "odd/日本/語", "odd/~", "odd/z"]
    return {k: k.encode() * 2 for k in keys}


def as_files(objects: dict[str, bytes]) -> dict[str, bytes]:
    """Without the keys that a local tree cannot hold beside others (`a` when `a/b` exists)."""
    return {k: v for k, v in objects.items() if not any(o.startswith(k + "/") for o in objects)}


def test_copy_and_sync_delete_over_split_units(cli, s3, make_bucket, tmp_path):
    src, dst, files = make_bucket(), make_bucket(), make_bucket()
    objects = awkward_keys()
    put_tree(s3, src, objects)
    # S3 -> local over split units
    local = as_files(objects)
    put_tree(s3, files, local)
    out = tmp_path / "out"
    r = cli("copy", f"s3://{files}/", str(out), "--page-size", "7", "-w", "2", "--json", "--no-journal")
    assert r.code == 0, r
    assert r.summary["copied"] == len(local), r.summary
    assert read_tree(out) == local
    # S3 -> S3 sync --delete: DST has extra keys inside every range and lacks some of SRC's
    extra = {k + "-extra": b"x" for k in list(objects)[::5]} | {"zzz-after-all": b"x"}
    kept = {k: v for i, (k, v) in enumerate(objects.items()) if i % 3}
    put_tree(s3, dst, kept | extra)
    r = cli("sync", f"s3://{src}/", f"s3://{dst}/", "--delete", "--page-size", "7", "-w", "2", "--json",
            "--no-journal")
    assert r.code == 0, r
    assert bucket_tree(s3, dst) == objects
    assert r.summary["deleted"] == len(extra), r.summary
    # a second sync finds nothing to do
    r = cli("sync", f"s3://{src}/", f"s3://{dst}/", "--delete", "--page-size", "7", "--json", "--no-journal")
    assert r.code == 0 and r.summary["copied"] == 0 and r.summary["deleted"] == 0, r.summary


def test_ls_lists_ranges_at_once_in_key_order(endpoint, s3, bucket, make_fault_proxy):
    """Each listing takes 0.2 s at the proxy (a remote region): several are in flight at once, and
    the output is still every key once, in UTF-8 byte order."""
    objects = awkward_keys()
    put_tree(s3, bucket, objects)
    proxy = make_fault_proxy(endpoint, rates=Faults(stall=1.0, stall_seconds=0.2,
                                                      only=lambda method, target: "list-type=2" in target))

    async def listed() -> list[str]:
        return [o.key async for o in ls_async(f"s3://{bucket}/", s3=S3Options(endpoint_url=proxy.url), page_size=10)]

    keys = asyncio.run(listed())
    assert keys == sorted(objects, key=lambda k: k.encode("utf-8"))
    print(f"{len(keys)} keys, {proxy.counts['stall']} list requests, at most {proxy.max_in_flight} at once")
    assert proxy.max_in_flight >= 4


def test_ls_cli_prints_every_key_in_order(cli, s3, bucket):
    objects = awkward_keys()
    put_tree(s3, bucket, objects)
    r = cli("ls", f"s3://{bucket}/", "--json")
    assert r.code == 0, r
    keys = [e["key"] for e in r.events]
    assert keys == sorted(objects, key=lambda k: k.encode("utf-8"))


def test_ls_unordered_lists_every_key_once(endpoint, s3, bucket, make_fault_proxy):
    """`ls --unordered` prints pages as they arrive: every key exactly once, each page in key
    order within itself, with several listings in flight at once (0.2 s each at the proxy)."""
    objects = awkward_keys()
    put_tree(s3, bucket, objects)
    proxy = make_fault_proxy(endpoint, rates=Faults(stall=1.0, stall_seconds=0.2,
                                                      only=lambda method, target: "list-type=2" in target))

    async def listed() -> list[list[str]]:
        from s3bulk.api import ls_pages_async

        return [[o.key for o in page] async for page in ls_pages_async(
            f"s3://{bucket}/", s3=S3Options(endpoint_url=proxy.url), page_size=10, ordered=False)]

    pages = asyncio.run(listed())
    keys = [k for page in pages for k in page]
    assert sorted(keys) == sorted(objects) and len(keys) == len(objects)
    for page in pages:
        assert page == sorted(page, key=lambda k: k.encode("utf-8"))
    assert proxy.max_in_flight >= 4


def test_ls_cli_unordered(cli, s3, bucket):
    objects = {f"u/{i:04d}": b"x" for i in range(300)}
    put_tree(s3, bucket, objects)
    r = cli("ls", f"s3://{bucket}/", "--json", "--unordered")
    assert r.code == 0, r
    assert sorted(e["key"] for e in r.events) == sorted(objects)
