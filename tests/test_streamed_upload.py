"""A single PUT from a local file is streamed: read chunk by chunk as the socket takes it, never
held whole. A 64 MiB file uploaded in one PUT (multipart threshold raised above it) raises the
run's peak RSS (the summary's peak_rss_bytes, from VmHWM of every process of the run) by far less
than the object's size over the same run with a 1 KiB file (measured: +43 MiB before, +0 now),
and lands byte for byte. Before streaming, the body was read whole and also sat in the socket's
write buffer."""

from __future__ import annotations

import hashlib
import os

MiB = 1024 * 1024


def _upload_peak(cli, src_dir, bucket: str, prefix: str) -> int:
    run = cli("copy", str(src_dir), f"s3://{bucket}/{prefix}/", "--json", "--workers", "1",
              "--multipart-threshold", "128MiB", "--no-journal")
    assert run.code == 0, run
    assert run.summary["copied"] == 1, run.summary
    return run.summary["peak_rss_bytes"]


def test_a_64mib_single_put_from_a_file_is_streamed_not_held(cli, s3, bucket, tmp_path):
    small, big = tmp_path / "small", tmp_path / "big"
    small.mkdir()
    big.mkdir()
    (small / "f").write_bytes(b"x" * 1024)
    block = os.urandom(MiB)
    with open(big / "f", "wb") as f:
        for i in range(64):
            f.write(block[i:] + block[:i])  # 64 different MiB
    want = hashlib.sha256((big / "f").read_bytes()).hexdigest()

    # the first run of a session may also load botocore's endpoint data (then cached on disk):
    # the baseline is the smaller of a run before and a run after the big one
    base = _upload_peak(cli, small, bucket, "small1")
    peak = _upload_peak(cli, big, bucket, "big")
    base = min(base, _upload_peak(cli, small, bucket, "small2"))

    got = s3.get_object(Bucket=bucket, Key="big/f")["Body"].read()
    assert len(got) == 64 * MiB and hashlib.sha256(got).hexdigest() == want
    # generous: the chunks in flight are a few MiB; holding the object would add 64 MiB or more
    assert peak - base < 24 * MiB, (base / MiB, peak / MiB)
