"""The machine's ceiling for one big download: the object read as N byte ranges at once, its bytes
dropped, timed from the first request to the last byte.

    python bench/ceiling_read.py URL                       # 8 curls at once, to /dev/null
    python bench/ceiling_read.py URL --reader python       # 8 threads, recv_into a reused buffer
    python bench/ceiling_read.py URL --streams 16 --size 1073741824

Why: "1 GiB down at X MiB/s" says little until it is set against what the machine and the server
can move at all. With the server on the same cores (versitygw on loopback) that ceiling is not the
link's: it is the server's reading plus the kernel's copying, so it is measured in the same run as
the tools it bounds (bench/scorecard.py runs it interleaved with s3bulk and s5cmd).

URL is a presigned GET URL (SigV4 in the query string: curl and http.client send it as it is; a
Range header is not signed, so one URL serves every range). The object's size is asked first with
an untimed `Range: bytes=0-0` GET (its Content-Range) unless `--size` gives it. The object is cut
into `--streams` equal ranges (the last takes the remainder), all started at once:

- `--reader curl` (default): one `curl -sS -f -r A-B -o /dev/null URL` process per range, the
  fastest reader at hand (C, its 16 KiB reads straight to /dev/null: no file, no page cache);
- `--reader python`: one thread per range, http.client on its own connection, the body read with
  `readinto` into one preallocated 4 MiB buffer per thread, over and over (the bytes are not kept:
  what a reader that writes nowhere costs).

Prints one JSON line: reader, streams, bytes, seconds (first request to last byte, process start
of the readers included for curl), mib_per_s, and per stream its bytes. A short or failed range is
one line on stderr and exit 1. Needs only the standard library (and curl for the default reader).
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

BUFFER = 4 << 20


def object_size(url: str) -> int:
    """The object's size from the Content-Range of a one-byte ranged GET (untimed)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=60)
    try:
        conn.request("GET", f"{parts.path}?{parts.query}", headers={"Range": "bytes=0-0"})
        resp = conn.getresponse()
        resp.read()
        total = (resp.getheader("Content-Range") or "").rpartition("/")[2]
        if resp.status != 206 or not total.isdigit():
            raise SystemExit(f"ceiling_read: a ranged GET answered {resp.status} without a size "
                             f"(Content-Range {resp.getheader('Content-Range')!r})")
        return int(total)
    finally:
        conn.close()


def ranges(size: int, streams: int) -> list[tuple[int, int]]:
    """(first, last) byte of each stream's range, inclusive as HTTP ranges are."""
    step = size // streams
    cuts = [i * step for i in range(streams)] + [size]
    return [(cuts[i], cuts[i + 1] - 1) for i in range(streams) if cuts[i + 1] > cuts[i]]


def read_with_curl(url: str, spans: list[tuple[int, int]]) -> list[int]:
    curl = shutil.which("curl")
    if curl is None:
        raise SystemExit("ceiling_read: curl is not installed (use --reader python)")
    procs = [subprocess.Popen([curl, "-sS", "-f", "-r", f"{a}-{b}", "-o", "/dev/null", "-w", "%{size_download}",
                               url], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for a, b in spans]
    got = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"ceiling_read: curl exited {p.returncode}: {err.decode(errors='replace').strip()}")
        got.append(int(float(out.decode() or 0)))
    return got


def read_with_threads(url: str, spans: list[tuple[int, int]]) -> list[int]:
    parts = urlsplit(url)
    target = f"{parts.path}?{parts.query}"
    got = [0] * len(spans)
    errors: list[str] = []

    def one(i: int, first: int, last: int) -> None:
        buf = memoryview(bytearray(BUFFER))
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=120)
        try:
            conn.request("GET", target, headers={"Range": f"bytes={first}-{last}"})
            resp = conn.getresponse()
            if resp.status != 206:
                errors.append(f"range {first}-{last}: HTTP {resp.status}")
                return
            while n := resp.readinto(buf):
                got[i] += n
        except OSError as exc:
            errors.append(f"range {first}-{last}: {exc}")
        finally:
            conn.close()

    threads = [threading.Thread(target=one, args=(i, a, b)) for i, (a, b) in enumerate(spans)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit("ceiling_read: " + "; ".join(errors))
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url", help="a presigned GET URL of the object (http://)")
    ap.add_argument("--streams", type=int, default=8, help="ranges read at once (default %(default)s)")
    ap.add_argument("--reader", choices=("curl", "python"), default="curl")
    ap.add_argument("--size", type=int, default=0, help="the object's bytes (default: asked with a ranged GET)")
    args = ap.parse_args()
    if not args.url.startswith("http://") or args.streams < 1:
        print("ceiling_read: an http:// URL and --streams >= 1 are needed", file=sys.stderr)
        return 2
    size = args.size or object_size(args.url)
    spans = ranges(size, args.streams)
    t0 = time.perf_counter()
    got = (read_with_curl if args.reader == "curl" else read_with_threads)(args.url, spans)
    seconds = time.perf_counter() - t0
    short = [(a, b, n) for (a, b), n in zip(spans, got) if n != b - a + 1]
    if short:
        print(f"ceiling_read: {len(short)} range(s) short, e.g. {short[0][0]}-{short[0][1]}: {short[0][2]} bytes",
              file=sys.stderr)
        return 1
    print(json.dumps({"reader": args.reader, "streams": len(spans), "bytes": sum(got), "seconds": round(seconds, 4),
                      "mib_per_s": round(sum(got) / 2**20 / seconds, 1), "stream_bytes": got}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
