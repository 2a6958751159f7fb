"""obstore as a command: every key under an S3 prefix downloaded into a local directory, concurrently,
with obstore's async API at its defaults, the way a user of obstore would write it.

    .cache/obstore/bin/python bench/obstore_cp.py s3://BUCKET/PREFIX/ DIR --endpoint-url URL
    .cache/obstore/bin/python bench/obstore_cp.py --version

Why: obstore (Python bindings to the Rust `object_store` crate, async, no botocore) is the fastest
Python way to read many small objects that users reach for today, so the small-object benchmark
(bench/peers_bench.py, tool `obstore`) puts s3bulk beside it. obstore has no "copy a prefix"
command: a user lists the prefix and gets each key, and that is what this does:

- `S3Store(bucket, endpoint=URL, client_options={"allow_http": True})` for an http:// endpoint;
  keys and region from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
  AWS_DEFAULT_REGION), as obstore reads them; every other setting (HTTP client, retries, timeouts,
  connection pool) at obstore's defaults;
- `obstore.list(store, prefix)` iterated with `async for`, and for each key a task that awaits
  `obstore.get_async(store, key)` and `bytes_async()` and writes the bytes to DIR/<key less the
  prefix> (plain `open().write`: 100-byte files); at most `--concurrency` (64, s3bulk's transfers
  per worker) GETs in flight through an asyncio.Semaphore, as a careful user bounds a gather of
  20,000 tasks (unbounded, obstore opens a connection per request in flight).

Nothing is printed on success; a failure is one line on stderr and exit 1. Run it with the bench
obstore environment (.cache/obstore, made by `ensure_obstore()` in bench/peers_bench.py:
`uv pip install obstore`), not the project's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys


def version() -> str:
    import importlib.metadata as md
    return md.version("obstore")


async def download_prefix(url: str, dst: str, endpoint_url: str, concurrency: int) -> int:
    import obstore
    from obstore.store import S3Store

    bucket, _, prefix = url[len("s3://"):].partition("/")
    options = {"allow_http": True} if endpoint_url.startswith("http://") else None
    store = S3Store(bucket, endpoint=endpoint_url, client_options=options)
    gate = asyncio.Semaphore(concurrency)
    made: set[str] = set()

    async def fetch(key: str) -> None:
        async with gate:
            result = await obstore.get_async(store, key)
            data = await result.bytes_async()
        path = os.path.join(dst, key[len(prefix):])
        folder = os.path.dirname(path)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        with open(path, "wb") as f:
            f.write(data)

    tasks = []
    async for batch in obstore.list(store, prefix or None, chunk_size=1000):
        for meta in batch:
            tasks.append(asyncio.create_task(fetch(meta["path"])))
    await asyncio.gather(*tasks)
    return len(tasks)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", nargs="?", help="s3://BUCKET/PREFIX/")
    ap.add_argument("dst", nargs="?", help="local directory")
    ap.add_argument("--endpoint-url", default=None)
    ap.add_argument("--concurrency", type=int, default=64, help="GETs in flight at most (default %(default)s)")
    ap.add_argument("--version", action="store_true")
    args = ap.parse_args()
    if args.version:
        print(version())
        return 0
    if not (args.src and args.src.startswith("s3://") and args.dst and args.endpoint_url):
        print("obstore_cp: an s3:// SRC prefix, a local DST directory and --endpoint-url are needed", file=sys.stderr)
        return 2
    try:
        asyncio.run(download_prefix(args.src, args.dst, args.endpoint_url, args.concurrency))
    except Exception as exc:  # a benchmark tool: one line, the runner records it
        print(f"obstore_cp: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
