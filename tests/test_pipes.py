"""Pipes through the real command line against LocalStack: `s3bulk copy - DST` (stdin of unknown
length to one object), `s3bulk copy SRC -` and `s3bulk cat URL` (one object to stdout, in order),
in bounded memory; an interrupted upload leaves nothing behind; a closed reader or a wrong URL
ends in one line (or none), never a traceback."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, DyingProducer

MiB = 1024 * 1024


def _s3bulk(endpoint: str, *args: str, **popen) -> subprocess.Popen:
    argv = [sys.executable, "-m", "s3bulk", *args, "--endpoint-url", endpoint]
    return subprocess.Popen(argv, cwd=ROOT, **popen)


def _feed(proc: subprocess.Popen, total: int, seed: int, digest: "hashlib._Hash") -> threading.Thread:
    """Write `total` pseudo-random bytes to the process's stdin in 1 MiB chunks (never all of
    them in memory at once), hashing them on the way; stdin is closed at the end."""
    rng = random.Random(seed)

    def run() -> None:
        left = total
        try:
            while left:
                chunk = rng.randbytes(min(MiB, left))
                digest.update(chunk)
                proc.stdin.write(chunk)
                left -= len(chunk)
        finally:
            proc.stdin.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _summary(text: bytes) -> dict:
    events = [json.loads(line) for line in text.decode().splitlines() if line.startswith("{")]
    found = [e for e in events if e.get("event") == "summary"]
    assert found, text
    return found[-1]


def test_100mib_round_trip_through_stdin_and_stdout_under_max_memory(endpoint, s3, bucket):
    size = 100 * MiB
    sent = hashlib.sha256()
    up = _s3bulk(endpoint, "copy", "-", f"s3://{bucket}/piped/big.bin", "--max-memory", "128MiB", "--json",
                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    feeder = _feed(up, size, 19, sent)
    out, err = up.stdout.read(), up.stderr.read()  # the summary: small, after stdin has ended
    up.wait(120)
    feeder.join(60)
    assert up.returncode == 0, err
    summary = _summary(out)  # stdout is free on an upload: the --json summary is there
    assert summary["bytes"] == size and summary["parts"] > 1
    assert summary["peak_rss_bytes"] < 128 * MiB, summary
    head = s3.head_object(Bucket=bucket, Key="piped/big.bin")
    assert head["ContentLength"] == size
    assert head["ETag"].strip('"').endswith(f"-{summary['parts']}")  # a multipart upload, not one PUT

    down = _s3bulk(endpoint, "copy", f"s3://{bucket}/piped/big.bin", "-", "--max-memory", "128MiB", "--json",
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got, n = hashlib.sha256(), 0
    while chunk := down.stdout.read(MiB):
        got.update(chunk)
        n += len(chunk)
    err = down.stderr.read()
    assert down.wait(60) == 0, err
    assert n == size and got.hexdigest() == sent.hexdigest()
    summary = _summary(err)  # stdout carries the bytes: the --json summary goes to stderr
    assert summary["bytes"] == size and summary["peak_rss_bytes"] < 128 * MiB, summary


def test_small_stdin_is_one_put_and_cat_reads_it_back(endpoint, s3, bucket):
    body = b"one line from a script\n"
    up = subprocess.run([sys.executable, "-m", "s3bulk", "copy", "-", f"s3://{bucket}/note.txt", "--json",
                         "--endpoint-url", endpoint], input=body, capture_output=True, cwd=ROOT, timeout=120)
    assert up.returncode == 0, up.stderr
    assert _summary(up.stdout)["parts"] == 0
    head = s3.head_object(Bucket=bucket, Key="note.txt")
    assert "-" not in head["ETag"] and head["ContentLength"] == len(body)
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")
    cat = subprocess.run([sys.executable, "-m", "s3bulk", "cat", f"s3://{bucket}/note.txt", "--endpoint-url",
                          endpoint], capture_output=True, cwd=ROOT, timeout=120)
    assert cat.returncode == 0 and cat.stdout == body and cat.stderr == b""


def test_progress_meter_redraws_on_stderr_and_never_touches_the_bytes(endpoint, s3, bucket):
    """--progress on a pipe: a byte count and rate redrawn on stderr while the stream moves (slowed
    to ~4 s by --max-bandwidth, so several redraws happen however busy the machine); stdout carries
    the object's bytes and nothing else."""
    body = random.Random(7).randbytes(24 * MiB)  # 3 parts of 8 MiB
    up = subprocess.run([sys.executable, "-m", "s3bulk", "copy", "-", f"s3://{bucket}/slow.bin", "--progress",
                         "--max-bandwidth", "6MiB", "--endpoint-url", endpoint], input=body, capture_output=True,
                        cwd=ROOT, timeout=300)
    assert up.returncode == 0, up.stderr
    assert len(re.findall(rb"\rs3bulk: uploaded [^\r\n]*B/s", up.stderr)) >= 2, up.stderr
    cat = subprocess.run([sys.executable, "-m", "s3bulk", "cat", f"s3://{bucket}/slow.bin", "--progress",
                          "--max-bandwidth", "6MiB", "--endpoint-url", endpoint], capture_output=True, cwd=ROOT,
                         timeout=300)
    assert cat.returncode == 0, cat.stderr
    assert cat.stdout == body
    assert len(re.findall(rb"\rs3bulk: written to stdout [^\r\n]*B/s", cat.stderr)) >= 2, cat.stderr


