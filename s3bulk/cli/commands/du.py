"""`s3bulk du URL`: count the objects and bytes under URL, optionally per prefix."""

from __future__ import annotations

import json
import sys

import typer

from ..options import Endpoint, NoSign, PathStyle, Profile, Region, S3Connection
from ..options import LogRequests, LogRequestsHeaders  # --log-requests (http/requestlog.py)
from ..shell import quiet_broken_pipe
from ..options import (Exclude, ExcludeFrom, ExcludeIfPresent, FilterFrom, FilterOptions, Include, IncludeFrom,  # filters
                       MaxAge, MaxDepth, MaxSize, MinAge, MinSize)
from .. import shell


def du_command(
    url: str = typer.Argument(..., metavar="URL", help="s3://BUCKET[/PREFIX] or a local directory"),
    depth: int = typer.Option(0, "--depth", metavar="N", min=0, help="also one line per prefix of N '/'-separated levels below URL"),
    json_out: bool = typer.Option(False, "--json", help="one JSON object per line: a 'du' event per prefix, a 'class' event per storage class, then the 'total'"),
    endpoint_url: Endpoint = None, profile: Profile = None, region: Region = None,
    no_sign_request: NoSign = False, path_style: PathStyle = False,
    include: Include = None, exclude: Exclude = None,
    include_from: IncludeFrom = None, exclude_from: ExcludeFrom = None, filter_from: FilterFrom = None,
    max_depth: MaxDepth = None, exclude_if_present: ExcludeIfPresent = None,
    min_size: MinSize = None, max_size: MaxSize = None, min_age: MinAge = None, max_age: MaxAge = None,
    log_requests: LogRequests = None, log_requests_headers: LogRequestsHeaders = False,
) -> None:
    """Count the objects and bytes under URL (optionally per prefix), listing in parallel.

    Keys come in order, so each prefix's lines are printed as soon as it ends: memory stays flat
    however many prefixes there are."""
    from ...api import du_groups
    from ...config.sizes import human_bytes

    s3 = S3Connection(endpoint_url, profile, region, no_sign_request, path_style).options()
    filters = FilterOptions(include, exclude, include_from, exclude_from, filter_from, max_depth, exclude_if_present,
                            min_size, max_size, min_age, max_age).filters(shell.ARGV)
    out = sys.stdout
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    classes: dict[str, list[int]] = {}
    unsized = [0]  # objects listed without a size: a list/get server's (their bytes are unknown, not 0)

    def line(objects: int, nbytes: int, label: str) -> str:
        return (f"{human_bytes(nbytes):>11} {nbytes:>16,} B {objects:>14,} "
                f"{'object ' if objects == 1 else 'objects'}  {label}\n")

    try:
        for prefix, objects, nbytes in du_groups(url, s3=s3, depth=depth, classes=classes, unsized=unsized,
                                                   filters=filters):
            if prefix is None:  # before the total: what each storage class holds (S3 sources)
                for name, (c_objects, c_bytes) in sorted(classes.items()):
                    out.write(dumps({"event": "class", "storage_class": name, "objects": c_objects,
                                     "bytes": c_bytes, "v": 1}) + "\n" if json_out
                              else line(c_objects, c_bytes, f"(storage class {name})"))
            if json_out:
                kind = "total" if prefix is None else "du"
                row = {"event": kind, "prefix": prefix, "objects": objects, "bytes": nbytes, "v": 1}
                if prefix is None:
                    del row["prefix"]
                out.write(dumps(row) + "\n")
            else:
                out.write(line(objects, nbytes, "(total)" if prefix is None else prefix))
    except BrokenPipeError:
        quiet_broken_pipe()
        return
    if unsized[0]:
        print(f"s3bulk: {unsized[0]:,} of the objects were listed without a size (a list/get server's listing "
              f"gives none): their bytes are not in the counts", file=sys.stderr)


EXAMPLES = (
    ("Count the objects and bytes under a prefix",
     "s3bulk du s3://bucket/photos/",
     "    1.2 MiB        1,257,349 B              3 objects  (storage class STANDARD)\n"
     "    1.2 MiB        1,257,349 B              3 objects  (total)"),
    ("One line per top-level prefix, then the total",
     "s3bulk du s3://bucket/ --depth 1",
     "    1.2 MiB        1,257,349 B              3 objects  photos/\n"
     "   10.0 KiB           10,200 B              2 objects  site/\n"
     "    1.2 MiB        1,267,549 B              5 objects  (storage class STANDARD)\n"
     "    1.2 MiB        1,267,549 B              5 objects  (total)"),
    ("Count only what was not modified for 90 days (a lifecycle rule's candidates)",
     "s3bulk du s3://bucket/ --min-age 90d"),
    ("The same as JSON lines, for a script",
     "s3bulk du s3://bucket/ --depth 1 --json",
     '{"event": "du", "prefix": "photos/", "objects": 3, "bytes": 1257349, "v": 1}\n'
     '{"event": "du", "prefix": "site/", "objects": 2, "bytes": 10200, "v": 1}\n'
     '{"event": "class", "storage_class": "STANDARD", "objects": 5, "bytes": 1267549, "v": 1}\n'
     '{"event": "total", "objects": 5, "bytes": 1267549, "v": 1}'),
)
