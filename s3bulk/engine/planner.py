"""From two user arguments to a Plan, checking up front what can be checked.

The checks here are cheap and turn the commonest mistakes (bucket missing,
credentials wrong, endpoint down, a file where a directory should be) into one
clear error before any worker starts. Decisions:

- SRC ending in "/" (or a bucket, or a directory) is a prefix: everything under it
  is copied and DST mirrors the layout below it.
- SRC naming an existing object (or file) copies that one object. DST ending in "/"
  or naming an existing directory receives it under its own base name; otherwise
  DST is the new name.
- Any other SRC is taken as a prefix with "/" added ("s3://b/dir" means "dir/"), the way `ls`
  reads it too (`resolve_source`).
- A SRC that names no object and no non-empty prefix is an error ("no such key or prefix"), so a
  mistyped key fails before DST is touched; a bucket (empty prefix) is never one: it may be empty.
- `*` and `?` in an S3 SRC are not patterns: unless an object has exactly that name, the run is
  refused with the prefix and --include/--exclude filters that say it.
"""

from __future__ import annotations

import dataclasses
import os
from typing import NoReturn, Protocol, cast

from ..errors import AccessDenied, NotFound, NothingListed, StoreError, UsageError
from ..model import ObjectInfo, WorkUnit
from ..stores import GetResult, ObjectHead, Store, Writer, open_store, settle_location
from ..config.urls import Location, S3Options, parse_location
from ..config.filters import Filters
from .job import Job
from .plan import Found, KeyMap, Plan, TransferOptions
from .plan import SyncOptions


async def build_plan(job: Job) -> Plan:
    """A plan for the job's `copy` (sync=None) or `sync`. Sync always treats SRC and DST as prefixes.
    `files_from`: the keys to copy come from this manifest (engine/listing/manifest.py), not a listing.
    `empty_source_ok`: an S3 prefix holding nothing is SRC as it now is, not a mistyped name
    (`sync --watch` after its first sync: everything under it was deleted)."""
    src_text, dst_text, src_s3, dst_s3 = job.src, job.dst, job.src_s3, job.dst_s3
    options, filters, sync, move, empty_source_ok = job.options, job.filters, job.sync, job.move, job.empty_source_ok
    files_from, files_from_format, files_from_name = \
        (job.manifest.path, job.manifest.format, job.manifest.name) if job.manifest else (None, "auto", None)
    src = settle_location(parse_location(src_text, src_s3))
    dst = settle_location(parse_location(dst_text, dst_s3))
    filters.check_source(src)
    if not dst.writable:
        raise UsageError("an http:// list/get server is read-only: it can be a SRC, not a DST")
    if sync is not None and sync.delete and not src.lists_in_order:
        raise UsageError("--delete needs a source listed in key order; a list/get server pages by token only")
    manifest_format = "lines"
    if files_from is not None:
        from .listing.manifest import check_manifest

        manifest_format = check_manifest(files_from, files_from_format)
        if not src.lists_in_order:
            raise UsageError("--files-from needs an S3 or local SRC (a list/get server is read by listing)")
        if sync is not None and sync.delete and files_from_format != "changes":  # watch: listing/manifest.py
            raise UsageError("--delete cannot be used with --files-from (the manifest is not the whole SRC)")
    guarded = _guards_empty_source(sync, files_from_format if files_from is not None else None)
    # a download of one plain object: the GET that finds it reads it too, when it is small enough to
    # be read whole anyway (the Whole way); the worker then writes what it brought
    read_below = options.multipart_threshold if dst.is_local and not options.dry_run else 0
    src, single, found = await _resolve_source(
        src, options, prefix_only=sync is not None or files_from is not None,
        empty_ok=empty_source_ok or guarded or _allows_empty(sync), read_below=read_below)
    filters = filters.located(src)  # --exclude-if-present: refused unless SRC is a local directory
    if single is not None:
        dst, exact = _single_destination(dst, dst_text, os.path.basename(single))
        keymap = KeyMap("", "", exact)
        # one object is one worker's work: starting more processes only costs their memory and start-up
        options = dataclasses.replace(options, workers=1)
    else:
        if dst.is_s3:
            dst = dst.with_prefix(_as_dir(dst.prefix))
        keymap = KeyMap(src.prefix, dst.prefix)
    _refuse_overlap(src, dst, single)
    if sync is not None and options.backup_dir is not None:
        raise UsageError("sync's backup_dir goes in its SyncOptions, not in TransferOptions")
    backup_dir = sync.backup_dir if sync is not None else options.backup_dir  # copy / mv: options
    # checked before DST is prepared: a refused backup dir leaves nothing made (not even DST's directory)
    backup = _backup_location(backup_dir, src, dst, filters) if backup_dir else None
    await _prepare_destination(dst, options, checked_by=src if found is not None else None)
    if guarded:
        await _refuse_empty_source(src, dst, options, sync, empty_source_ok)
    if move and not src.writable:
        raise UsageError("mv needs a source it can delete from; a list/get server is read-only (use copy)")
    return Plan(src=src, dst=dst, keymap=keymap, options=options, single_key=single, filters=filters, sync=sync,
                move=move, manifest=files_from, manifest_format=manifest_format,
                manifest_name=files_from_name or (os.path.abspath(files_from) if files_from else None),
                backup=backup, found=found)


