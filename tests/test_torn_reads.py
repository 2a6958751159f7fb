"""An object overwritten while it is read in several requests never lands torn (issue 24).

Each case copies one object through a FaultProxy in front of LocalStack (tests/torn.py's Gate)
that holds the GET of its third part, waits for a part to have landed (a --json progress event
with bytes moved), overwrites the object (same size, other bytes, one PUT straight to LocalStack),
then lets the held GET go. Without conditional reads the copy ends with exit 0 and an object mixed
from the two versions; with them every request names the version the run listed (If-Match,
x-amz-copy-source-if-match), the 412 restarts the object once from its new version (a `restarted`
event in --json) and it lands whole; changed again during that second attempt, it fails with one
line and nothing under its name (no file, no object, no open multipart upload).

No case races a clock: the overwrite waits for a part to have landed (or a part listed in the
destination's multipart upload) and for the request it must precede to be held.
"""

from __future__ import annotations

import pytest

from torn import (
    PART, PARTS, Gate, Running, gated, one_line_failure, part_landed, put_unchecked, ranged_get_at, versions, wait_held)


@pytest.mark.parametrize("path", ["lean", "botocore", "spread"])
def test_a_download_in_ranges_overwritten_meanwhile_restarts_and_lands_whole(path, endpoint, s3, bucket,
                                                                            tmp_path, state_home):
    """Ranges received into the file as they arrive (lean), read whole through botocore, or
    fetched by a forked helper process as well (spread): the object overwritten after its first
    part landed lands whole, as the new version, after one `restarted` event."""
    env = {"lean": {}, "botocore": {"S3BULK_DATA_PATH": "botocore"},
           "spread": {"S3BULK_SPREAD_ABOVE": "1MiB", "S3BULK_SPREAD_PROCESSES": "2"}}[path]
    old, new = versions(2)
    put_unchecked(s3, bucket, "big.bin", old)
    dst = tmp_path / "dst"
    gate = Gate(ranged_get_at(2 * PART))
    with gated(endpoint, gate) as url:
        run = Running(["copy", f"s3://{bucket}/big.bin", str(dst) + "/", "--json", *PARTS, "--endpoint-url", url],
                      state_home, env)
        try:
            held = wait_held(gate, run)
            run.wait_for(part_landed)
            s3.put_object(Bucket=bucket, Key="big.bin", Body=new)
            held.set()
            code = run.finish()
        finally:
            run.kill()
    assert code == 0, run
    assert [p.name for p in dst.iterdir()] == ["big.bin"], run  # no temporary file or record left
    got = (dst / "big.bin").read_bytes()
    assert got == new, f"{'a torn file' if got != old else 'the old version'}: {run!r}"
    assert [e["src"] for e in run.restarted()] == [f"s3://{bucket}/big.bin"], run


def test_a_download_whose_object_changes_again_after_its_restart_fails_with_nothing_left(endpoint, s3,
                                                                                         bucket, tmp_path,
                                                                                         state_home):
    """Overwritten during the first attempt and again during the second: exit 1, the one line,
    no file under the name (nor a temporary file or a record of parts)."""
    old, new, newer = versions(3)
    put_unchecked(s3, bucket, "big.bin", old)
    dst = tmp_path / "dst"
    gate = Gate(ranged_get_at(2 * PART), holds=2)  # one hold per attempt
    with gated(endpoint, gate) as url:
        run = Running(["copy", f"s3://{bucket}/big.bin", str(dst) + "/", "--json", *PARTS, "--endpoint-url", url],
                      state_home)
        try:
            held = wait_held(gate, run)
            run.wait_for(part_landed)
            s3.put_object(Bucket=bucket, Key="big.bin", Body=new)
            held.set()
            run.wait_for(lambda e: e.get("event") == "restarted")
            held = wait_held(gate, run)
            run.wait_for(part_landed)  # the first attempt's bytes were taken back: this is the second's
            s3.put_object(Bucket=bucket, Key="big.bin", Body=newer)
            held.set()
            code = run.finish()
        finally:
            run.kill()
    one_line_failure(run, code)
    assert not dst.exists() or list(dst.iterdir()) == [], run


# ------------------------------------------------------------------------------------ copies


