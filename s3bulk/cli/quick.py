"""A plain `s3bulk copy SRC DST` or `s3bulk ls URL` read without typer: the common one-object
copy of a script, a CI step or a loop, and a plain listing, start without importing the
command-line parser.

Why: importing typer, building its click commands from every command's signature and parsing took
~70 ms of CPU of a one-object copy's ~210 (2 cores, loopback), more than the copy itself. Only a
command line this module reads exactly as typer reads it is taken here: `copy`, two arguments that
are neither options nor '-', and a few options, each at most once, in their exact spelling
(`--endpoint-url URL` or `--endpoint-url=URL`, `-q`, `--log-requests FILE`...). Anything else (another command, any other
option, a repeated one, an option's value that starts with '-', help, shell completion) returns
None and typer parses the whole command line as before, errors and all. The values are those typer
passes (tests/test_cli_quick.py holds both to the same groups for every option taken here), and the
run is the same `run_transfer` call (cli/run.py). `ls` likewise (`ls_params`): one URL, --json,
--unordered, --no-recursive and the connection options, run by the same `run_ls` (cli/ls_lines.py);
a listing of 200,000 keys at 50 ms a request sent its first request ~60 ms later through typer.
"""

from __future__ import annotations

import os
from typing import Any

# options without a value, as spelled on the command line -> the parameter they set to True
FLAGS = {"-q": "quiet", "--quiet": "quiet", "--json": "json_out", "-v": "verbose", "--verbose": "verbose",
         "--no-journal": "no_journal", "--no-sign-request": "no_sign_request", "--path-style": "path_style"}
# options with one text value, taken as given (typer neither converts nor checks these)
VALUES = {"--endpoint-url": "endpoint_url", "--profile": "profile", "--region": "region",
          "--src-endpoint-url": "src_endpoint_url", "--src-profile": "src_profile", "--src-region": "src_region",
          "--dst-endpoint-url": "dst_endpoint_url", "--dst-profile": "dst_profile", "--dst-region": "dst_region"}
# options with one text value whose typer callback acts as it is read: --log-requests FILE starts the
# request log (cli/options.py _log_requests), done here by copy_params the same way; a FILE that
# cannot be opened leaves the command line to typer, which says so with its own words and exit code
STARTED = {"--log-requests": "log_requests"}

# every parameter of `copy` (cli/commands/copy.py) with the value typer passes when it is not given
DEFAULTS: dict[str, Any] = {
    "workers": 0, "concurrency": None, "part_size": "auto", "multipart_threshold": "16MiB", "max_buffer": "256MiB",
    "page_size": 1000, "max_memory": None, "include": None, "exclude": None, "endpoint_url": None, "profile": None,
    "region": None, "no_sign_request": False, "path_style": False, "src_endpoint_url": None, "src_profile": None,
    "src_region": None, "src_no_sign_request": None, "dst_endpoint_url": None, "dst_profile": None,
    "dst_region": None, "dst_no_sign_request": None, "json_out": False, "quiet": False, "verbose": False,
    "progress": None, "copy_threshold": "5GiB", "copy_part_size": "512MiB", "copy_concurrency": 8, "resume": False, "journal": None,
    "journal_dir": None, "no_journal": False, "retries": 5, "request_timeout": 60.0, "request_deadline": 0.0,
    "retry_max_time": 600.0, "max_rps": 0.0, "max_bandwidth": "0", "adaptive": True, "files_from": None,
    "files_from_format": "auto", "cluster": None, "expected_size": None, "content_type": None,
    "no_guess_mime_type": False, "metadata": None, "cache_control": None, "content_disposition": None,
    "content_encoding": None, "content_language": None, "expires": None, "storage_class": None, "acl": None,
    "tagging": None, "sse": None, "sse_kms_key_id": None, "sse_c": None, "sse_c_key": None,
    "sse_c_copy_source": None, "sse_c_copy_source_key": None, "request_payer": None, "copy_props": "default",
    "metadata_directive": None, "preserve_xattrs": False, "checksum_algorithm": None, "version_id": None,
    "all_versions": False, "include_delete_markers": False, "as_of": None, "report": None, "metrics": None,
    "metrics_linger": 0.0, "verify": False, "force_archived": False, "no_clobber": False, "update": False, "copy_dry_run": False, "max_transfer": None,
    "max_duration": None, "copy_backup_dir": None, "copy_suffix": "",
    "include_from": None, "exclude_from": None, "filter_from": None, "max_depth": None, "exclude_if_present": None,
    "min_size": None, "max_size": None, "min_age": None, "max_age": None,  # the filters (config/filters.py)
    "log_requests": None, "log_requests_headers": False,
}


