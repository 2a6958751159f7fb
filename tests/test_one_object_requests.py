"""The requests a one-object copy makes, counted by a proxy in front of LocalStack: a user copying
one object in a loop pays for each (S3 bills per request), so the count is held here.

One small object down is one GET: the request that tells a key from a prefix reads the object
too (its answer gives the size, ETag and time the listing used to); up, the HeadBucket that checks
DST (its errors are the run's first line) and the PUT; S3 to S3, the HEAD (the byte count is not
in a CopyObject's answer) and the CopyObject, plus DST's HeadBucket only when DST is another
bucket. No LIST of the key and no read-back HEAD of the one write (`--verify` asks for it). A SRC
that names no object is still a prefix, and an archived object is still skipped.
"""

from __future__ import annotations

import pytest

from conftest import read_tree


@pytest.fixture
def through_proxy(cli, fault_proxy):
    """run(*args) -> the requests one `s3bulk` run sent (method and path; a listing as LIST)."""
    seen: list[str] = []

    def record(method: str, target: str, headers: dict[str, str]) -> None:
        path, _, query = target.partition("?")
        seen.append("LIST" if "list-type=" in query else f"{method} {path}")
        return None

    fault_proxy.rules.append(record)

    def run(*args: str, code: int = 0) -> list[str]:
        seen.clear()
        r = cli(*args, "--endpoint-url", fault_proxy.url, env={"S3BULK_DATA_PATH": "lean"})
        assert r.code == code, r
        return list(seen)

    return run


def test_one_object_copy_asks_only_its_checks_and_its_transfer(through_proxy, s3, make_bucket, tmp_path):
    src, other = make_bucket(), make_bucket()
    s3.put_object(Bucket=src, Key="one/hello.bin", Body=b"h" * 100)
    (tmp_path / "up.bin").write_bytes(b"u" * 100)

    down = through_proxy("copy", f"s3://{src}/one/hello.bin", str(tmp_path / "down.bin"))
    assert down == [f"GET /{src}/one/hello.bin"]
    assert (tmp_path / "down.bin").read_bytes() == b"h" * 100

    up = through_proxy("copy", str(tmp_path / "up.bin"), f"s3://{src}/up/")
    assert up == [f"HEAD /{src}", f"PUT /{src}/up/up.bin"]

    within = through_proxy("copy", f"s3://{src}/one/hello.bin", f"s3://{src}/copy/hello.bin")
    assert within == [f"HEAD /{src}/one/hello.bin", f"PUT /{src}/copy/hello.bin"]  # CopyObject

    across = through_proxy("copy", f"s3://{src}/one/hello.bin", f"s3://{other}/c/")
    assert across == [f"HEAD /{src}/one/hello.bin", f"HEAD /{other}", f"PUT /{other}/c/hello.bin"]
    for bucket, key in ((src, "up/up.bin"), (src, "copy/hello.bin"), (other, "c/hello.bin")):
        assert len(s3.get_object(Bucket=bucket, Key=key)["Body"].read()) == 100


def test_a_key_that_is_no_object_is_still_a_prefix_and_archived_is_still_skipped(through_proxy, s3, make_bucket,
                                                                                 tmp_path):
    src = make_bucket()
    s3.put_object(Bucket=src, Key="dir/a", Body=b"a")
    s3.put_object(Bucket=src, Key="dir/b", Body=b"b")
    s3.put_object(Bucket=src, Key="cold", Body=b"cold", StorageClass="GLACIER")

    asked = through_proxy("copy", f"s3://{src}/dir", str(tmp_path / "d") + "/")
    assert asked[0] == f"GET /{src}/dir" and "LIST" in asked  # not one object: listed as dir/
    assert read_tree(tmp_path / "d") == {"a": b"a", "b": b"b"}

    # its GET refused (InvalidObjectState), a HEAD names the storage class the listing used to: the
    # archived object is skipped, not failed, and not listed
    asked = through_proxy("copy", f"s3://{src}/cold", str(tmp_path / "cold"))
    assert asked[:2] == [f"GET /{src}/cold", f"HEAD /{src}/cold"] and "LIST" not in asked, asked
    assert not (tmp_path / "cold").exists()


def test_a_big_object_down_is_found_by_its_first_get(through_proxy, s3, make_bucket, tmp_path):
    """A download in parts starts from what the refused first GET's head said: its size and ETag
    (the version its ranges are held to with If-Match), its properties (the file time it carries)
    and its checksum (checked against the parts): no HEAD asks any of them again."""
    src = make_bucket()
    body = bytes(range(256)) * (48 * 1024)  # 12 MiB
    s3.put_object(Bucket=src, Key="big.bin", Body=body, Metadata={"mtime": "1577934245.5"})
    asked = through_proxy("copy", f"s3://{src}/big.bin", str(tmp_path / "big.bin"), "--multipart-threshold", "6MiB",
                          "--part-size", "5MiB")
    assert (tmp_path / "big.bin").read_bytes() == body
    assert (tmp_path / "big.bin").stat().st_mtime == 1577934245.5  # from the refused GET's head
    assert asked[0] == f"GET /{src}/big.bin" and "LIST" not in asked, asked
    assert not [a for a in asked if a.startswith("HEAD")], asked
    assert asked.count(f"GET /{src}/big.bin") >= 3, asked  # the refused one, then its ranges
