"""A copy (streamed, or server-side in parts) of an object overwritten while it is copied never
lands torn: the downloads' cases in test_torn_reads.py, for copies (see its docstring)."""

from __future__ import annotations

from torn import (
    COPY_PARTS, COPY_SIZE, PART, PARTS, Gate, Running, _absent, _body, gated, no_open_uploads, one_line_failure,
    part_copy, put_unchecked, ranged_get_at, versions, wait_held)


def overwritten_while_held(run: Running, gate: Gate, s3, bucket: str, bodies: list[bytes]) -> int:
    """Each body put over the source while the gate holds the copy's request (one hold an
    attempt), then the copy's exit code; the copy is killed if anything here fails."""
    try:
        for body in bodies:
            held = wait_held(gate, run)
            s3.put_object(Bucket=bucket, Key="big.bin", Body=body)
            held.set()
        return run.finish()
    finally:
        run.kill()


def test_a_streamed_copy_in_parts_overwritten_meanwhile_restarts_and_lands_whole(endpoint, s3, make_bucket,
                                                                                state_home):
    """S3 to S3 on two endpoints (no server-side copy: ranges read, parts uploaded): the source
    overwritten after a part was uploaded (the third part's GET held until then) lands whole at
    DST, as the new version."""
    src, dst = make_bucket(), make_bucket()
    old, new = versions(2)
    put_unchecked(s3, src, "big.bin", old)
    gate = Gate(ranged_get_at(2 * PART))
    with gated(endpoint, gate) as src_url:
        run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *PARTS,
                       "--src-endpoint-url", src_url, "--dst-endpoint-url", endpoint], state_home)
        code = overwritten_while_held(run, gate, s3, src, [new])
    assert code == 0, run
    got = _body(s3, dst, "big.bin")
    assert got == new, f"{'a torn object' if got != old else 'the old version'}: {run!r}"
    assert [e["src"] for e in run.restarted()] == [f"s3://{src}/big.bin"], run
    no_open_uploads(s3, dst)


def test_a_streamed_copy_whose_source_changes_again_fails_with_no_object_and_no_upload(endpoint, s3, make_bucket,
                                                                                      state_home):
    src, dst = make_bucket(), make_bucket()
    old, new, newer = versions(3)
    put_unchecked(s3, src, "big.bin", old)
    gate = Gate(ranged_get_at(2 * PART), holds=2)  # one hold per attempt
    with gated(endpoint, gate) as src_url:
        run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *PARTS,
                       "--src-endpoint-url", src_url, "--dst-endpoint-url", endpoint], state_home)
        code = overwritten_while_held(run, gate, s3, src, [new, newer])
    one_line_failure(run, code)
    assert _absent(s3, dst, "big.bin"), run
    no_open_uploads(s3, dst)


def test_a_server_side_copy_in_parts_overwritten_meanwhile_restarts_and_lands_whole(endpoint, s3, make_bucket,
                                                                                   state_home):
    """UploadPartCopy (same endpoint: the bytes never leave the server): the source overwritten
    after a part was copied (part 4's request held until then) lands whole at DST, as the new
    version."""
    src, dst = make_bucket(), make_bucket()
    old, new = versions(2, COPY_SIZE)
    s3.put_object(Bucket=src, Key="big.bin", Body=old)
    gate = Gate(part_copy(4))
    with gated(endpoint, gate) as url:
        run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *COPY_PARTS,
                       "--endpoint-url", url], state_home)
        code = overwritten_while_held(run, gate, s3, src, [new])
    assert code == 0, run
    got = _body(s3, dst, "big.bin")
    assert got == new, f"{'a torn object' if got != old else 'the old version'}: {run!r}"
    assert [e["src"] for e in run.restarted()] == [f"s3://{src}/big.bin"], run
    no_open_uploads(s3, dst)


def test_a_server_side_copy_whose_source_changes_again_fails_with_no_object_and_no_upload(endpoint, s3, make_bucket,
                                                                                         state_home):
    src, dst = make_bucket(), make_bucket()
    old, new, newer = versions(3, COPY_SIZE)
    s3.put_object(Bucket=src, Key="big.bin", Body=old)
    gate = Gate(part_copy(4), holds=2)  # one hold per attempt
    with gated(endpoint, gate) as url:
        run = Running(["copy", f"s3://{src}/big.bin", f"s3://{dst}/big.bin", "--json", *COPY_PARTS,
                       "--endpoint-url", url], state_home)
        code = overwritten_while_held(run, gate, s3, src, [new, newer])
    one_line_failure(run, code)
    assert _absent(s3, dst, "big.bin"), run
    no_open_uploads(s3, dst)
