"""A copy (streamed, or server-side in parts) of an object overwritten while it is copied never
lands torn: the downloads' cases in test_torn_reads.py, for copies (see its docstring)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from torn import (  # noqa: F401  (toxiproxy: the module's fixture)
    COPY_PARTS, COPY_SIZE, DEADLINE, PARTS, Running, _absent, _body, laggy_link, no_open_uploads, one_line_failure,
    put_unchecked, slow_link, toxiproxy, versions)


def test_a_streamed_copy_in_parts_overwritten_meanwhile_restarts_and_lands_whole(toxiproxy, endpoint, s3,
                                                                                make_bucket, state_home):
    """S3 to S3 on two endpoints (no server-side copy: ranges read, parts uploaded): the source
    overwritten after the first part was uploaded lands whole at DST, as the new version."""
    src, dst = make_bucket(), make_bucket()
    old, new = versions(2)
    put_unchecked(s3, src, "big.bin", old)
    run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *PARTS,
                   "--src-endpoint-url", slow_link(toxiproxy, endpoint), "--dst-endpoint-url", endpoint],
                  state_home)
    try:
        wait_for_a_part(s3, dst, run)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=new)
        code = run.finish()
    finally:
        run.kill()
    assert code == 0, run
    got = _body(s3, dst, "big.bin")
    assert got == new, f"{'a torn object' if got != old else 'the old version'}: {run!r}"
    assert [e["src"] for e in run.restarted()] == [f"s3://{src}/big.bin"], run
    no_open_uploads(s3, dst)


def test_a_streamed_copy_whose_source_changes_again_fails_with_no_object_and_no_upload(toxiproxy, endpoint, s3,
                                                                                      make_bucket, state_home):
    src, dst = make_bucket(), make_bucket()
    old, new, newer = versions(3)
    put_unchecked(s3, src, "big.bin", old)
    run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *PARTS,
                   "--src-endpoint-url", slow_link(toxiproxy, endpoint), "--dst-endpoint-url", endpoint],
                  state_home)
    try:
        first = wait_for_a_part(s3, dst, run)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=new)
        wait_for_a_part(s3, dst, run, other_than=first)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=newer)
        code = run.finish()
    finally:
        run.kill()
    one_line_failure(run, code)
    assert _absent(s3, dst, "big.bin"), run
    no_open_uploads(s3, dst)


def test_a_server_side_copy_in_parts_overwritten_meanwhile_restarts_and_lands_whole(toxiproxy, endpoint, s3,
                                                                                   make_bucket, state_home):
    """UploadPartCopy (same endpoint: the bytes never leave the server): the source overwritten
    after the first part was copied lands whole at DST, as the new version."""
    src, dst = make_bucket(), make_bucket()
    old, new = versions(2, COPY_SIZE)
    s3.put_object(Bucket=src, Key="big.bin", Body=old)
    run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *COPY_PARTS,
                   "--endpoint-url", laggy_link(toxiproxy, endpoint)], state_home)
    try:
        wait_for_a_part(s3, dst, run)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=new)
        code = run.finish()
    finally:
        run.kill()
    assert code == 0, run
    got = _body(s3, dst, "big.bin")
    assert got == new, f"{'a torn object' if got != old else 'the old version'}: {run!r}"
    assert [e["src"] for e in run.restarted()] == [f"s3://{src}/big.bin"], run
    no_open_uploads(s3, dst)


def test_a_server_side_copy_whose_source_changes_again_fails_with_no_object_and_no_upload(toxiproxy, endpoint, s3,
                                                                                         make_bucket, state_home):
    src, dst = make_bucket(), make_bucket()
    old, new, newer = versions(3, COPY_SIZE)
    s3.put_object(Bucket=src, Key="big.bin", Body=old)
    # two windows to hit, one per attempt (each three rounds long, as above)
    run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *COPY_PARTS,
                   "--endpoint-url", laggy_link(toxiproxy, endpoint)], state_home)
    try:
        first = wait_for_a_part(s3, dst, run)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=new)
        wait_for_a_part(s3, dst, run, other_than=first)
        with run.paused():
            s3.put_object(Bucket=src, Key="big.bin", Body=newer)
        code = run.finish()
    finally:
        run.kill()
    one_line_failure(run, code)
    assert _absent(s3, dst, "big.bin"), run
    no_open_uploads(s3, dst)


def wait_for_a_part(s3: Any, bucket: str, run: Running, other_than: str | None = None) -> str:
    """Until a multipart upload open in `bucket` (not `other_than`) holds a part: its upload id.
    Asked of LocalStack directly, a few times a second."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        for upload in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
            if upload["UploadId"] == other_than:
                continue
            parts = s3.list_parts(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"]).get("Parts", [])
            if parts:
                return str(upload["UploadId"])
        if run.proc.poll() is not None:
            run.finish()
            pytest.fail(f"the run ended before a part of an upload was seen: {run!r}")
        time.sleep(0.05)
    pytest.fail(f"no part landed before the deadline: {run!r}")