def _allows_empty(sync: SyncOptions | None) -> bool:
    """sync --delete --allow-empty-source: an empty S3 prefix is SRC as it is, not a typo."""
    return sync is not None and sync.delete and sync.allow_empty_source


def _guards_empty_source(sync: SyncOptions | None, manifest_format: str | None) -> bool:
    """Whether this run checks for an empty SRC up front: a real (or dry) sync --delete of a listed
    source (not `check`, not a narrowed `sync --watch` batch, whose vanished keys are meant)."""
    return (sync is not None and sync.delete and not sync.check and not sync.allow_empty_source
            and manifest_format is None)


async def _refuse_empty_source(src: Location, dst: Location, options: TransferOptions, sync: SyncOptions | None,
                               empty_source_ok: bool) -> None:
    """An empty SRC is not a mirror: `sync --delete` from a SRC listing nothing (an unmounted
    directory, a mistyped or emptied prefix) while DST holds objects would delete every one of
    them. Refused here, before any worker starts, with one line (exit 2) unless
    --allow-empty-source. One listing request a side; the run's delete phase checks again on what
    it actually listed (engine/run/deletes.py)."""
    async def first(loc: Location) -> bool:
        store = await open_store(loc, options.store_options())
        try:
            page = await store.list_page(loc.prefix, WorkUnit(), 1)
            return bool(page.entries or page.problems)
        finally:
            await store.close()

    if await first(src):
        return
    if dst.is_local and not os.path.isdir(dst.root):
        has_dst = False
    else:
        has_dst = await first(dst)
    if has_dst:
        raise UsageError(f"SRC {src.raw} lists no objects, so sync --delete would delete everything under DST "
                         f"{dst.raw}; refused (an unmounted directory or a mistyped prefix looks like this; "
                         "add --allow-empty-source if it is meant)")
    if src.is_s3 and src.prefix and not empty_source_ok:
        raise NothingListed(f"no such key or prefix: {src.raw}")


def _backup_location(backup_dir: str, src: Location, dst: Location, filters: Filters) -> Location:
    """--backup-dir resolved (with DST's S3 settings) and checked: not inside what is synced (or
    copied to), not around it, not overlapping SRC."""
    from .transfer.backup import check_backup_location

    backup = settle_location(parse_location(backup_dir, dst.s3 if dst.is_s3 else None))
    if not backup.writable:
        raise UsageError("--backup-dir must be writable: an S3 prefix or a local directory")
    if backup.is_s3:
        backup = backup.with_prefix(_as_dir(backup.prefix))
    allows = filters.compiled().allows if filters else None
    check_backup_location(backup, dst, src, allows)
    return backup


def _as_dir(prefix: str) -> str:
    return prefix if not prefix or prefix.endswith("/") else prefix + "/"


class _SmallReader(Protocol):
    """An S3 store's one GET that finds an object and reads it when small (stores/s3/store.py)."""

    async def read_small(self, key: str, most: int) -> tuple[ObjectInfo, GetResult | None, ObjectHead | None]: ...


async def _found(store: Store, key: str, read_below: int) -> tuple[ObjectInfo, GetResult | None, ObjectHead | None]:
    """What the one request that finds `key` says of it (NotFound: no such object), and with
    `read_below` the object itself when an S3 GET found it at most that long. A GET refused for
    another reason (an archived object, a policy that allows HEAD) is asked again as before, by a
    HEAD, so the run goes on (or fails) exactly as it did."""
    if read_below and store.features.props == "s3":
        try:
            return await cast(_SmallReader, store).read_small(key, read_below)
        except StoreError as exc:
            if isinstance(exc, NotFound) or exc.retryable:
                raise  # retried already (the store's wrapper): asking again by HEAD and GET would only repeat them
    return await store.head(key), None, None


