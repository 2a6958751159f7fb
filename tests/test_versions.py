"""Versioned buckets (issue 16, and rm --all-versions of issue 19): ls --all-versions, copy of one
--version-id, copy --all-versions replaying a key's history in order, rm with and without
--all-versions. Through the real CLI against LocalStack, on a bucket holding three versions of a
key and a delete marker."""

from __future__ import annotations

import pytest


def _versioned(s3, make_bucket) -> str:
    name = make_bucket()
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def _history(s3, bucket: str, key: str) -> tuple[list[str], int, bool]:
    """(bodies of the key's versions oldest first, in S3's own exact order; delete markers; whether
    a delete marker is the latest)."""
    resp = s3.list_object_versions(Bucket=bucket, Prefix=key)
    versions = [v for v in resp.get("Versions", []) if v["Key"] == key]
    markers = [m for m in resp.get("DeleteMarkers", []) if m["Key"] == key]
    bodies = [s3.get_object(Bucket=bucket, Key=key, VersionId=v["VersionId"])["Body"].read().decode()
              for v in reversed(versions)]
    return bodies, len(markers), any(m["IsLatest"] for m in markers)


@pytest.fixture
def history_bucket(s3, make_bucket):
    """doc.txt: v1, v2, v3, then deleted (a delete marker is its latest); keep.txt: one version."""
    name = _versioned(s3, make_bucket)
    ids = [s3.put_object(Bucket=name, Key="h/doc.txt", Body=f"v{i}".encode())["VersionId"] for i in (1, 2, 3)]
    s3.put_object(Bucket=name, Key="h/keep.txt", Body=b"keep")
    s3.delete_object(Bucket=name, Key="h/doc.txt")
    return name, ids


def test_ls_all_versions_shows_versions_and_delete_markers(cli, history_bucket):
    name, ids = history_bucket
    r = cli("ls", f"s3://{name}/h/", "--all-versions", "--json")
    assert r.code == 0, r
    rows = [e for e in r.events]
    doc = [e for e in rows if e["key"] == "h/doc.txt"]
    assert len(doc) == 4 and sum(e["delete_marker"] for e in doc) == 1, doc
    assert [e for e in doc if e["latest"]] == [e for e in doc if e["delete_marker"]]
    assert {e["version_id"] for e in doc if not e["delete_marker"]} == set(ids)
    assert [(e["key"], e["size"], e["latest"]) for e in rows if e["key"] == "h/keep.txt"] == [("h/keep.txt", 4, True)]
    # a key whose latest is a delete marker is still named by its URL; the plain listing omits it
    r = cli("ls", f"s3://{name}/h/doc.txt", "--all-versions")
    assert r.code == 0 and r.out.count("h/doc.txt") == 4 and "DELETE" in r.out, r
    assert "3 versions, 1 delete marker" in r.err, r
    r = cli("ls", f"s3://{name}/h/", "--json")
    assert [e["key"] for e in r.events] == ["h/keep.txt"], r


def test_copy_one_version_id(cli, history_bucket, tmp_path):
    name, ids = history_bucket
    r = cli("copy", f"s3://{name}/h/doc.txt", str(tmp_path / "old.txt"), "--version-id", ids[0])
    assert r.code == 0, r
    assert (tmp_path / "old.txt").read_text() == "v1"
    r = cli("copy", f"s3://{name}/h/doc.txt", str(tmp_path / "x.txt"), "--version-id", "nosuchversion")
    assert r.code != 0 and "Traceback" not in r.err, r


@pytest.mark.parametrize("markers", [False, True])
def test_copy_all_versions_replays_history_in_order(cli, s3, make_bucket, history_bucket, markers):
    name, _ = history_bucket
    dst = _versioned(s3, make_bucket)
    args = ["copy", f"s3://{name}/h/", f"s3://{dst}/m/", "--all-versions", "--json"]
    r = cli(*args, *(["--include-delete-markers"] if markers else []))
    assert r.code == 0, r
    assert r.summary["versions"] == 4 and r.summary["delete_markers"] == (1 if markers else 0), r
    assert _history(s3, dst, "m/doc.txt") == (["v1", "v2", "v3"], 1 if markers else 0, markers)
    assert _history(s3, dst, "m/keep.txt") == (["keep"], 0, False)


def test_rm_all_versions_removes_history_plain_rm_adds_a_marker(cli, s3, history_bucket):
    name, _ = history_bucket
    r = cli("rm", f"s3://{name}/h/keep.txt")
    assert r.code == 0, r
    resp = s3.list_object_versions(Bucket=name, Prefix="h/keep.txt")
    assert len(resp.get("Versions", [])) == 1 and len(resp.get("DeleteMarkers", [])) == 1, resp
    r = cli("rm", f"s3://{name}/h/", "--all-versions", "--json")
    assert r.code == 0 and r.summary["deleted"] == 6, r
    resp = s3.list_object_versions(Bucket=name, Prefix="h/")
    assert not resp.get("Versions") and not resp.get("DeleteMarkers"), resp


def test_copy_as_of_a_time(cli, s3, make_bucket, tmp_path):
    """--as-of: each key as it was then: the version current at that time, nothing for a key not
    yet written or already deleted."""
    import time

    name = _versioned(s3, make_bucket)
    s3.put_object(Bucket=name, Key="t/a", Body=b"a1")
    s3.put_object(Bucket=name, Key="t/gone", Body=b"g1")
    # "then" is the later of the two first writes' times: on a busy machine the second can land
    # in the next whole second, and a time between the two would rightly leave it out.
    first = max(s3.head_object(Bucket=name, Key=k)["LastModified"].timestamp() for k in ("t/a", "t/gone"))
    deadline = time.monotonic() + 60
    while time.time() < first + 1.05:  # S3 times have whole seconds: the next writes must be later ones
        assert time.monotonic() < deadline
        time.sleep(0.05)
    s3.put_object(Bucket=name, Key="t/a", Body=b"a2")
    s3.put_object(Bucket=name, Key="t/new", Body=b"n1")
    s3.delete_object(Bucket=name, Key="t/gone")
    r = cli("copy", f"s3://{name}/t/", str(tmp_path / "then"), "--as-of", str(first))
    assert r.code == 0, r
    assert sorted(p.name for p in (tmp_path / "then").iterdir()) == ["a", "gone"]
    assert (tmp_path / "then" / "a").read_bytes() == b"a1"
    r = cli("copy", f"s3://{name}/t/", str(tmp_path / "now"), "--as-of", "2999-01-01T00:00:00Z")
    assert r.code == 0, r
    assert {p.name: p.read_bytes() for p in (tmp_path / "now").iterdir()} == {"a": b"a2", "new": b"n1"}
    r = cli("copy", f"s3://{name}/t/", str(tmp_path / "x"), "--as-of", "yesterday")
    assert r.code == 2 and "--as-of" in r.err and "Traceback" not in r.err, r
