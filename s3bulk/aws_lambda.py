"""AWS Lambda entry point: `s3bulk.aws_lambda.handler`.

Event (JSON):
    {"source": "s3://src-bucket/prefix/", "destination": "s3://dst-bucket/copy/",
     "options": {"concurrency": 32, "part_size": "8MiB", ...},      # optional, as on the command line
                 # object properties too, with the CLI's names: "content-type", "metadata" ("k=v,..."
                 # or an object), "tagging", "storage-class", "sse", "sse-c" + "sse-c-key",
                 # "sse-c-copy-source" + "sse-c-copy-source-key", "copy-props", "metadata-directive", ...
     "max_memory": "128MiB",                                         # optional; default: the function's memory
     "stop_before_deadline_ms": 30000,                               # optional; default 30 s
     "endpoint_url": null, "src_endpoint_url": null, "dst_endpoint_url": null,
     "continue": {...}}                                              # what an earlier call returned

Returns counts, the first failures, "done": true when everything was copied, else "done": false
and "continue": the resume token the next invocation passes back as "continue". The deadline is
checked while transfers run: once the remaining time falls under `stop_before_deadline_ms`, no
new object starts (even inside a listed page), the transfers in flight finish, and the token
records what is done object by object (the run's journal, kept in /tmp for the invocation and
returned as JSON: finished key ranges, objects finished in unfinished pages, open multipart
uploads), so the next invocation copies only what is left, continuing open uploads. A token
from another source/destination is refused. ("complete" is "done", kept for older callers; a
token of the older form, a work unit, is still accepted.)

The S3 settings of each side (endpoint, region, addressing, CA bundle, proxies) are resolved once
per call from the event and this function's environment (stores/s3/setup.py settle) and used by every
request of the call; credentials come from the function's role or environment as usual.

Lambda has no /dev/shm, so multiprocessing queues cannot work there: the copy always runs in this
one process, with one event loop and a bounded number of transfers. Imports stay light: rich,
typer and the process pool are never loaded.
"""

from __future__ import annotations

from . import lazy_inspect

lazy_inspect.defer()  # before dataclasses is imported (lazy_inspect.py says why)

from dataclasses import asdict, fields  # noqa: E402
from typing import TYPE_CHECKING, Any, Callable  # noqa: E402

if TYPE_CHECKING:
    from .config.urls import S3Options
    from .engine.job import Job
    from .engine.plan import TransferOptions
    from .model import Summary, WorkUnit

DEFAULT_MARGIN_MS = 30_000
_CLI_NAMES = {"max_buffer": "max_bytes_in_flight"}
_OPTION_SIZES = {"part_size", "multipart_threshold", "max_bytes_in_flight", "copy_threshold", "copy_part_size"}


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """One Lambda invocation: the event read into one copy `Job` (engine/job.py), run to the deadline
    through the one orchestration path, its counts and continuation token out."""
    from .config.sizes import parse_size
    from .engine.job import Job
    from .engine.memory_budget import lambda_budget
    from .errors import S3BulkError

    try:
        src, dst = event["source"], event["destination"]
    except (KeyError, TypeError):
        return {"ok": False, "error": "the event needs 'source' and 'destination'"}
    try:
        options, props = _options(event.get("options"))
        budget = event.get("max_memory")
        budget = parse_size(str(budget), "max_memory") if budget is not None else lambda_budget()
        margin = int(event.get("stop_before_deadline_ms", DEFAULT_MARGIN_MS))
        start, token = _continuation(event.get("continue") or None)
        src_s3, dst_s3 = _sides(event, src, dst, props)
        job = Job("copy", src, dst, options=options, src_s3=src_s3, dst_s3=dst_s3, max_memory=budget, start=start)

        def should_stop() -> bool:
            return context is not None and context.get_remaining_time_in_millis() < margin

        summary, after = _run(job, token, should_stop)
    except S3BulkError as exc:
        return {"ok": False, "error": str(exc)}
    except (TypeError, ValueError) as exc:  # a value of the wrong kind in the event
        return {"ok": False, "error": f"bad event: {exc}"}
    return _answer(summary, after)