async def _resolve_source(src: Location, options: TransferOptions, prefix_only: bool = False,
                          empty_ok: bool = False, read_below: int = 0
                          ) -> tuple[Location, str | None, Found | None]:
    """(location listing under its prefix, the single key if SRC names one object, and what the
    request that found it said of it, with the object itself when `read_below` asked for it and it
    is that small (_found): the worker then copies it without listing it again, or reading it again)."""
    if src.is_local:
        path = src.root
        if os.path.isfile(path) and prefix_only:
            raise UsageError(f"{src.raw!r} is a file; sync works on directories and prefixes (use copy)")
        if os.path.isfile(path):
            return Location("local", os.path.dirname(path), "", src.raw), os.path.basename(path), None
        if not os.path.exists(path):
            raise NotFound("no such file or directory", op="read", url=src.raw)
        if not os.path.isdir(path):
            raise UsageError(f"{src.raw!r} is neither a regular file nor a directory")
        if not os.access(path, os.R_OK | os.X_OK):
            raise AccessDenied("permission denied", op="read", url=src.raw)
        return src, None, None
    store = await open_store(src, options.store_options())
    try:
        if not src.lists_in_order:
            await store.list_page("", WorkUnit(), 1)  # the server answers the contract
            return src, None, None
        prefix = src.prefix
        if prefix and not prefix.endswith("/") and not prefix_only:
            try:
                info, first, head = await _found(store, prefix, read_below)
                return src, prefix, Found.of(info, first, store, head)
            except (NotFound, AccessDenied):
                pass  # not one object: a prefix (listing below says if the bucket itself is the problem)
        prefix = _as_dir(prefix)
        # one key is enough to know the bucket exists, credentials work, the endpoint answers, and
        # that the prefix is not empty
        page = await store.list_page(prefix, WorkUnit(), 1)
        if prefix and not page.entries and not page.problems and not empty_ok:
            nothing_under(src)
        return src.with_prefix(prefix), None, None
    finally:
        await store.close()


def nothing_under(src: Location) -> NoReturn:
    """The error of an S3 SRC prefix that lists no key: a pattern refused with the command meant
    (checked only now: keys may hold '*' and '?'), else NothingListed."""
    if any(c in src.prefix for c in "*?"):
        raise UsageError(_no_wildcards(src))
    raise NothingListed(f"no such key or prefix: {src.raw}")


def _no_wildcards(src: Location) -> str:
    """The refusal of a pattern in an S3 SRC, with the command that does what was meant."""
    first = min(i for i in (src.prefix.find("*"), src.prefix.find("?")) if i >= 0)
    cut = src.prefix.rfind("/", 0, first) + 1
    base, pattern = f"s3://{src.bucket}/{src.prefix[:cut]}", src.prefix[cut:]
    return (f"wildcards are not supported in {src.raw!r}: give the prefix and filter the keys below it, "
            f"e.g. {base} --exclude '*' --include {pattern!r}")


async def resolve_source(text: str, s3: S3Options | None = None,
                         options: TransferOptions = TransferOptions()) -> tuple[Location, str | None]:
    """What SRC `text` names, as `copy` reads it: (location listing under its prefix, the single key
    if it names one object). `ls` uses this so both read a key-or-prefix the same way."""
    src, single, _ = await _resolve_source(parse_location(text, s3), options)
    return src, single


def _single_destination(dst: Location, dst_text: str, name: str) -> tuple[Location, str]:
    """(destination location, exact destination key) for a one-object copy."""
    if dst.is_s3:
        if not dst.prefix or dst.prefix.endswith("/"):
            return dst, dst.prefix + name
        return dst, dst.prefix
    path = dst.root
    if dst_text.endswith(("/", os.sep)) or os.path.isdir(path):
        return dst, name
    return Location("local", os.path.dirname(path), "", dst.raw), os.path.basename(path)


def _refuse_overlap(src: Location, dst: Location, single: str | None) -> None:
    """Copying a tree into itself would list what it writes; refuse it."""
    if src.is_local and dst.is_local and single is None:
        s, d = os.path.realpath(src.root), os.path.realpath(dst.root)
        if d == s or d.startswith(s + os.sep):
            raise UsageError("destination is inside the source directory; choose a destination outside it")
    if src.is_s3 and dst.is_s3 and single is None and src.root == dst.root \
            and src.s3 == dst.s3 and dst.prefix.startswith(src.prefix):
        raise UsageError("destination prefix is inside the source prefix of the same bucket")


async def _prepare_destination(dst: Location, options: TransferOptions, checked_by: Location | None = None) -> None:
    """DST made ready (a local directory made) and checked (an S3 bucket there and ours: HeadBucket).
    `checked_by`: SRC, when the HEAD that found its one object asked the same bucket with the same
    settings: that answer already said what HeadBucket would (the bucket is there, the credentials
    sign, the endpoint answers), and a request more costs a one-object copy as much as the copy
    (S3 bills per request). Another bucket is asked: its errors stay those of the check."""
    if checked_by is not None and dst.is_s3 and dst.same_store(checked_by) and not options.dry_run:
        return
    if options.dry_run and dst.is_local:  # copy / mv --dry-run write nothing, not even DST's directory
        if os.path.exists(dst.root) and not os.path.isdir(dst.root):
            raise UsageError(f"{dst.raw!r} is a file, but a directory is needed here")
        return
    store = await open_store(dst, options.store_options())
    try:
        if not isinstance(store, Writer):
            raise UsageError(f"{dst.raw!r} cannot be written to")
        await store.prepare()
    finally:
        await store.close()


def names_nothing(exc: Exception) -> bool:
    """Whether a NotFound from `resolve_source` says an S3 prefix holds nothing (not that the
    bucket is missing, nor a local directory: a typo there must not pass for a finished run). A
    `mv --resume` or `rm --resume` run again after it completed meets exactly this."""
    return isinstance(exc, NothingListed)
