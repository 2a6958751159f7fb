"""`--backup-dir URL --suffix SUF`: what a sync or rm would delete or overwrite is first copied there.

Each object goes to the same key relative to its side's prefix under the backup location, plus the
suffix, through the engine's own `Transfer` (engine/transfer/one_object.py): server-side when both
are on the same endpoint (CopyObject, UploadPartCopy above the copy threshold), streamed otherwise.
Only once its backup landed may the object be deleted or overwritten; a backup that fails is the
caller's failure for that key (nothing deleted, nothing overwritten).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ...config.urls import Location
from ...errors import NotFound, S3BulkError
from ...model import ObjectInfo
from ..plan import KeyMap, TransferOptions
from .one_object import ByteBudget, Transfer

CONCURRENCY = 16  # backups of one batch in flight


class Backup:
    """Copies objects of `side` (an open store listing under `prefix`) to the backup location."""

    def __init__(self, side: Any, prefix: str, target: Any, target_prefix: str, suffix: str,
                 options: TransferOptions) -> None:
        self.side, self.target, self.suffix = side, target, suffix
        self.keymap = KeyMap(prefix, target_prefix)
        keymap: Any = _Suffixed(self.keymap, suffix)
        self.transfer = Transfer(side, target, keymap, options, ByteBudget(options.part_size * 4))
        self.saved = 0

    async def save(self, keys: list[str]) -> list[tuple[str, str]]:
        """Back up each key; returns (key, why) for those whose backup did not land. A key already
        gone from its side needs no backup (nothing will be deleted or overwritten)."""
        failed: list[tuple[str, str]] = []
        window = asyncio.Semaphore(CONCURRENCY)

        async def one(key: str) -> None:
            async with window:
                try:
                    info: ObjectInfo = await self.side.head(key)
                except NotFound:
                    return
                except S3BulkError as exc:
                    failed.append((key, str(exc)))
                    return
                try:
                    await self.transfer.copy(info)
                    self.saved += 1
                except NotFound:
                    return
                except S3BulkError as exc:
                    failed.append((key, str(exc)))
                except Exception as exc:  # a bug must not let the delete go ahead
                    failed.append((key, f"{type(exc).__name__}: {exc}"))

        await asyncio.gather(*(one(k) for k in keys))
        return failed

    async def close(self) -> None:
        try:
            await self.target.close()
        except Exception:
            pass


class _Suffixed:
    """A key map that appends `suffix` to what `inner` maps a key to."""

    __slots__ = ("inner", "suffix", "exact_dst")

    def __init__(self, inner: KeyMap, suffix: str) -> None:
        self.inner, self.suffix, self.exact_dst = inner, suffix, None

    def __call__(self, key: str) -> str:
        return self.inner(key) + self.suffix


async def open_backup(side: Any, side_loc: Location, backup: Location, suffix: str,
                      options: TransferOptions) -> Backup:
    """A Backup of `side` (opened at `side_loc`) into `backup`."""
    from ...stores import open_store

    target = await open_store(backup, options.store_options())
    prepare = getattr(target, "prepare", None)
    if prepare is not None:
        await prepare()
    return Backup(side, side_loc.prefix, target, backup.prefix, suffix, options)


def check_backup_location(backup: Location, dst: Location, src: Location | None, allows: Any = None) -> None:
    """Refuse a backup location inside DST's synced prefix (unless the filters exclude it: rclone
    refuses overlapping backup dirs too), DST inside it, or one inside or around SRC."""
    from ...errors import UsageError

    def same_place(a: Location, b: Location) -> bool:
        if a.kind != b.kind:
            return False
        if a.kind == "local":
            return True
        return a.root == b.root and a.s3 == b.s3

    def inside(inner: Location, outer: Location) -> bool:
        if inner.kind == "local":
            import os

            i = os.path.join(os.path.realpath(inner.root), inner.prefix)
            o = os.path.join(os.path.realpath(outer.root), outer.prefix)
            return i == o or i.startswith(o.rstrip(os.sep) + os.sep)
        return inner.prefix.startswith(outer.prefix)

    if same_place(backup, dst):
        rel = None
        if inside(backup, dst):
            if backup.kind == "local":
                import os

                rel = os.path.relpath(os.path.realpath(backup.root), os.path.realpath(dst.root)).replace(os.sep, "/")
                rel = "" if rel == "." else rel
            else:
                rel = backup.prefix[len(dst.prefix):]
            if not rel or allows is None or allows(rel.rstrip("/") + "/x"):
                raise UsageError(f"--backup-dir {backup.raw} is inside DST {dst.raw}: it would be synced and "
                                 "deleted; choose a place outside it (or --exclude it)")
        elif inside(dst, backup):
            raise UsageError(f"--backup-dir {backup.raw} holds DST {dst.raw}: choose a place outside it")
    if src is not None and same_place(backup, src) and (inside(backup, src) or inside(src, backup)):
        raise UsageError(f"--backup-dir {backup.raw} overlaps SRC {src.raw}: choose a place outside it")