def _options(given_options: Any) -> tuple[TransferOptions, dict[str, Any]]:
    """The event's "options" as the engine's TransferOptions (one worker: no process pool inside
    Lambda), and the object-property options among them, checked as the command line checks them
    (config/property_options.py)."""
    from .config import property_options as props_options
    from .config.sizes import parse_size
    from .engine.plan import TransferOptions
    from .errors import UsageError

    known = {f.name for f in fields(TransferOptions)}
    # the command line's names work too: "max-buffer", "max_buffer", "request-timeout", ...
    given = {_CLI_NAMES.get(k.replace("-", "_").lstrip("_"), k.replace("-", "_").lstrip("_")): v
             for k, v in dict(given_options or {}).items()}
    props = props_options.from_json({k: given.pop(k) for k in list(given) if k in props_options.NAMES})
    unknown = set(given) - known
    if unknown:
        raise UsageError(f"unknown options: {', '.join(sorted(unknown))}")
    for name in _OPTION_SIZES & set(given):
        given[name] = parse_size(str(given[name]), name)
    given["workers"] = 1  # no process pool inside Lambda
    if "concurrency" in given:  # as -c N on the command line: exactly N, not a start that may grow
        given.setdefault("max_concurrency", given["concurrency"])
    options = TransferOptions(**given, write_props=props_options.write_props(
        **{k: v for k, v in props.items() if not k.startswith("sse_c_copy_source")}))
    return options, props


def _continuation(cont: Any) -> tuple[WorkUnit | None, Any]:
    """What an earlier invocation returned as "continue": (None, its journal token), or a token of
    the older form, a work unit to start from: (that unit, None)."""
    from .model import WorkUnit

    token = cont.get("journal") if isinstance(cont, dict) else None
    start = WorkUnit(**cont) if cont and token is None else None
    return start, token


def _sides(event: dict[str, Any], src: str, dst: str, props: dict[str, Any]) -> tuple[S3Options, S3Options]:
    """Each side's S3Options from the event's endpoints, with the SSE-C key its objects are read
    with, every setting resolved once from this function's environment and the event (the
    endpoint given here, or AWS_ENDPOINT_URL[_S3]...): the run uses exactly these."""
    from .config import property_options as props_options
    from .config.urls import S3Options
    from .stores.s3.setup import settle

    base = event.get("endpoint_url")
    src_s3 = S3Options(endpoint_url=event.get("src_endpoint_url", base))
    dst_s3 = S3Options(endpoint_url=event.get("dst_endpoint_url", base))
    src_s3, dst_s3 = props_options.customer_keys(src, dst, src_s3, dst_s3, props)  # SSE-C reads
    src_s3 = settle(src_s3) if str(src).startswith("s3://") else src_s3
    dst_s3 = settle(dst_s3) if str(dst).startswith("s3://") else dst_s3
    return src_s3, dst_s3


def _run(job: Job, token: Any, should_stop: Callable[[], bool]) -> tuple[Summary, dict[str, Any] | None]:
    """The job run with its journal in /tmp for the invocation (continuing the token's): its
    summary, and the token the next invocation continues from (None once everything is done)."""
    import os
    import tempfile
    from dataclasses import replace

    from .engine.job import JournalChoice
    from .engine.journal.units import export_token, import_token
    # the one orchestration path itself, as api.run_job calls it without a cluster: importing the
    # API would load every other command's engine actions (ls, rm, versions, receipts, pipes) too
    from .engine.run.orchestrate import run

    with tempfile.TemporaryDirectory(prefix="s3bulk-lambda-") as tmp:
        path = os.path.join(tmp, "journal.sqlite")
        if token is not None:
            import_token(path, token)
        summary = run(replace(job, journal=JournalChoice(path=path, resume=token is not None)),
                      should_stop=should_stop)
        after = None if _done(summary) or not os.path.exists(path) else {"journal": export_token(path)}
    return summary, after


def _done(summary: Summary) -> bool:
    return summary.resume is None and summary.fatal is None


def _answer(summary: Summary, after: dict[str, Any] | None) -> dict[str, Any]:
    """The invocation's answer: counts, the first failures, and where the next one continues."""
    c = summary.counters
    done = _done(summary)
    return {
        "ok": summary.ok,
        "done": done,
        "complete": done,
        "copied": c.done, "copied_bytes": c.done_bytes, "failed": c.failed, "listed": c.listed,
        "failures": [asdict(f) for f in summary.failures[:20]],
        "error": summary.fatal,
        "elapsed_seconds": round(summary.elapsed, 3),
        "peak_rss_bytes": summary.peak_rss_bytes,
        "resumed_skipped": summary.resumed_skipped,
        "continue": after,
    }
