"""`s3bulk cat URL`: write one object to stdout (the work is cli/pipes.py's, as for `copy URL -`)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..options import (Endpoint, MaxBandwidth, MaxMemory, NoSign, PartSize, PathStyle, Profile, Region,
                       RequestTimeout, Retries, S3Connection)
from ..options import LogRequests, LogRequestsHeaders  # --log-requests (http/requestlog.py)


def cat_command(
    url: str = typer.Argument(..., metavar="URL", help="s3://BUCKET/KEY, a local file, or http://HOST:PORT/get/NAME"),
    part_size: PartSize = "8MiB",
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", metavar="N", min=1,
                                             help="ranged GETs in flight (each holds one part)")] = 8,
    max_memory: MaxMemory = None,
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
    retries: Retries = 5, request_timeout: RequestTimeout = 60.0, max_bandwidth: MaxBandwidth = "0",
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="a summary line on stderr")] = False,
    progress: Annotated[bool, typer.Option("--progress", help="a live byte count and rate on stderr")] = False,
    log_requests: LogRequests = None, log_requests_headers: LogRequestsHeaders = False,
) -> None:
    """Write one object to stdout (as `s3bulk copy URL -`): ranged GETs in parallel, written in
    order, memory bounded by part size x parts in flight. A prefix or a missing key is an error."""
    from ..pipes import pipe_transfer_options, run_pipe

    s3 = S3Connection(endpoint_url, profile, region, no_sign_request, path_style).options()
    options = pipe_transfer_options(part_size=part_size, concurrency=concurrency, retries=retries,
                                    request_timeout=request_timeout, max_bandwidth=max_bandwidth,
                                    max_memory=max_memory, expected_size=None, src=url, dst="-", upload=False)
    run_pipe("cat", url, s3, options, upload=False, json_out=False, quiet=not verbose, summary=True,
             progress=progress)


EXAMPLES = (
    ("Print an object",
     "s3bulk cat s3://bucket/notes.txt"),
    ("Read a big object with 16 ranged GETs in flight, into another program",
     "s3bulk cat s3://bucket/logs.gz -c 16 | zcat | wc -l"),
    ("Show the byte count and rate as it goes",
     "s3bulk cat s3://bucket/big.tar --progress | tar x"),
)
