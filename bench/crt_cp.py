"""The AWS CRT transfer client as a command: one object (or a prefix) down or up, built as aws-cli v2 builds it.

    .cache/crt/bin/python bench/crt_cp.py s3://BUCKET/KEY FILE --endpoint-url URL         # download
    .cache/crt/bin/python bench/crt_cp.py FILE s3://BUCKET/KEY --endpoint-url URL         # upload
    .cache/crt/bin/python bench/crt_cp.py s3://BUCKET/PREFIX/ DIR --recursive --endpoint-url URL
    .cache/crt/bin/python bench/crt_cp.py --version

Why: users who care about speed run aws-cli v2 or boto3 with the CRT transfer client
(`preferred_transfer_client = crt`), not aws-cli v1's classic transfer manager, so the benchmarks
compare s3bulk with it. aws-cli v2 is not on PyPI; its transfer path is boto3's dependencies
(botocore, s3transfer, awscrt), assembled here the way awscli/customizations/s3/factory.py does:

- `create_s3_crt_client(region, crt_credentials_provider=..., use_ssl=False for an http://
  endpoint)`, leaving target_throughput and part_size at s3transfer's defaults (CRT's recommended
  throughput target for the machine, 10 Gb/s when it has none; 8 MiB parts) unless
  `--target-gbps` / `--part-size-mib` ask otherwise (the "tuned" rows);
- `BotocoreCRTRequestSerializer(session, {"region_name", "endpoint_url"})`;
- `CRTTransferManager(crt_client, serializer)`: upload(file, bucket, key) / download(bucket, key,
  file), futures waited on. `--recursive` lists the prefix with botocore (as `aws s3 cp
  --recursive` does) and submits one download per key (a local SRC directory: one upload per
  file); the manager keeps at most 128 transfers in flight.

Credentials and region come from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_DEFAULT_REGION), as for aws-cli. Nothing is printed on success; a failure is one line on
stderr and exit 1. Run it with the bench CRT environment (.cache/crt, made by `ensure_crt()`
in bench/peers_bench.py: `uv pip install 'boto3[crt]'`), not the project's.
"""

from __future__ import annotations

import argparse
import os
import sys
from urllib.parse import urlparse

MiB = 1 << 20


def versions() -> str:
    """The versions that decide the CRT client's behaviour, one line (what the results files record)."""
    import importlib.metadata as md
    return ", ".join(f"{name} {md.version(name)}" for name in ("boto3", "botocore", "s3transfer", "awscrt"))


def split_s3(url: str) -> tuple[str, str]:
    bucket, _, key = url[len("s3://"):].partition("/")
    return bucket, key


def transfer_manager(endpoint_url: str, region: str, target_gbps: float | None, part_size_mib: float | None):
    """A CRTTransferManager as aws-cli v2's TransferManagerFactory._create_crt_transfer_manager makes it."""
    import botocore.session
    from s3transfer.crt import (BotocoreCRTCredentialsWrapper, BotocoreCRTRequestSerializer, CRTTransferManager,
                                create_s3_crt_client)

    session = botocore.session.get_session()
    kwargs: dict = {"region": region,
                    "crt_credentials_provider":
                        BotocoreCRTCredentialsWrapper(session.get_credentials()).to_crt_credentials_provider()}
    if urlparse(endpoint_url).scheme == "http":
        kwargs["use_ssl"] = False
    if target_gbps:
        kwargs["target_throughput"] = int(target_gbps * 1e9 / 8)  # s3transfer takes bytes a second
    if part_size_mib:
        kwargs["part_size"] = int(part_size_mib * MiB)
    client = create_s3_crt_client(**kwargs)
    serializer = BotocoreCRTRequestSerializer(session, {"region_name": region, "endpoint_url": endpoint_url})
    return CRTTransferManager(client, serializer), session


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", nargs="?")
    ap.add_argument("dst", nargs="?")
    ap.add_argument("--endpoint-url", default=None)
    ap.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    ap.add_argument("--recursive", action="store_true",
                    help="every key under the s3:// prefix, or every file under the local directory")
    ap.add_argument("--target-gbps", type=float, default=None,
                    help="CRT throughput target in Gb/s (default: CRT's recommendation, 10 when it has none)")
    ap.add_argument("--part-size-mib", type=float, default=None, help="part size in MiB (default: s3transfer's 8)")
    ap.add_argument("--version", action="store_true")
    args = ap.parse_args()
    if args.version:
        print(versions())
        return 0
    if not args.src or not args.dst or not args.endpoint_url:
        print("crt_cp: SRC, DST and --endpoint-url are needed", file=sys.stderr)
        return 2
    try:
        manager, session = transfer_manager(args.endpoint_url, args.region, args.target_gbps, args.part_size_mib)
        with manager:
            futures = []
            if args.src.startswith("s3://") and args.recursive:
                bucket, prefix = split_s3(args.src)
                lister = session.create_client("s3", region_name=args.region, endpoint_url=args.endpoint_url)
                made: set[str] = set()
                for page in lister.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
                    for obj in page.get("Contents", []):
                        path = os.path.join(args.dst, obj["Key"][len(prefix):])
                        folder = os.path.dirname(path)
                        if folder not in made:
                            os.makedirs(folder, exist_ok=True)
                            made.add(folder)
                        futures.append(manager.download(bucket, obj["Key"], path))
            elif args.src.startswith("s3://"):
                bucket, key = split_s3(args.src)
                futures.append(manager.download(bucket, key, args.dst))
            elif args.recursive:  # a local tree under the s3:// prefix, as `aws s3 cp --recursive` walks it
                bucket, prefix = split_s3(args.dst)
                for folder, _, names in os.walk(args.src):
                    for name in names:
                        path = os.path.join(folder, name)
                        key = prefix + os.path.relpath(path, args.src).replace(os.sep, "/")
                        futures.append(manager.upload(path, bucket, key))
            else:
                bucket, key = split_s3(args.dst)
                futures.append(manager.upload(args.src, bucket, key))
            for future in futures:
                future.result()
    except Exception as exc:  # a benchmark tool: one line, the runner records it
        print(f"crt_cp: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