def copy_params(argv: list[str]) -> dict[str, Any] | None:
    """`copy`'s parameter values for this command line, or None when typer must read it."""
    if len(argv) < 3 or argv[0] != "copy" or "_S3BULK_COMPLETE" in os.environ:
        return None
    read = _read(argv[1:], _COPY_FLAGS, _COPY_VALUES, DEFAULTS)
    if read is None or len(read[1]) != 2:
        return None
    params, positional = read
    if params["log_requests"] is not None and not _start_request_log(params["log_requests"]):
        return None
    params["src"], params["dst"] = positional
    return params


_COPY_FLAGS = {flag: (name, True) for flag, name in FLAGS.items()}
_COPY_VALUES = {**VALUES, **STARTED}


def _start_request_log(target: str) -> bool:
    """Whether the request log (--log-requests) is started on `target`, as typer's callback starts
    it: False when the file cannot be opened, whose error typer's reading then gives."""
    from ..http import requestlog

    try:
        requestlog.start(target)
    except OSError:
        return False
    return True


def _read(args: list[str], flags: dict[str, tuple[str, Any]], values: dict[str, str], defaults: dict[str, Any]
          ) -> tuple[dict[str, Any], list[str]] | None:
    """(the parameters: `defaults` with what `args` give, the positional arguments), or None when
    an argument is not one read here exactly as typer reads it."""
    params = dict(defaults)
    positional: list[str] = []
    seen: set[str] = set()
    given: Any
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg or arg == "-":
            return None  # stdin/stdout and empty arguments: typer's path
        if not arg.startswith("-"):
            positional.append(arg)
            continue
        name, eq, value = arg.partition("=")
        if name in flags and not eq:
            key, given = flags[name]
        elif name in values:
            if not eq:
                if i >= len(args):
                    return None
                value = args[i]
                i += 1
            if not value or value.startswith("-"):
                return None
            key, given = values[name], value
        else:
            return None
        if key in seen:
            return None
        seen.add(key)
        params[key] = given
    return params, positional


# `ls` (cli/commands/ls.py): options without a value -> (the parameter, the value they give it)
LS_FLAGS: dict[str, tuple[str, Any]] = {
    "--json": ("json_out", True), "--unordered": ("unordered", True), "--no-sign-request": ("no_sign_request", True),
    "--path-style": ("path_style", True), "--recursive": ("recursive", True), "--no-recursive": ("recursive", False)}
LS_VALUES = {"--endpoint-url": "endpoint_url", "--profile": "profile", "--region": "region"}
# what `ls` gets for the parameters this module reads, when they are not given (the others: their
# defaults, which run_ls is called with in cli/__init__.py)
LS_DEFAULTS: dict[str, Any] = {"json_out": False, "unordered": False, "endpoint_url": None, "profile": None,
                               "region": None, "no_sign_request": False, "path_style": False, "recursive": True}


def ls_params(argv: list[str]) -> dict[str, Any] | None:
    """`ls`'s values for the parameters read here (LS_DEFAULTS' names, and `url`), or None when
    typer must read this command line."""
    if len(argv) < 2 or argv[0] != "ls" or "_S3BULK_COMPLETE" in os.environ:
        return None
    read = _read(argv[1:], LS_FLAGS, LS_VALUES, LS_DEFAULTS)
    if read is None or len(read[1]) != 1:
        return None
    params, positional = read
    params["url"] = positional[0]
    return params
