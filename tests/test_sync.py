"""`s3bulk sync` against LocalStack and local folders: incremental, exact, filtered, and in key order."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import bucket_tree, read_tree, write_tree

BASE = {f"d{i % 4}/file{i:03d}.txt": f"content {i}".encode() for i in range(60)}
BASE.update({"top.log": b"log", "keep/me.log": b"log2"})


def _sides(kind: str, tmp_path: Path, bucket: str) -> tuple[str, str]:
    """(SRC, DST) strings for a pair kind; SRC is always a local folder we can edit."""
    src = str(tmp_path / "src")
    return src, {"local": str(tmp_path / "dst"), "s3": f"s3://{bucket}/mirror/"}[kind]


def _dst_tree(kind: str, tmp_path: Path, s3, bucket: str) -> dict[str, bytes]:
    return read_tree(tmp_path / "dst") if kind == "local" else bucket_tree(s3, bucket, "mirror/")


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_incremental_sync_touches_only_what_changed(cli, s3, bucket, tmp_path, kind):
    write_tree(tmp_path / "src", BASE)
    src, dst = _sides(kind, tmp_path, bucket)
    first = cli("sync", src, dst, "--json", "--page-size", "7")
    assert first.code == 0, first
    assert first.summary["copied"] == len(BASE)
    assert _dst_tree(kind, tmp_path, s3, bucket) == BASE

    again = cli("sync", src, dst, "--json", "--page-size", "7", "--delete")
    assert again.code == 0, again
    assert (again.summary["copied"], again.summary["deleted"], again.summary["skipped"]) == (0, 0, len(BASE))

    # change 10 (5 to a new size, 5 to the same size but newer), delete 5, add 5
    expected = dict(BASE)
    keys = sorted(BASE)
    later = time.time() + 30
    for i, k in enumerate(keys[:10]):
        p = tmp_path / "src" / k
        body = (b"changed and longer " + k.encode()) if i < 5 else bytes(reversed(BASE[k]))
        p.write_bytes(body)
        if i >= 5:
            os.utime(p, (later, later))
        expected[k] = body
    for k in keys[10:15]:
        (tmp_path / "src" / k).unlink()
        del expected[k]
    for i in range(5):
        k = f"new/added{i}.bin"
        write_tree(tmp_path / "src", {k: os.urandom(10 + i)})
        expected[k] = (tmp_path / "src" / k).read_bytes()

    run = cli("sync", src, dst, "--json", "--page-size", "7", "--delete")
    assert run.code == 0, run
    s = run.summary
    assert (s["copied"], s["deleted"], s["skipped"], s["failed"]) == (15, 5, len(BASE) - 15, 0)
    assert _dst_tree(kind, tmp_path, s3, bucket) == expected


def test_s3_to_local_and_s3_to_s3_resync_copies_nothing(cli, s3, make_bucket, tmp_path):
    a, b = make_bucket(), make_bucket()
    write_tree(tmp_path / "src", BASE)
    assert cli("copy", str(tmp_path / "src"), f"s3://{a}/", "-q").code == 0
    for dst in (str(tmp_path / "down"), f"s3://{b}/copy/"):
        first = cli("sync", f"s3://{a}/", dst, "--json")
        assert first.code == 0 and first.summary["copied"] == len(BASE), first
        again = cli("sync", f"s3://{a}/", dst, "--json", "--delete")
        assert again.code == 0, again
        assert (again.summary["copied"], again.summary["deleted"]) == (0, 0), again
    assert read_tree(tmp_path / "down") == BASE
    assert bucket_tree(s3, b, "copy/") == BASE


def test_dry_run_changes_nothing(cli, s3, bucket, tmp_path):
    write_tree(tmp_path / "src", BASE)
    src, dst = _sides("s3", tmp_path, bucket)
    s3.put_object(Bucket=bucket, Key="mirror/stale.txt", Body=b"old")
    run = cli("sync", src, dst, "--dry-run", "--delete")
    assert run.code == 0, run
    assert bucket_tree(s3, bucket, "mirror/") == {"stale.txt": b"old"}
    lines = run.out.splitlines()
    assert sum(line.startswith("(dryrun) copy: ") for line in lines) == len(BASE)
    assert f"(dryrun) delete: s3://{bucket}/mirror/stale.txt" in lines
    js = cli("sync", src, dst, "--dry-run", "--delete", "--json")
    assert js.summary["copied"] == len(BASE) and js.summary["deleted"] == 1 and js.summary["dry_run"]
    assert bucket_tree(s3, bucket, "mirror/") == {"stale.txt": b"old"}


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_filters_with_and_without_delete(cli, s3, bucket, tmp_path, kind):
    write_tree(tmp_path / "src", BASE)
    src, dst = _sides(kind, tmp_path, bucket)
    run = cli("sync", src, dst, "--exclude", "*.log", "--json")
    assert run.code == 0, run
    assert _dst_tree(kind, tmp_path, s3, bucket) == {k: v for k, v in BASE.items() if not k.endswith(".log")}

    # later filters win: exclude everything in d1/ but include d1/file001.txt
    run = cli("sync", src, dst, "--exclude", "d1/*", "--include", "d1/file001.txt", "--json")
    assert run.code == 0, run

    # a DST-only file that is excluded survives --delete; one that is not excluded goes
    extra = {"only-at-dst.log": b"keep me", "only-at-dst.txt": b"delete me"}
    if kind == "local":
        write_tree(tmp_path / "dst", extra)
    else:
        for k, v in extra.items():
            s3.put_object(Bucket=bucket, Key=f"mirror/{k}", Body=v)
    run = cli("sync", src, dst, "--exclude", "*.log", "--delete", "--json")
    assert run.code == 0, run
    assert run.summary["deleted"] == 1
    after = _dst_tree(kind, tmp_path, s3, bucket)
    assert "only-at-dst.log" in after and "only-at-dst.txt" not in after


def test_checksum_catches_same_size_same_mtime_change(cli, s3, bucket, tmp_path):
    write_tree(tmp_path / "src", BASE)
    cache = str(tmp_path / "hashes.sqlite")
    for dst in (str(tmp_path / "dst"), f"s3://{bucket}/mirror/"):
        assert cli("sync", str(tmp_path / "src"), dst, "-q").code == 0
    victim = tmp_path / "src" / "d0" / "file000.txt"
    st = victim.stat()
    victim.write_bytes(b"CONTENT 0")  # same length as "content 0"
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    for dst in (str(tmp_path / "dst"), f"s3://{bucket}/mirror/"):
        plain = cli("sync", str(tmp_path / "src"), dst, "--json")
        assert plain.summary["copied"] == 0, "size and time alone cannot see this change"
        deep = cli("sync", str(tmp_path / "src"), dst, "--json", "--checksum", "--hash-cache", cache)
        assert deep.code == 0, deep
        assert deep.summary["copied"] == 1 and deep.summary["skipped"] == len(BASE) - 1
    assert read_tree(tmp_path / "dst")["d0/file000.txt"] == b"CONTENT 0"
    assert bucket_tree(s3, bucket, "mirror/")["d0/file000.txt"] == b"CONTENT 0"
    assert os.path.getsize(cache) > 0


ORDER_EDGE = {"a-b": b"1", "a/b": b"2", "a.b": b"3", "a0": b"4", "a/b-c": b"5", "a/b/c": b"6", "a b": b"7",
              "ü": b"8", "u\u0308": b"9", "日本/語": b"10", "A": b"11", "a/b.c": b"12", "a/b0": b"13"}


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_ordering_edge_cases_cause_no_spurious_work(cli, s3, bucket, tmp_path, kind):
    tree = {k: v for k, v in ORDER_EDGE.items() if k != "a/b"}  # "a/b" is a directory locally
    write_tree(tmp_path / "src", tree)
    src, dst = _sides(kind, tmp_path, bucket)
    assert cli("sync", src, dst, "-q", "--page-size", "2").code == 0
    for page in ("1", "2", "3", "1000"):
        run = cli("sync", src, dst, "--json", "--delete", "--page-size", page)
        assert run.code == 0, run
        assert (run.summary["copied"], run.summary["deleted"], run.summary["skipped"]) == (0, 0, len(tree)), page
    assert _dst_tree(kind, tmp_path, s3, bucket) == tree


def test_sync_from_list_get_server(cli, tmp_path):
    from test_listget import served

    write_tree(tmp_path / "src", BASE)
    with served(str(tmp_path / "src"), "--processes", "1") as url:
        first = cli("sync", url, str(tmp_path / "dst"), "--json")
        assert first.code == 0 and first.summary["copied"] == len(BASE), first
        again = cli("sync", url, str(tmp_path / "dst"), "--json")
        assert again.code == 0 and again.summary["copied"] == 0 and again.summary["skipped"] == len(BASE), again
        (tmp_path / "src" / "top.log").write_bytes(b"a longer log now")
        third = cli("sync", url, str(tmp_path / "dst"), "--json")
        assert third.summary["copied"] == 1, third
        refused = cli("sync", url, str(tmp_path / "dst"), "--delete")
        assert refused.code == 2 and "--delete" in refused.err
    assert read_tree(tmp_path / "dst")["top.log"] == b"a longer log now"
