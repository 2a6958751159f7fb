"""s3bulk: copy and mirror very large numbers of objects between S3, local disk and list/get servers.

    import s3bulk
    summary = s3bulk.copy("s3://bucket/prefix/", "/data/mirror")
    summary = s3bulk.sync("/data/site", "s3://bucket/site/", delete=True, exclude=["*.tmp"])
    s3bulk.watch("/data/site", "s3://bucket/site/", delete=True, stop=event)  # sync, then follow changes
    summary = await s3bulk.copy_async(...)   # inside a running event loop (every call has an *_async twin)
    for obj in s3bulk.ls("s3://bucket/prefix/"):
        ...
    s3bulk.rm("s3://bucket/tmp/")                 # batched DeleteObjects; RmResult(deleted, failures)
    s3bulk.move("/data/outbox", "s3://bucket/in/")  # copy, deleting each source once its copy landed
    s3bulk.du("s3://bucket/logs/", depth=1)       # DuResult(objects, bytes, groups)
    s3bulk.check("/data/site", "s3://bucket/site/", checksum=True).identical

    class Failures(s3bulk.Subscriber):           # a run's events, one method per kind
        def on_failure(self, event: s3bulk.Failure) -> None:
            print(event.src, event.error)
    s3bulk.copy("s3://bucket/prefix/", "/data/mirror", subscriber=Failures())

Imports are lazy so that `import s3bulk` stays cheap (no rich, typer or process pool): each name
is imported from s3bulk.api (or below) the first time it is used. A type checker sees the same
names as plain imports (the `if TYPE_CHECKING:` block) and no module `__getattr__`, so it finds
every public name typed and refuses one that does not exist (`s3bulk.typo`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = [
    "copy", "copy_async", "sync", "sync_async", "watch", "watch_async", "move", "move_async", "check",
    "check_async", "check_report", "check_report_async",
    "ls", "ls_async", "ls_pages", "ls_pages_async", "du", "du_async", "rm", "rm_async",
    "upload_stream", "upload_stream_async", "download_stream", "download_stream_async",
    "Summary", "CheckResult", "ReceiptResult", "DuResult", "RmResult", "PipeResult", "ObjectInfo",
    "TransferOptions", "S3Options",
    "Subscriber", "Event", "Progress", "Failure", "Stopping", "Notice", "Copied", "Deleted", "Restarted",
    "DryRunAction", "Difference", "WatchStatus", "Skipped",
    "errors",
]

if TYPE_CHECKING:
    from . import errors
    from .api import (CheckResult, Copied, Deleted, Difference, DryRunAction, DuResult, Event, Failure, Notice,
                      ObjectInfo, PipeResult, Progress, ReceiptResult, Restarted, RmResult, S3Options, Skipped,
                      Stopping, Subscriber, Summary, TransferOptions, WatchStatus, check, check_async, check_report,
                      check_report_async, copy, copy_async, download_stream, download_stream_async, du, du_async, ls,
                      ls_async, ls_pages, ls_pages_async, move, move_async, rm, rm_async, sync, sync_async,
                      upload_stream, upload_stream_async, watch, watch_async)


if not TYPE_CHECKING:  # at run time each name is imported on first use; a type checker reads the imports above
    def __getattr__(name: str) -> object:
        if name == "errors":
            import importlib

            return importlib.import_module(".errors", __name__)
        if name in __all__:
            from . import api

            return getattr(api, name)
        raise AttributeError(f"module 's3bulk' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
