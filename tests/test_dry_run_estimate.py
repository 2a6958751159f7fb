"""A dry run's estimate (`sync --dry-run`, `rm --dry-run`: the summary's `estimate`) of the requests
a real run sends, by kind, and the bytes it moves, checked against the real run's own count of its
requests on LocalStack: an upload with a multipart object and deletes, the download of the same
(read by the parts it was uploaded in), and an rm."""

from __future__ import annotations

import os

from conftest import write_tree

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
