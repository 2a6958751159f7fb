"""`s3bulk check SRC DST`: after a migration, proof that nothing was lost. It finds a key only in SRC,
one only in DST and one that differs (same size, other bytes: with --checksum), exits 1, changes
nothing; on identical trees it exits 0. Through the real CLI against LocalStack."""

from __future__ import annotations

from conftest import bucket_tree, put_tree, write_tree


def test_check_finds_missing_extra_and_changed(cli, s3, bucket, tmp_path):
    tree = {f"d/f{i:03d}": f"body {i:03d}".encode() for i in range(50)}
    write_tree(tmp_path / "src", tree)
    put_tree(s3, bucket, tree)
    r = cli("check", str(tmp_path / "src"), f"s3://{bucket}/", "--checksum", "--json")
    assert r.code == 0, r
    assert not [e for e in r.events if e["event"] == "difference"]

    put_tree(s3, bucket, {"d/f007": b"BODY 007", "extra/key": b"x"})  # same size, other bytes; and an extra
    s3.delete_object(Bucket=bucket, Key="d/f011")
    before = bucket_tree(s3, bucket)
    r = cli("check", str(tmp_path / "src"), f"s3://{bucket}/", "--checksum", "--json")
    assert r.code == 1, r
    diffs = {(e["kind"], e.get("src", e.get("dst")).rsplit("/", 2)[-2] + "/" + e.get("src", e.get("dst")).rsplit("/", 1)[-1])
             for e in r.events if e["event"] == "difference"}
    assert diffs == {("differs", "d/f007"), ("only-in-src", "d/f011"), ("only-in-dst", "extra/key")}, diffs
    assert bucket_tree(s3, bucket) == before, "check changes nothing"
    # sizes only: the same-size change is not seen; --one-way leaves DST-only keys out
    r = cli("check", str(tmp_path / "src"), f"s3://{bucket}/", "--one-way", "--json")
    assert r.code == 1, r
    kinds = sorted(e["kind"] for e in r.events if e["event"] == "difference")
    assert kinds == ["only-in-src"], kinds
    r = cli("check", str(tmp_path / "src"), f"s3://{bucket}/")
    assert r.code == 1 and "only-in-dst: s3://" in r.out and "s3bulk check:" in r.err, r
