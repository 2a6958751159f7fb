"""Object properties kept in a local file's extended attributes (--preserve-xattrs).

The names are rclone's (its local backend's --metadata): every `user.NAME` attribute is metadata
NAME, so Content-Type is `user.content-type` and x-amz-meta-owner is `user.owner`. A tree written
by either tool uploads the same with the other. Best effort: a filesystem without user xattrs
(tmpfs on old kernels, some network mounts) keeps the bytes and none of the properties.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from ...model import SYSTEM_METADATA, ObjectProps

PREFIX = "user."
OWN = "user.s3bulk."  # s3bulk's marks on a file, never uploaded as metadata
_SYSTEM = {name.replace("_", "-"): name for name in SYSTEM_METADATA}  # content-type -> content_type
_UNSUPPORTED = (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM, errno.ENOSYS)


def attributes(props: ObjectProps) -> list[tuple[str, bytes]]:
    """(xattr name, value) for the properties a file keeps: system metadata and user metadata."""
    out = [(PREFIX + header, value.encode()) for header, name in _SYSTEM.items()
           if (value := getattr(props, name))]
    out += [(PREFIX + k.lower(), v.encode()) for k, v in props.metadata or ()]
    return out


def write(fd: int, props: ObjectProps | None) -> None:
    """Set the attributes on an open file (the temporary one, before it is renamed into place)."""
    if props is None:
        return
    for name, value in attributes(props):
        try:
            os.setxattr(fd, name, value)
        except OSError as exc:
            if exc.errno in _UNSUPPORTED:
                return
            raise


def read(path: str) -> ObjectProps:
    """The properties a file's user.* attributes hold (nothing where the filesystem has none)."""
    try:
        # s3bulk's own marks (stores/file_times.py COPY_OF) are no metadata of the object
        names = [n for n in os.listxattr(path) if n.startswith(PREFIX) and not n.startswith(OWN)]
    except OSError as exc:
        if exc.errno in _UNSUPPORTED:
            return ObjectProps()
        raise
    system: dict[str, Any] = {}
    meta: list[tuple[str, str]] = []
    for n in sorted(names):
        try:
            value = os.getxattr(path, n).decode("utf-8", "replace")
        except OSError:
            continue  # removed meanwhile
        key = n[len(PREFIX):]
        if key in _SYSTEM:
            system[_SYSTEM[key]] = value
        else:
            meta.append((key, value))
    return ObjectProps(**system, metadata=tuple(meta) if meta else None)
