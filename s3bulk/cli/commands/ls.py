"""`s3bulk ls URL`: list every object under URL with its size, in key order (or every version, or
one level: --no-recursive)."""

from __future__ import annotations

import typer

from ...config.defaults import LIST_CONCURRENCY
from ..options import Endpoint, NoSign, PathStyle, Profile, Region, S3Connection
from ..options import LogRequests, LogRequestsHeaders  # --log-requests (http/requestlog.py)
from ..options import (Exclude, ExcludeFrom, ExcludeIfPresent, FilterFrom, FilterOptions, Include, IncludeFrom,  # filters
                       MaxAge, MaxDepth, MaxSize, MinAge, MinSize)
from .. import shell
from ..ls_lines import LsLines, run_ls

__all__ = ["EXAMPLES", "LsLines", "ls_command"]  # LsLines: also here, its old home (bench/listing_render_bench.py)


def ls_command(
    url: str = typer.Argument(..., metavar="URL", help="s3://BUCKET[/PREFIX], s3://BUCKET/KEY, http://HOST:PORT/ or a local directory or file; lists recursively, or one level with --no-recursive"),
    json_out: bool = typer.Option(False, "--json", help="one JSON object per line"),
    unordered: bool = typer.Option(False, "--unordered",
                                   help="print pages as they arrive instead of in key order: faster on big buckets"),
    concurrency: int = typer.Option(LIST_CONCURRENCY, "--concurrency", "-c", metavar="N", min=1,
                                    help="list requests in flight over split key ranges"),
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
    include: Include = None, exclude: Exclude = None,
    include_from: IncludeFrom = None, exclude_from: ExcludeFrom = None, filter_from: FilterFrom = None,
    max_depth: MaxDepth = None, exclude_if_present: ExcludeIfPresent = None,
    min_size: MinSize = None, max_size: MaxSize = None, min_age: MinAge = None, max_age: MaxAge = None,
    all_versions: bool = typer.Option(False, "--all-versions", help="every version and delete marker, with its version id and whether it is the latest"),
    recursive: bool = typer.Option(True, "--recursive/--no-recursive", help=(
        "--no-recursive lists one level, as aws s3 ls and s5cmd ls do: the objects directly under URL, and "
        "each prefix below it once as 'PRE prefix/' (--json: {\"prefix\": ...}), one request per 1,000 rows; "
        "recursive stays the default, as scripts rely on it")),
    log_requests: LogRequests = None, log_requests_headers: LogRequestsHeaders = False,
) -> None:
    """List every object under URL with its size, in key order (unless --unordered).

    URL is read as copy reads SRC: s3://BUCKET/NAME is the object NAME if there is one, else
    everything under NAME/; a URL that matches nothing is an error. With --no-recursive, one level
    under it: its objects and the prefixes below it (PRE lines), as aws s3 ls lists."""
    s3 = S3Connection(endpoint_url, profile, region, no_sign_request, path_style).options()
    filters = FilterOptions(include, exclude, include_from, exclude_from, filter_from, max_depth, exclude_if_present,
                            min_size, max_size, min_age, max_age).filters(shell.ARGV)
    run_ls(url, s3, filters, json_out=json_out, unordered=unordered, concurrency=concurrency,
           all_versions=all_versions, recursive=recursive)


EXAMPLES = (
    ("List every object under a prefix, in key order",
     "s3bulk ls s3://bucket/photos/",
     "2026-11-21 17:02:45      1204133 photos/2026/beach.jpg\n"
     "2026-11-21 17:02:45         5003 photos/2026/notes.txt\n"
     "2026-11-20 09:14:03        48213 photos/cat.jpg\n"
     "3 objects, 1,257,349 bytes"),
    ("List a big bucket faster, pages printed as they arrive",
     "s3bulk ls s3://bucket/ --unordered"),
    ("List a public bucket as JSON lines",
     "s3bulk ls s3://bucket/ --no-sign-request --json"),
    ("List the objects of 1 GiB or more, at most two levels below the prefix",
     "s3bulk ls s3://bucket/data/ --min-size 1GiB --max-depth 2"),
    ("List every version and delete marker",
     "s3bulk ls s3://bucket/docs/ --all-versions"),
    ("Browse one level: the objects directly under a prefix, and its sub-prefixes as PRE lines",
     "s3bulk ls s3://bucket/photos/ --no-recursive"),
    ("See what a server is asked and answers: every request, its status and headers, secrets redacted",
     "s3bulk ls s3://bucket/ --log-requests requests.log --log-requests-headers"),
)
