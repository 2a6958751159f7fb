"""s3bulk: copy and mirror very large numbers of objects between S3, local disk and list/get servers.

    import s3bulk
    summary = s3bulk.copy("s3://bucket/prefix/", "/data/mirror")
    for obj in s3bulk.ls("s3://bucket/prefix/"):
        ...

Imports are lazy so that `import s3bulk` stays cheap (no rich, typer or process pool).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["copy", "ls", "alist", "TransferOptions", "S3Options", "Summary", "errors"]

if TYPE_CHECKING:
    from .api import alist, copy, ls
    from .engine.plan import TransferOptions
    from .model import Summary
    from .urls import S3Options


def __getattr__(name: str) -> Any:
    if name in ("copy", "ls", "alist"):
        from . import api

        return getattr(api, name)
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
        from . import errors

        return errors
    raise AttributeError(name)
