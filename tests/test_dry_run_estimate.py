"""A dry run's estimate (`sync --dry-run`, `rm --dry-run`: the summary's `estimate`) of the requests
a real run sends, by kind, and the bytes it moves, checked against the real run's own count of its
requests on LocalStack: an upload with a multipart object and deletes, the download of the same
(read by the parts it was uploaded in), and an rm."""

from __future__ import annotations

import os

from conftest import bucket_tree, put_tree, write_tree

MiB = 1024 * 1024
SIZES = ("--multipart-threshold", "5MiB", "--part-size", "5MiB")


def sent(summary: dict) -> dict[str, int]:
    """A real run's requests by operation, whatever their status."""
    return {op: sum(by.values()) for op, by in sorted(summary["requests"].items())}


def test_sync_dry_run_estimates_the_requests_and_bytes_of_the_real_run(cli, s3, bucket, tmp_path):
    tree = {"a.txt": b"a" * 100, "b/c.bin": os.urandom(3000), "big.bin": os.urandom(6 * MiB)}
    write_tree(tmp_path / "src", tree)
    for key in ("gone/1", "gone/2"):  # only at DST: --delete removes them in one DeleteObjects
        s3.put_object(Bucket=bucket, Key=f"up/{key}", Body=b"x")
    args = ("sync", str(tmp_path / "src"), f"s3://{bucket}/up/", "--delete", "--json", "-w", "1", *SIZES)
    dry = cli(*args, "--dry-run")
    assert dry.code == 0, dry
    estimate = dry.summary["estimate"]
    # HEAD: the first object the worker writes to S3, read back (engine/transfer/verify.py)
    assert estimate["requests"] == {"COMPLETE_MULTIPART": 1, "CREATE_MULTIPART": 1, "DELETE": 1, "HEAD": 1,
                                    "LIST": 1, "PUT": 2, "UPLOAD_PART": 2}, estimate
    real = cli(*args)
    assert real.code == 0, real
    assert estimate["requests"] == sent(real.summary), (estimate, real.summary["requests"])
    assert estimate["bytes"] == real.summary["copied_bytes"] == sum(map(len, tree.values()))
    assert real.summary["estimate"] is None  # a real run estimates nothing

    # the download of the same objects: the multipart one is read by the two parts it was uploaded in
    down = ("sync", f"s3://{bucket}/up/", str(tmp_path / "down"), "--json", "-w", "1", *SIZES)
    dry = cli(*down, "--dry-run")
    assert dry.code == 0, dry
    real = cli(*down)
    assert real.code == 0, real
    assert dry.summary["estimate"]["requests"] == sent(real.summary), (dry.summary, real.summary["requests"])
    assert sent(real.summary)["GET"] == 2 + 2
    assert dry.summary["estimate"]["bytes"] == real.summary["copied_bytes"]


def test_rm_dry_run_estimates_the_listing_and_one_delete_per_thousand_keys(endpoint, s3, bucket, cli):
    import s3bulk
    from s3bulk.config.urls import S3Options

    for i in range(5):
        s3.put_object(Bucket=bucket, Key=f"tmp/{i}", Body=b"x")
    opts = S3Options(endpoint_url=endpoint)
    dry = s3bulk.rm(f"s3://{bucket}/tmp/", s3=opts, dry_run=True)
    assert dry.estimate() == {"requests": {"DELETE": 1, "LIST": 1}, "bytes": 0}
    listed = cli("rm", f"s3://{bucket}/tmp/", "--dry-run", "--json")
    assert listed.summary["estimate"] == dry.estimate(), listed
    real = s3bulk.rm(f"s3://{bucket}/tmp/", s3=opts)
    assert real.deleted == 5 and real.estimate() is None
    assert {op: n for (op, _), n in real.requests.items()} == dry.estimate()["requests"]


def test_copy_dry_run_changes_nothing_and_estimates_the_real_run(cli, s3, bucket, tmp_path):
    """`copy --dry-run` (issue 32): the same estimate as sync's, equal to the real copy's requests
    and bytes; nothing is written, not even a local DST's directory."""
    tree = {"a.txt": b"a" * 100, "b/c.bin": os.urandom(3000), "big.bin": os.urandom(6 * MiB)}
    write_tree(tmp_path / "src", tree)
    args = ("copy", str(tmp_path / "src"), f"s3://{bucket}/up/", "--json", "-w", "1", *SIZES)
    dry = cli(*args, "--dry-run")
    assert dry.code == 0, dry
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)
    assert sorted(e["dst"] for e in dry.events if e.get("event") == "dryrun") == \
        sorted(f"s3://{bucket}/up/{k}" for k in tree)
    estimate = dry.summary["estimate"]
    # a local SRC lists without requests; the HEAD reads back the first object the worker wrote
    # to S3 (engine/transfer/verify.py)
    assert estimate["requests"] == {"COMPLETE_MULTIPART": 1, "CREATE_MULTIPART": 1, "HEAD": 1, "PUT": 2,
                                    "UPLOAD_PART": 2}, estimate
    real = cli(*args)
    assert real.code == 0, real
    assert estimate["requests"] == sent(real.summary), (estimate, real.summary["requests"])
    assert estimate["bytes"] == real.summary["copied_bytes"] == sum(map(len, tree.values()))

    # and down to a local directory that does not exist yet: it is not made
    down = tmp_path / "down"
    text = cli("copy", f"s3://{bucket}/up/", str(down), "--dry-run", "-w", "1", *SIZES)
    assert text.code == 0, text
    assert not down.exists()
    assert "(dryrun) copy: " in text.out and "would send" in text.out


def test_mv_dry_run_changes_nothing_and_estimates_the_real_move(cli, s3, bucket, tmp_path):
    tree = {"a": b"x" * 10, "b/c": b"y" * 20, "big": os.urandom(6 * MiB)}
    put_tree(s3, bucket, {f"src/{k}": v for k, v in tree.items()})
    args = ("mv", f"s3://{bucket}/src/", str(tmp_path / "dst"), "--json", "-w", "1", *SIZES)
    dry = cli(*args, "--dry-run")
    assert dry.code == 0, dry
    assert bucket_tree(s3, bucket, "src/") == tree  # nothing deleted
    assert not (tmp_path / "dst").exists()
    assert {e["action"] for e in dry.events if e.get("event") == "dryrun"} == {"move"}
    assert dry.summary["deleted"] == 3
    real = cli(*args)
    assert real.code == 0, real
    assert bucket_tree(s3, bucket, "src/") == {}
    assert dry.summary["estimate"]["requests"] == sent(real.summary), (dry.summary, real.summary["requests"])
    assert dry.summary["estimate"]["bytes"] == real.summary["copied_bytes"]


def test_copy_dry_run_between_two_endpoints_says_the_bytes_stream_through(cli, endpoint, s3, bucket, make_bucket):
    """Two endpoints (here the same LocalStack under two names: to s3bulk two endpoints) cannot copy
    server-side: the dry run says so in one line; on one endpoint it does not."""
    other = make_bucket()
    put_tree(s3, bucket, {"a": b"a"})
    port = endpoint.rsplit(":", 1)[1]
    two = cli("copy", f"s3://{bucket}/", f"s3://{other}/", "--dry-run", "--src-endpoint-url",
              f"http://127.0.0.1:{port}", "--dst-endpoint-url", f"http://localhost:{port}")
    assert two.code == 0, two
    assert two.err.count("not copied server-side") == 1, two
    one = cli("copy", f"s3://{bucket}/", f"s3://{other}/", "--dry-run")
    assert one.code == 0 and "server-side" not in one.err, one
