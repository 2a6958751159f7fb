"""`s3bulk check --against-report FILE DST`: a report read back as a receipt (engine/actions/receipt.py),
its differences printed as `check` prints them, its exit code check's (0 all there, 1 not)."""

from __future__ import annotations

import sys

import typer

from ..errors import UsageError
from . import shell
from .options import Params, S3Endpoints


def check_against_report(params: Params) -> None:
    """Run the receipt check of `check`'s values: the one positional argument is DST."""
    from ..engine.actions.receipt import check_receipt
    from .render import KeyLines

    if params["dst"] is not None:
        raise UsageError("with --against-report FILE give DST alone (the report stands for SRC)")
    others = [flag for name, flag in (("report", "--report"), ("checksum", "--checksum"), ("one_way", "--one-way"),
                                      ("include", "--include"), ("exclude", "--exclude")) if params.get(name)]
    if others:
        raise UsageError(f"{others[0]} does not go with --against-report")
    dst, json_out, quiet = params["src"], params["json_out"], params["quiet"]
    _, dst_s3 = S3Endpoints.of(params).resolve()
    # its start and summary lines have always escaped what is not ASCII (json's default), unlike the rest
    lines = KeyLines(json_out=json_out, ascii_frame=True)
    lines.start("check", params["against_report"], dst)
    result = check_receipt(params["against_report"], dst, dst_s3, concurrency=params["concurrency"] or 64,
                           subscriber=lines)
    lines.out.flush()
    if json_out:
        lines.summary({"command": "check", "src": params["against_report"], "dst": dst, "ok": result.ok,
                       "checked": result.checked, "same": result.same, "differs": result.differs,
                       "missing": result.missing})
    elif not quiet:
        print(f"s3bulk check: {result.checked:,} objects in the report, {result.same:,} as recorded, "
              f"{result.differs:,} different, {result.missing:,} missing", file=sys.stderr)
    if not result.ok:
        raise typer.Exit(shell.EXIT_FAILED)