def test_stdin_to_a_local_file_and_back(endpoint, tmp_path):
    size = 12 * MiB  # above one 8 MiB part: written in parts, renamed into place
    data = random.Random(3).randbytes(size)
    target = tmp_path / "out" / "file.bin"
    up = subprocess.run([sys.executable, "-m", "s3bulk", "copy", "-", str(target), "-q"], input=data,
                        capture_output=True, cwd=ROOT, timeout=120)
    assert up.returncode == 0, up.stderr
    assert target.read_bytes() == data
    assert [p.name for p in target.parent.iterdir()] == ["file.bin"]  # no temporary file left
    down = subprocess.run([sys.executable, "-m", "s3bulk", "copy", str(target), "-", "-q"], capture_output=True,
                          cwd=ROOT, timeout=120)
    assert down.returncode == 0 and down.stdout == data


@pytest.mark.parametrize("what", ["missing key", "prefix"])
def test_cat_of_a_missing_key_or_a_prefix_is_one_line(endpoint, s3, bucket, what):
    s3.put_object(Bucket=bucket, Key="dir/a.txt", Body=b"a")
    url = f"s3://{bucket}/dir/nope.txt" if what == "missing key" else f"s3://{bucket}/dir"
    run = subprocess.run([sys.executable, "-m", "s3bulk", "cat", url, "--endpoint-url", endpoint],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == (3 if what == "missing key" else 2), run
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("s3bulk: error:") and url in lines[0], run.stderr
    assert ("no such key" if what == "missing key" else "is a prefix") in lines[0]


def test_cat_into_head_ends_quietly(endpoint, s3, bucket):
    s3.put_object(Bucket=bucket, Key="big.bin", Body=random.Random(5).randbytes(12 * MiB))  # > one part
    script = (f"{sys.executable} -m s3bulk cat s3://{bucket}/big.bin --endpoint-url {endpoint} | head -c 10; "
              "echo \" ${PIPESTATUS[0]}\" >&2")
    run = subprocess.run(["bash", "-c", script], capture_output=True, cwd=ROOT, timeout=120)
    assert len(run.stdout) == 10
    status = run.stderr.decode().strip()
    assert status in ("0", "141"), run.stderr  # no traceback, no message: only the exit status echoed


def test_interrupted_stdin_upload_leaves_no_object_and_no_open_upload(endpoint, s3, bucket):
    key = "interrupted/stream.bin"
    up = _s3bulk(endpoint, "copy", "-", f"s3://{bucket}/{key}", stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    # more than one part, and stdin kept open: the upload is in progress, waiting for more
    up.stdin.write(random.Random(7).randbytes(20 * MiB))
    up.stdin.flush()
    deadline = time.monotonic() + 120
    while not s3.list_multipart_uploads(Bucket=bucket, Prefix=key).get("Uploads"):
        assert up.poll() is None and time.monotonic() < deadline, "no multipart upload was started"
        time.sleep(0.2)
    up.send_signal(signal.SIGINT)
    code = up.wait(120)
    err = up.stderr.read().decode()
    up.stdin.close()
    assert code == 130, err
    assert "Traceback" not in err and "aborted" in err
    assert not s3.list_multipart_uploads(Bucket=bucket, Prefix=key).get("Uploads")
    assert not s3.list_objects_v2(Bucket=bucket, Prefix=key).get("Contents")


@pytest.mark.unit
@pytest.mark.parametrize("args, says", [
    (["copy", "-", "-"], "cannot both be '-'"),
    (["mv", "-", "s3://b/k"], "not mv"),
    (["copy", "-", "s3://b/dir/"], "stdin has no name"),
    (["copy", "-", "s3://b/k", "--resume"], "--resume cannot be used"),
    (["copy", "s3://b/k", "-", "--expected-size", "1GiB"], "--expected-size applies only"),
])
def test_what_a_pipe_cannot_do_is_refused_in_one_line(args, says):
    run = subprocess.run([sys.executable, "-m", "s3bulk", *args], capture_output=True, text=True, cwd=ROOT,
                         timeout=60, stdin=subprocess.DEVNULL, env=dict(os.environ, AWS_ENDPOINT_URL="http://127.0.0.1:9"))
    assert run.returncode == 2, run
    assert len(run.stderr.splitlines()) == 1 and says in run.stderr, run.stderr


# ---------------------------------------------------------------- the engine on the in-memory store


def _memory_options():
    from s3bulk.engine.plan import TransferOptions

    return TransferOptions(part_size="5MiB", part_concurrency=3, retries=2)


@pytest.mark.unit
def test_api_streams_round_trip_in_parts_on_the_memory_store():
    import io

    from s3bulk import api
    from s3bulk.errors import Transient
    from s3bulk.stores.memory import bucket, drop

    data = random.Random(11).randbytes(12 * MiB + 7)
    b = bucket("pipes-api")
    try:
        b.inject("get", error=Transient, times=2)
        up = api.upload_stream(io.BytesIO(data), "memory://pipes-api/k.bin", options=_memory_options())
        assert (up.bytes, up.parts) == (len(data), 3)
        assert b.objects["k.bin"].etag.endswith("-3") and not b.uploads
        out = io.BytesIO()
        down = api.download_stream("memory://pipes-api/k.bin", out, options=_memory_options())
        assert out.getvalue() == data and down.parts == 3  # in order, though two GETs were retried
    finally:
        drop("pipes-api")


@pytest.mark.unit
@pytest.mark.parametrize("failure", ["stream breaks", "part refused"])
def test_a_failed_upload_leaves_no_object_and_no_open_upload(failure):
    import io

    from s3bulk import api
    from s3bulk.errors import AccessDenied, S3BulkError
    from s3bulk.stores.memory import bucket, drop

    b = bucket("pipes-fail")
    try:
        if failure == "part refused":
            b.inject("upload part", error=AccessDenied, times=-1)
            stream = io.BytesIO(b"y" * (11 * MiB))
        else:
            stream = DyingProducer(10 * MiB + 1, OSError("the producer went away"))
        with pytest.raises(S3BulkError):  # one line for the CLI, never a traceback
            api.upload_stream(stream, "memory://pipes-fail/k.bin", options=_memory_options())
        assert "k.bin" not in b.objects and not b.uploads
    finally:
        drop("pipes-fail")


@pytest.mark.unit
def test_a_stream_longer_than_the_part_limit_is_refused_and_aborted(monkeypatch):
    import io

    from s3bulk import api
    from s3bulk.engine.transfer import pipes as pipe
    from s3bulk.stores.memory import bucket, drop

    monkeypatch.setattr(pipe, "MAX_PARTS", 2)  # S3's 10,000, scaled down
    b = bucket("pipes-long")
    try:
        with pytest.raises(pipe.StreamTooLong, match="--expected-size"):
            api.upload_stream(io.BytesIO(b"z" * (10 * MiB + 1)), "memory://pipes-long/k", options=_memory_options())
        assert "k" not in b.objects and not b.uploads
    finally:
        drop("pipes-long")
