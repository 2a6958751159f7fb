"""s3bulk: copy and mirror very large numbers of objects between S3, local disk and list/get servers.

    import s3bulk
    summary = s3bulk.copy("s3://bucket/prefix/", "/data/mirror")
    summary = s3bulk.sync("/data/site", "s3://bucket/site/", delete=True, exclude=["*.tmp"])
    summary = await s3bulk.acopy(...)        # inside a running event loop
    for obj in s3bulk.ls("s3://bucket/prefix/"):
        ...
    s3bulk.rm("s3://bucket/tmp/")                 # batched DeleteObjects; RmResult(deleted, failures)
    s3bulk.move("/data/outbox", "s3://bucket/in/")  # copy, deleting each source once its copy landed
    s3bulk.du("s3://bucket/logs/", depth=1)       # DuResult(objects, bytes, groups)
    s3bulk.check("/data/site", "s3://bucket/site/", checksum=True).identical

Imports are lazy so that `import s3bulk` stays cheap (no rich, typer or process pool).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["copy", "sync", "acopy", "async_sync", "ls", "alist", "rm", "move", "mv", "du", "check",
           "TransferOptions", "S3Options", "Summary", "errors"]

if TYPE_CHECKING:
    from .api import acopy, alist, async_sync, check, copy, du, ls, move, rm, sync
    from .api import move as mv
    from .engine.plan import TransferOptions
    from .model import Summary
    from .urls import S3Options


def __getattr__(name: str) -> Any:
    if name in ("copy", "sync", "acopy", "async_sync", "ls", "alist", "rm", "move", "du", "check"):
        from . import api

        return getattr(api, name)
    if name == "mv":  # the command's name
        from .api import move

        return move
    if name == "TransferOptions":
        from .engine.plan import TransferOptions

        return TransferOptions
    if name == "S3Options":
        from .urls import S3Options

        return S3Options
    if name == "Summary":
        from .model import Summary

        return Summary
    if name == "errors":
        import importlib

        return importlib.import_module(".errors", __name__)
    raise AttributeError(name)
