"""`s3bulk du`: objects and bytes under a prefix, in total and per prefix to a depth, listed in
parallel, through the real CLI against LocalStack; the numbers are checked against the bucket and
against `aws s3 ls --summarize --recursive`."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from conftest import put_tree


def test_du_totals_and_groups(cli, s3, bucket):
    objects = {f"logs/2024/{m:02d}/part-{i}.gz": b"x" * (i + m) for m in (1, 2, 11) for i in range(40)}
    objects |= {"logs/readme": b"hello", "logs/2025/a": b"y" * 1000, "other/z": b"z" * 7}
    put_tree(s3, bucket, objects)
    under = {k: v for k, v in objects.items() if k.startswith("logs/")}
    r = cli("du", f"s3://{bucket}/logs/", "--json")
    assert r.code == 0, r
    assert [e for e in r.events if e["event"] != "class"] == [
        {"event": "total", "objects": len(under), "bytes": sum(map(len, under.values())), "v": 1}]
    r = cli("du", f"s3://{bucket}/logs/", "--depth", "2", "--json")
    assert r.code == 0, r
    groups = {e["prefix"]: (e["objects"], e["bytes"]) for e in r.events if e["event"] == "du"}
    expect: dict[str, tuple[int, int]] = {}
    for k, v in under.items():
        parts = k[len("logs/"):].split("/", 2)
        name = "/".join(parts[:2]) + ("/" if len(parts) > 2 else "")
        o, b = expect.get(name, (0, 0))
        expect[name] = (o + 1, b + len(v))
    assert groups == expect
    assert list(groups) == sorted(groups), "prefixes come in key order"
    r = cli("du", f"s3://{bucket}/")
    assert r.code == 0 and "(total)" in r.out and f"{len(objects):,} objects" in r.out, r
    r = cli("du", f"s3://{bucket}/nothing-here")
    assert r.code == 3 and "no such key or prefix" in r.err, r


def test_du_equals_aws_s3_ls_summarize(cli, s3, bucket, endpoint):
    """`du` of a prefix gives what `aws s3 ls --summarize --recursive` gives (Total Objects, Total Size),
    with keys that are awkward for either (spaces, unicode, a key that is the prefix's own "folder"
    marker, sizes from 0 to 3 MiB). aws-cli is not a dependency of the test environment: without it on
    PATH the comparison is with the bucket's own listing summed (botocore), and bench/rm_du_bench.py
    makes the aws-cli comparison."""
    objects = {f"data/{i % 7}/obj {i:03d}": b"z" * (i * 37) for i in range(140)}
    objects |= {"data/": b"", "data/ü/é": b"u" * 5, "data/big": b"b" * (3 << 20), "data2/x": b"no", "datax": b"n"}
    put_tree(s3, bucket, objects)
    r = cli("du", f"s3://{bucket}/data/", "--json")
    assert r.code == 0, r
    total = r.events[-1]
    expect = {k: v for k, v in objects.items() if k.startswith("data/")}
    listed = [c for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="data/")
              for c in page.get("Contents", [])]
    assert (total["objects"], total["bytes"]) == (len(listed), sum(c["Size"] for c in listed)) \
        == (len(expect), sum(map(len, expect.values())))
    aws = shutil.which("aws")
    if aws is None:
        return
    out = subprocess.run([aws, "--endpoint-url", endpoint, "s3", "ls", "--summarize", "--recursive",
                          f"s3://{bucket}/data/"], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
                                  AWS_DEFAULT_REGION="us-east-1"))
    assert out.returncode == 0, out.stderr
    objects_aws = int(re.search(r"Total Objects: (\d+)", out.stdout).group(1))
    bytes_aws = int(re.search(r"Total Size: (\d+)", out.stdout).group(1))
    assert (total["objects"], total["bytes"]) == (objects_aws, bytes_aws), out.stdout[-500:]


def test_du_per_storage_class(cli, s3, bucket):
    """The listing's storage class of each object, summed per class before the total (lines and
    --json 'class' events), as users of S3 tiers ask for."""
    objects = {f"t/std-{i}": b"s" * 10 for i in range(5)}
    put_tree(s3, bucket, objects)
    for i in range(3):
        s3.put_object(Bucket=bucket, Key=f"t/ia-{i}", Body=b"i" * 100, StorageClass="STANDARD_IA")
    r = cli("du", f"s3://{bucket}/t/", "--json")
    assert r.code == 0, r
    classes = {e["storage_class"]: (e["objects"], e["bytes"]) for e in r.events if e["event"] == "class"}
    assert classes == {"STANDARD": (5, 50), "STANDARD_IA": (3, 300)}, r.events
    assert r.events[-1] == {"event": "total", "objects": 8, "bytes": 350, "v": 1}
    r = cli("du", f"s3://{bucket}/t/")
    assert r.code == 0 and "(storage class STANDARD_IA)" in r.out and "(total)" in r.out.splitlines()[-1], r
