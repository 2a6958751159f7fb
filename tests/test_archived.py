"""Archived objects (issue 32 item 8): GLACIER and DEEP_ARCHIVE objects not restored are skipped
and counted, not failed (exit 0, one line); --force-archived tries them (and S3 refuses: exit 1);
a restored one copies; GLACIER_IR is read as any other. LocalStack models the storage classes (a
GET of an archived object answers InvalidObjectState) and RestoreObject, on both data paths.
"""

from __future__ import annotations

import pytest

from conftest import read_tree


@pytest.fixture(params=["lean", "botocore"])
def data_path(request, monkeypatch):
    monkeypatch.setenv("S3BULK_DATA_PATH", request.param)
    return request.param


def _objects(s3, bucket: str) -> None:
    s3.put_object(Bucket=bucket, Key="p/plain", Body=b"plain")
    s3.put_object(Bucket=bucket, Key="p/instant", Body=b"instant", StorageClass="GLACIER_IR")
    s3.put_object(Bucket=bucket, Key="p/cold", Body=b"cold!", StorageClass="GLACIER")
    s3.put_object(Bucket=bucket, Key="p/colder", Body=b"colder", StorageClass="DEEP_ARCHIVE")
    s3.put_object(Bucket=bucket, Key="p/thawed", Body=b"thawed", StorageClass="GLACIER")
    s3.restore_object(Bucket=bucket, Key="p/thawed", RestoreRequest={"Days": 1})


@pytest.mark.parametrize("command", ["copy", "sync"])
def test_archived_objects_are_skipped_and_counted(data_path, cli, s3, bucket, tmp_path, command):
    _objects(s3, bucket)
    out = tmp_path / "out"
    r = cli(command, f"s3://{bucket}/p/", str(out), "--json")
    assert r.code == 0, r
    assert read_tree(out) == {"plain": b"plain", "instant": b"instant", "thawed": b"thawed"}
    s = r.summary
    assert (s["ok"], s["copied"], s["failed"], s["skipped_archived"]) == (True, 3, 0, 2), s
    assert "2 archived objects skipped" in r.err and "--force-archived" in r.err, r
    # only the archived-class keys were asked about (one HEAD each), nothing else
    assert sum(s["requests"].get("HEAD", {}).values()) == 3, s["requests"]

    text = cli(command, f"s3://{bucket}/p/", str(tmp_path / "text"))
    assert text.code == 0 and "archived" in text.out, text


def test_force_archived_tries_them_and_fails(data_path, cli, s3, bucket, tmp_path):
    _objects(s3, bucket)
    out = tmp_path / "out"
    r = cli("copy", f"s3://{bucket}/p/", str(out), "--json", "--force-archived")
    assert r.code == 1, r
    s = r.summary
    assert (s["copied"], s["failed"], s["skipped_archived"]) == (3, 2, 0), s
    failed = sorted(e["src"].rsplit("/", 1)[1] for e in r.events if e["event"] == "failure")
    assert failed == ["cold", "colder"], r.events
    why = {e["error"] for e in r.events if e["event"] == "failure"}
    assert all("archived" in w and "restore it first" in w for w in why), why  # not "access denied"


def test_archived_skipped_s3_to_s3_and_mv_keeps_them(data_path, cli, s3, bucket, make_bucket):
    """Between buckets (a CopyObject from an archived object is refused as well) and with mv: a
    skipped object is neither copied nor deleted from SRC."""
    _objects(s3, bucket)
    other = make_bucket()
    r = cli("mv", f"s3://{bucket}/p/", f"s3://{other}/q/", "--json")
    assert r.code == 0 and r.summary["skipped_archived"] == 2, r
    left = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))
    assert left == ["p/cold", "p/colder"]
    moved = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=other).get("Contents", []))
    assert moved == ["q/instant", "q/plain", "q/thawed"]


def test_sync_dry_run_skips_them_too(data_path, cli, s3, bucket, tmp_path):
    """A dry run says what the real run will do: archived objects are counted, not "would copy"."""
    _objects(s3, bucket)
    r = cli("sync", f"s3://{bucket}/p/", str(tmp_path / "out"), "--dry-run", "--json")
    assert r.code == 0, r
    would = sorted(e["dst"].rsplit("/", 1)[1] for e in r.events if e["event"] == "dryrun")
    assert would == ["instant", "plain", "thawed"], r.events
    assert (r.summary["copied"], r.summary["skipped_archived"]) == (3, 2), r.summary
    assert not [p for p in (tmp_path / "out").rglob("*") if p.is_file()] if (tmp_path / "out").exists() else True
