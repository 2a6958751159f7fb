"""`--backup-dir URL --suffix SUF`: what a sync or rm would delete or overwrite, or what a copy or mv
would overwrite, is first copied there.

Each object goes to the same key relative to its side's prefix under the backup location, plus the
suffix, through the engine's own `Transfer` (engine/transfer/one_object.py): server-side when both
are on the same endpoint (CopyObject, UploadPartCopy above the copy threshold), streamed otherwise.
Only once its backup landed may the object be deleted or overwritten; a backup that fails is the
caller's failure for that key (nothing deleted, nothing overwritten).

sync and rm back up what their listing says is there (`save`). copy and mv list no DST: their
`Transfer` asks with one HEAD per object, only when --backup-dir is given, and backs up what it
found (`keep`), raising BackupFailed when that did not land (engine/transfer/one_object.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ...config.urls import Location
from ...errors import BackupFailed, NotFound, S3BulkError, UsageError
from ...model import ObjectInfo
from ...stores import Writer
from ..plan import KeyMap, Plan, TransferOptions
from .one_object import ByteBudget, Transfer

CONCURRENCY = 16  # backups of one batch in flight


class Backup:
    """Copies objects of `side` (an open store listing under `prefix`) to the backup location."""

    def __init__(self, side: Any, prefix: str, target: Writer, target_prefix: str, suffix: str,
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
                why = await self.keep(info)
                if why is not None:
                    failed.append((key, why))

        await asyncio.gather(*(one(k) for k in keys))
        return failed

    async def keep(self, info: ObjectInfo) -> str | None:
        """Back up `info`, an object of the side just found there; None once it landed (or the
        object is gone meanwhile: nothing left to lose), else why it did not."""
        try:
            await self.transfer.copy(info)
            self.saved += 1
        except NotFound as exc:  # the object gone from its side meanwhile, or the backup's place missing
            return str(exc) if await self._still_there(info.key) else None
        except S3BulkError as exc:
            return str(exc)
        except Exception as exc:  # a bug must not let the delete or overwrite go ahead
            return f"{type(exc).__name__}: {exc}"
        return None

    async def _still_there(self, key: str) -> bool:
        """Whether the side still has `key` (a NotFound may have come from the backup's side: a
        bucket removed, a directory gone; then the object must stay)."""
        try:
            await self.side.head(key)
        except NotFound:
            return False
        except S3BulkError:
            return True
        return True

    async def keep_or_refuse(self, info: ObjectInfo) -> None:
        """`keep`, raising BackupFailed (the object is not to be overwritten) when it did not land."""
        why = await self.keep(info)
        if why is not None:
            url = self.side.location.url_for(info.key)
            raise BackupFailed(f"not overwritten: its backup failed: {why}", op="backup", url=url, key=info.key)

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
    if not isinstance(target, Writer):  # a list/get server: refused before, by the planner and rm
        raise UsageError(f"--backup-dir {backup.raw} cannot be written to")
    await target.prepare()
    return Backup(side, side_loc.prefix, target, backup.prefix, suffix, options)


def replaced_side(plan: Plan) -> Location:
    """Where a copy or mv writes, as the backup's side (a Plan's DST): the same location but for
    one object named by its full key at S3 (`copy s3://b/k s3://b/new-name`), whose prefix is then
    that key's folder, so its backup keeps its name."""
    dst: Location = plan.dst
    if plan.single_key is None or not dst.is_s3 or not dst.prefix or dst.prefix.endswith("/"):
        return dst
    return dst.with_prefix(dst.prefix[:dst.prefix.rfind("/") + 1])


def check_backup_location(backup: Location, dst: Location, src: Location | None, allows: Any = None) -> None:
    """Refuse a backup location inside DST's synced prefix (unless the filters exclude it: rclone
    refuses overlapping backup dirs too), DST inside it, or one inside or around SRC."""
    from ...errors import UsageError

    def inside(inner: Location, outer: Location) -> bool:
        if inner.is_local:
            import os

            i = os.path.join(os.path.realpath(inner.root), inner.prefix)
            o = os.path.join(os.path.realpath(outer.root), outer.prefix)
            return i == o or i.startswith(o.rstrip(os.sep) + os.sep)
        return inner.prefix.startswith(outer.prefix)

    if backup.same_store(dst):
        rel = None
        if inside(backup, dst):
            if backup.is_local:
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
    if src is not None and backup.same_store(src) and (inside(backup, src) or inside(src, backup)):
        raise UsageError(f"--backup-dir {backup.raw} overlaps SRC {src.raw}: choose a place outside it")
