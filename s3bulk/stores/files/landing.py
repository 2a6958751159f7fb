"""Temporary files this process writes, and their landing under their final names.

Why here and not in the local store: the worker that stops (engine/run/worker.py) and the
coordinator's Ctrl-C path must refuse further landings and remove what is half written, and the
engine may not import an adapter. The local store writes through these; the engine only stops,
allows and counts them.

A forced stop (a second Ctrl-C) must leave the summary's count equal to the files on disk. A file
lands with the rename into place; the worker counts it when the write returns. stop_landing()
refuses every rename from then on (under the same lock the renames take), and writes_in_threads()
tells when the writes running in threads have come back, so each file that landed is counted
before the worker reports its last counts and exits (engine/run/worker.py, Worker.terminate).
"""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from typing import Any

from ...errors import DestinationExists, LandingRefused
from ..conditions import NO_CLOBBER

# Temporary files this process has open, so a worker told to stop can remove them before it exits.
OPEN_TEMPS: set[str] = set()
TEMP_INODES: dict[str, int] = {}  # temporary path -> inode we created there (checked before the rename)
# Temporary files of downloads kept for a resume (stores/files/partfile.py): a stop leaves them in place.
KEPT_TEMPS: set[str] = set()

_LANDING = threading.Lock()
_landing_refused = False
_writes_in_threads = 0  # changed on the event loop's thread only


def remove_open_temps() -> None:
    """Unlink every temporary file still being written (called on SIGTERM), except those kept for
    a resume, which a resumed run continues."""
    for path in list(OPEN_TEMPS):
        if path not in KEPT_TEMPS:
            unlink_quietly(path)
    OPEN_TEMPS.clear()


def stop_landing() -> None:
    global _landing_refused
    with _LANDING:
        _landing_refused = True


def allow_landing() -> None:
    """A new run in this process (the in-process worker, the API called again) lands files again."""
    global _landing_refused
    with _LANDING:
        _landing_refused = False


def writes_in_threads() -> int:
    return _writes_in_threads


async def write_in_thread(fn: Any, *args: Any) -> None:
    """Run a write that lands a file in a thread, counted for writes_in_threads()."""
    global _writes_in_threads
    _writes_in_threads += 1
    try:
        await asyncio.to_thread(fn, *args)
    finally:
        _writes_in_threads -= 1


def unlink_quietly(path: str) -> None:
    OPEN_TEMPS.discard(path)
    ino = TEMP_INODES.pop(path, None)
    try:
        if ino is None or os.lstat(path).st_ino == ino:  # never another process's file of that name
            os.unlink(path)
    except OSError:
        pass


def land(tmp: str, final: str) -> None:
    """Rename `tmp` into place as `final`, unless this process is stopping (LandingRefused) or
    another process took the temporary name over (FileExistsError)."""
    ino = TEMP_INODES.get(tmp)
    if ino is not None and os.lstat(tmp).st_ino != ino:
        TEMP_INODES[tmp] = -1  # not ours any more: never unlink it either
        raise FileExistsError(errno.EEXIST, "another process is writing the same file", tmp)
    with _LANDING:
        if _landing_refused:
            raise LandingRefused(final)
        if NO_CLOBBER.get():
            _rename_noreplace(tmp, final)
        else:
            os.rename(tmp, final)
    TEMP_INODES.pop(tmp, None)
    OPEN_TEMPS.discard(tmp)


_RENAME_NOREPLACE = 1  # linux/fs.h
_renameat2: Any = None  # libc's renameat2, once looked up (False: this libc has none)


def _rename_noreplace(tmp: str, final: str) -> None:
    """--no-clobber: put `tmp` in place as `final` only if nothing has that name, atomically
    (stores/conditions.py): renameat2(RENAME_NOREPLACE) where the kernel and filesystem offer it,
    else a hard link (which fails if the name exists) and the temporary name unlinked. An existing
    name raises DestinationExists; the temporary file is then removed by the caller."""
    global _renameat2
    if _renameat2 is None:
        import ctypes
        import ctypes.util

        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            _renameat2 = libc.renameat2
            _renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
        except (OSError, AttributeError):
            _renameat2 = False
    try:
        if _renameat2 is not False:
            import ctypes

            at_fdcwd = -100
            if _renameat2(at_fdcwd, os.fsencode(tmp), at_fdcwd, os.fsencode(final), _RENAME_NOREPLACE) == 0:
                return
            err = ctypes.get_errno()
            if err == errno.EEXIST:
                raise FileExistsError(err, os.strerror(err), final)
            if err not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise OSError(err, os.strerror(err), final)
        os.link(tmp, final)  # no renameat2 here: a link fails alike when the name exists
        os.unlink(tmp)
    except FileExistsError:
        raise DestinationExists("already at the destination (--no-clobber): not replaced",
                                op="write", url=final) from None
