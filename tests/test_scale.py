"""2,000 small objects (10 listing pages) from LocalStack to a local folder and back: byte-identical, memory flat.

Peak RSS is what the summary reports: the sum of each process's own peak (VmHWM of the
coordinator and of every worker), an upper bound of the whole tree's peak. It must not grow
with the number of objects, because every queue is bounded and workers hold at most a fixed
number of listed pages.
"""

from __future__ import annotations

import os

from conftest import read_tree

# 10 listing pages of PER_PREFIX keys each (--page-size): the pages, not the key count, are what the
# overlap of listing and copying below needs, and the per-object cost against LocalStack is the
# test's whole run time (5,000 objects, 10 pages of 500, took ~50 s quiet, ~85 s in CI)
N_PREFIXES, PER_PREFIX, SIZE = 10, 200, 100


def test_2000_objects_in_10_pages_round_trip_in_flat_memory(cli, bucket, tmp_path):
    src = tmp_path / "src"
    for p in range(N_PREFIXES):
        d = src / f"p{p}"
        d.mkdir(parents=True)
        for i in range(PER_PREFIX):
            (d / f"o{i:05d}").write_bytes(os.urandom(SIZE))
    total = N_PREFIXES * PER_PREFIX

    up = cli("copy", str(src), f"s3://{bucket}/", "--json", "--page-size", str(PER_PREFIX))
    assert up.code == 0, up
    assert up.summary["copied"] == total

    small = cli("copy", f"s3://{bucket}/p0/", str(tmp_path / "small"), "--json", "--page-size", str(PER_PREFIX))
    assert small.code == 0, small
    assert small.summary["copied"] == PER_PREFIX

    big = cli("copy", f"s3://{bucket}/", str(tmp_path / "back"), "--json", "--page-size", str(PER_PREFIX))
    assert big.code == 0, big
    assert big.summary["copied"] == total and big.summary["failed"] == 0
    assert read_tree(tmp_path / "back") == read_tree(src)
    assert read_tree(tmp_path / "small") == read_tree(src / "p0")

    # Transfers start while listing goes on: workers hold at most a few pages, so most of the
    # copying of 10 pages happens before the listing can have finished.
    progress = [e for e in big.events if e["event"] == "progress"]
    assert any(e["copied"] > 0 and not e["listing_done"] for e in progress), progress[:5]

    rss_small, rss_big = small.summary["peak_rss_bytes"], big.summary["peak_rss_bytes"]
    print(f"peak RSS: {PER_PREFIX} objects {rss_small / 2**20:.1f} MiB, {total} objects {rss_big / 2**20:.1f} MiB")
    assert rss_big <= rss_small * 1.15 + 16 * 2**20, (rss_small, rss_big)
