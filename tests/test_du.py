"""`s3bulk du`: objects and bytes under a prefix, in total and per prefix to a depth, listed in
parallel, through the real CLI against LocalStack; the numbers are checked against the bucket."""

from __future__ import annotations

from conftest import put_tree


def test_du_totals_and_groups(cli, s3, bucket):
    objects = {f"logs/2024/{m:02d}/part-{i}.gz": b"x" * (i + m) for m in (1, 2, 11) for i in range(40)}
    objects |= {"logs/readme": b"hello", "logs/2025/a": b"y" * 1000, "other/z": b"z" * 7}
    put_tree(s3, bucket, objects)
    under = {k: v for k, v in objects.items() if k.startswith("logs/")}
    r = cli("du", f"s3://{bucket}/logs/", "--json")
    assert r.code == 0, r
    assert r.events == [{"event": "total", "objects": len(under), "bytes": sum(map(len, under.values())), "v": 1}]
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
