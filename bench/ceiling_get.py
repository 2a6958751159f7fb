"""The machine's ceiling for one object's download: LANES ranged GETs of it at once, each read with
recv_into into a preallocated buffer and dropped (no file, no checksum, no parsing beyond the head).

Why: "s3bulk moves 1 GiB at X MiB/s" says little on a shared 2-core machine whose load changes by
the minute; X over what this reader moves in the same run does (issue goal: >= 0.8x). It is a
`tool` of bench/link_bench.py (`--tools s3bulk,ceiling`) and runs on its own too:

    AWS_ACCESS_KEY_ID=.. AWS_SECRET_ACCESS_KEY=.. python bench/ceiling_get.py s3://bucket/key /dev/null \\
        --endpoint-url http://127.0.0.1:7070 [--lanes 8]

The destination is ignored (the bytes are dropped), unless `--write`: then each range is
pwritten from the buffer at its offset of the destination file (sized up front), which is what a
download to tmpfs cannot avoid (the `ceiling-file` tool of link_bench). Credentials come from the environment only
and are never printed. The URLs are presigned with botocore (in the parent, before the clock).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from urllib.parse import urlsplit

BUF = 1 << 20


def presigned(endpoint: str, bucket: str, key: str) -> tuple[str, int]:
    import botocore.session
    from botocore.config import Config
    s3 = botocore.session.get_session().create_client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
    size = int(s3.head_object(Bucket=bucket, Key=key)["ContentLength"])
    return s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=600), size


def read_range(url: str, start: int, end: int, got: list[int], i: int, fd: int | None) -> None:
    """GET bytes start..end-1 on one connection; count the body bytes (into got[i]) and, with a
    file `fd`, pwrite them at their offsets."""
    u = urlsplit(url)
    sock = socket.create_connection((u.hostname, u.port or 80))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(f"GET {u.path}?{u.query} HTTP/1.1\r\nHost: {u.netloc}\r\nRange: bytes={start}-{end - 1}\r\n"
                 f"Connection: close\r\n\r\n".encode())
    buf = bytearray(BUF)
    view = memoryview(buf)
    head = b""
    while b"\r\n\r\n" not in head:  # the head (and perhaps some body) arrives first
        n = sock.recv_into(view)
        if not n:
            raise OSError("closed before the head ended")
        head += bytes(view[:n])
    status = head.split(b" ", 2)[1]
    if status != b"206":
        raise OSError(f"status {status.decode()}")
    body = head[head.index(b"\r\n\r\n") + 4:]
    total = len(body)
    if fd is not None and body:
        os.pwrite(fd, body, start)
    while True:
        n = sock.recv_into(view)
        if not n:
            break
        if fd is not None:
            os.pwrite(fd, view[:n], start + total)
        total += n
    sock.close()
    got[i] = total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", help="s3://bucket/key")
    ap.add_argument("dst", nargs="?", help="ignored: the bytes are dropped")
    ap.add_argument("--endpoint-url", required=True)
    ap.add_argument("--lanes", type=int, default=8, help="ranges read at once (default %(default)s)")
    ap.add_argument("--write", action="store_true", help="pwrite the ranges into the destination file")
    args = ap.parse_args()
    if not args.src.startswith("s3://") or "/" not in args.src[5:]:
        sys.exit("ceiling_get: the source must be s3://bucket/key")
    bucket, key = args.src[5:].split("/", 1)
    url, size = presigned(args.endpoint_url, bucket, key)
    step = -(-size // args.lanes)
    bounds = [(s, min(size, s + step)) for s in range(0, size, step)]
    got = [0] * len(bounds)
    fd = None
    if args.write:
        if not args.dst:
            sys.exit("ceiling_get: --write needs a destination file")
        fd = os.open(args.dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    began = time.perf_counter()
    threads = [threading.Thread(target=read_range, args=(url, s, e, got, i, fd)) for i, (s, e) in enumerate(bounds)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if fd is not None:
        os.close(fd)  # no fsync: s3bulk's download does not sync either
    took = time.perf_counter() - began
    if sum(got) != size:
        sys.exit(f"ceiling_get: read {sum(got)} of {size} bytes")
    print(f"{size / took / (1 << 20):.0f} MiB/s ({args.lanes} ranges, {took:.3f} s)")


if __name__ == "__main__":
    main()
