"""The machine's ceiling for one object's download: LANES ranged GETs of it at once, each read with
recv_into into a preallocated buffer and dropped (no file, no checksum, no parsing beyond the head).

Why: "s3bulk moves 1 GiB at X MiB/s" says little on a shared 2-core machine whose load changes by
the minute; X over what this reader moves in the same run does (issue goal: >= 0.8x). It is a
`tool` of bench/link_bench.py (`--tools s3bulk,ceiling`) and runs on its own too:

    AWS_ACCESS_KEY_ID=.. AWS_SECRET_ACCESS_KEY=.. python bench/ceiling_get.py s3://bucket/key /dev/null \\
        --endpoint-url http://127.0.0.1:7070 [--lanes 8]

The destination is ignored (the bytes are dropped), unless `--write`: then each range is
pwritten from the buffer at its offset of the destination file, which is what a download to tmpfs
cannot avoid (the `ceiling-file` tool of link_bench). Two more ways of writing the file, to learn
which costs a byte the fewest kernel copies (`--write mmap|splice`):

- `mmap`: the file sized with posix_fallocate, each range received with recv_into straight into
  a shared mapping of its window (WINDOW bytes at a time, prefaulted, unmapped when full): one
  copy a byte (socket -> page cache), plus the page faults and the zeroing of fresh pages;
- `splice`: the body moved socket -> pipe -> file at its offset with os.splice (the pipe as big
  as /proc/sys/fs/pipe-max-size allows): no user-space copy at all. Credentials come from the environment only
and are never printed. The URLs are presigned with botocore (in the parent, before the clock).
"""

from __future__ import annotations

import argparse
import fcntl
import mmap
import os
import socket
import sys
import threading
import time
from urllib.parse import urlsplit

BUF = 1 << 20
WINDOW = 8 << 20  # `--write mmap`: bytes mapped at once per range (RSS stays LANES x WINDOW)
F_SETPIPE_SZ = 1031
MADV_POPULATE_WRITE = 23  # Linux 5.14+: fault the window's pages in, writable, in one call


def presigned(endpoint: str, bucket: str, key: str) -> tuple[str, int]:
    import botocore.session
    from botocore.config import Config
    s3 = botocore.session.get_session().create_client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
    size = int(s3.head_object(Bucket=bucket, Key=key)["ContentLength"])
    return s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=600), size


def open_range(url: str, start: int, end: int) -> tuple[socket.socket, bytes]:
    """Send a ranged GET for bytes start..end-1; return the socket and the body bytes that came
    with the head."""
    u = urlsplit(url)
    sock = socket.create_connection((u.hostname, u.port or 80))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(f"GET {u.path}?{u.query} HTTP/1.1\r\nHost: {u.netloc}\r\nRange: bytes={start}-{end - 1}\r\n"
                 f"Connection: close\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:  # the head (and perhaps some body) arrives first
        got = sock.recv(65536)
        if not got:
            raise OSError("closed before the head ended")
        head += got
    status = head.split(b" ", 2)[1]
    if status != b"206":
        raise OSError(f"status {status.decode()}")
    return sock, head[head.index(b"\r\n\r\n") + 4:]


def read_range(url: str, start: int, end: int, got: list[int], i: int, fd: int | None, how: str) -> None:
    """GET bytes start..end-1 on one connection; count the body bytes (into got[i]) and, with a
    file `fd`, write them at their offsets the way `how` says."""
    sock, body = open_range(url, start, end)
    total = len(body)
    if fd is not None and body:
        os.pwrite(fd, body, start)
    if how == "mmap" and fd is not None:
        total += _into_mmap(sock, fd, start + total, end)
    elif how == "splice" and fd is not None:
        total += _splice(sock, fd, start + total, end)
    else:
        view = memoryview(bytearray(BUF))
        while True:
            n = sock.recv_into(view)
            if not n:
                break
            if fd is not None:
                os.pwrite(fd, view[:n], start + total)
            total += n
    sock.close()
    got[i] = total


def _into_mmap(sock: socket.socket, fd: int, at: int, end: int) -> int:
    """Receive bytes at..end-1 straight into shared mappings of the file, a window at a time."""
    moved = 0
    page = mmap.PAGESIZE
    while at < end:
        base = at - at % page
        length = min(WINDOW, end - base)
        mm = mmap.mmap(fd, length, offset=base)
        try:
            mm.madvise(MADV_POPULATE_WRITE)
        except OSError:
            pass
        view = memoryview(mm)
        pos = at - base
        while pos < length:
            n = sock.recv_into(view[pos:])
            if not n:
                break
            pos += n
        view.release()
        mm.close()
        moved += pos - (at - base)
        if pos < length:
            break
        at = base + length
    return moved


def _splice(sock: socket.socket, fd: int, at: int, end: int) -> int:
    """Move bytes at..end-1 socket -> pipe -> file with no user-space copy."""
    r, w = os.pipe()
    try:
        size = int(open("/proc/sys/fs/pipe-max-size").read())
        fcntl.fcntl(w, F_SETPIPE_SZ, size)
    except OSError:
        size = 65536
    moved = 0
    sfd = sock.fileno()
    try:
        while at < end:
            n = os.splice(sfd, w, min(size, end - at))
            if not n:
                break
            left = n
            while left:
                m = os.splice(r, fd, left, offset_dst=at)
                at += m
                left -= m
            moved += n
    finally:
        os.close(r)
        os.close(w)
    return moved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", help="s3://bucket/key")
    ap.add_argument("dst", nargs="?", help="ignored: the bytes are dropped")
    ap.add_argument("--endpoint-url", required=True)
    ap.add_argument("--lanes", type=int, default=8, help="ranges read at once (default %(default)s)")
    ap.add_argument("--write", nargs="?", const="pwrite", choices=("pwrite", "mmap", "splice"),
                    help="write the ranges into the destination file: pwrite from a buffer (the default), "
                         "recv_into a mapping of the file, or splice socket -> pipe -> file")
    args = ap.parse_args()
    if not args.src.startswith("s3://") or "/" not in args.src[5:]:
        sys.exit("ceiling_get: the source must be s3://bucket/key")
    bucket, key = args.src[5:].split("/", 1)
    url, size = presigned(args.endpoint_url, bucket, key)
    step = -(-size // args.lanes)
    bounds = [(s, min(size, s + step)) for s in range(0, size, step)]
    got = [0] * len(bounds)
    fd = None
    began = time.perf_counter()  # the file's opening and sizing count: a download must do them too
    if args.write:
        if not args.dst:
            sys.exit("ceiling_get: --write needs a destination file")
        fd = os.open(args.dst, (os.O_RDWR if args.write == "mmap" else os.O_WRONLY) | os.O_CREAT | os.O_TRUNC, 0o644)
        if args.write == "mmap":  # a mapping needs the file's bytes: reserve them (no SIGBUS on a full disk)
            os.posix_fallocate(fd, 0, size)
    threads = [threading.Thread(target=read_range, args=(url, s, e, got, i, fd, args.write)) for i, (s, e) in enumerate(bounds)]
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
