"""The local filesystem as a store: keys are "/"-separated paths relative to a root directory.

Listing yields keys in UTF-8 byte order of the whole key, the order S3 uses, so a
local tree and a bucket can be merged and cut into the same key ranges. That is not
the order of a plain sorted directory walk: "a-b" sorts before "a/b" because '-' is
below '/'. Sorting each directory's children by their name, with "/" appended to
directories, makes the depth-first walk come out in exactly the global order.

Writes go to a temporary name in the target directory and are renamed into place
when complete, and every key is checked so that nothing lands outside the root. The
temporary name is derived from the final name (`.s3bulk-<hash>.s3bulk.part`), so when a
killed run left one behind, the run that redoes the object replaces it. A multipart download of a
run that keeps a journal is the exception (open_partial): its file stays when the run stops, with
a record of the parts in it, and a resumed run continues it (stores/files/partfile.py).
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import itertools
import os
import stat as stat_mod
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from typing import TYPE_CHECKING, Generator, Sequence

from ...errors import NotFound, StoreError, UnsafeKey, WriteFailed, AccessDenied, Corrupt, DestinationUnusable
from ...model import ObjectInfo, ObjectProps, Page, WorkUnit
from ...config.urls import Location
from . import xattrs
from .. import file_times  # the mark a download leaves, asked once per file
from ..file_times import Listed
from ..base import (WHOLE, FileBodyReader, Features, GetOptions, GetResult, LevelLister, LevelPage, PropsReader, ServerSideCopier, Store, Traits,
                    Unsupported, Writer)
from ..features import features_of
from ..files.bodies import FileBody
from ...errors import DestinationExists
from ..conditions import source_file
from ..files import partfile
from ..files.filesink import size_for_parts, write_part
from ..files.landing import (KEPT_TEMPS, OPEN_TEMPS, TEMP_INODES, land, unlink_quietly,
                             write_in_thread)

if TYPE_CHECKING:
    from ..files.filesink import RangeSink

_tmp_counter = itertools.count()
_tuple_new = tuple.__new__  # a listed file's ObjectInfo made without NamedTuple's own __new__ (a Python call)
TMP_SUFFIX = ".s3bulk.part"
_BIG = 1 << 20  # reads and writes above this go to a thread so the event loop keeps moving

# One cached directory: parallel lists of sort keys (bytes, "/" appended for dirs), names, is-dir flags.
_Dir = tuple[list[bytes], list[str], list[bool]]


def safe_segments(key: str) -> list[str]:
    """The path segments of `key`, or UnsafeKey if it could escape the root or is no valid path."""
    if not key:
        raise UnsafeKey("empty key cannot be a local path", op="write", key=key)
    if "\x00" in key:
        raise UnsafeKey("key contains a NUL character", op="write", key=key)
    if key.startswith("/"):
        raise UnsafeKey("absolute key would land outside the destination", op="write", key=key)
    if key.endswith("/") and not key.endswith("//"):
        # only a zero-byte "folder marker" can end in "/" (put makes it a directory): a key ending
        # in "/" that holds data has no file name to be written to
        raise UnsafeKey("skipped: the key ends in '/' (a folder name) but the object is not empty, "
                        "and a local directory cannot hold data", op="write", key=key)
    segments = key.split("/")
    for seg in segments:
        if seg in (".", ".."):
            raise UnsafeKey(f"key has a {seg!r} segment and would land outside the destination",
                            op="write", key=key)
        if seg == "":
            raise UnsafeKey("key has an empty path segment ('//')", op="write", key=key)
        if len(seg) > 63 and len(os.fsencode(seg)) > 255:  # 63 chars cannot exceed 255 UTF-8 bytes
            raise UnsafeKey("a path segment is longer than 255 bytes", op="write", key=key)
    return segments


def _translate_os(exc: OSError, op: str, path: str, key: str = "") -> StoreError:
    if isinstance(exc, FileNotFoundError):
        return NotFound(exc.strerror or "no such file or directory", op=op, url=path, key=key)
    if isinstance(exc, PermissionError):
        return AccessDenied(exc.strerror or "permission denied", op=op, url=path, key=key)
    if isinstance(exc, NotADirectoryError) and op in ("head", "read"):
        # "f/x" where f is a file: no such key (as S3 answers), not a failed write
        return NotFound("no such file (a parent is a file)", op=op, url=path, key=key)
    if isinstance(exc, NotADirectoryError):
        return WriteFailed("a file is in the way where a directory is needed", op=op, url=path, key=key)
    if isinstance(exc, IsADirectoryError):
        return WriteFailed("a directory is in the way where a file is needed", op=op, url=path, key=key)
    if exc.errno == errno.ENOSPC:
        return DestinationUnusable("no space left on device", op=op, url=path, key=key)
    if exc.errno == errno.EROFS:
        return DestinationUnusable("read-only file system", op=op, url=path, key=key)
    if exc.errno == errno.EDQUOT:
        return DestinationUnusable("disk quota exceeded", op=op, url=path, key=key)
    if exc.errno == errno.EFBIG:
        return WriteFailed("file too large for this filesystem or limit", op=op, url=path, key=key)
    return WriteFailed(exc.strerror or str(exc), op=op, url=path, key=key)


class LocalStore(Writer, ServerSideCopier, PropsReader, FileBodyReader, LevelLister):
    """Files under `location.root` (an absolute directory)."""

    ordered = True
    # a temporary file dies with its run, so uploads are not resumable (no ResumableUploads); mtimes
    # are float seconds (a microsecond is what a float keeps of today's nanosecond stat times); no
    # hashes in listings
    traits = Traits(ordered=True, read_into=True, keeps_mtime=True, mtime_precision=1e-6, props="xattrs", conditional_writes=True)

    def __init__(self, location: Location, *, dir_cache_entries: int = 20_000, flush_writes: bool = False) -> None:
        self.location = location
        self.features: Features = features_of(self, self.traits)
        self.flush_writes = flush_writes
        self.root = location.root
        self._root_slash = os.path.join(self.root, "")  # a key's path is this and the key (_src_path)
        self._real_root: str | None = None
        self._dirs: OrderedDict[str, _Dir] = OrderedDict()
        self._dir_cache_entries = dir_cache_entries
        self._cached_entries = 0
        self._safe_parents: OrderedDict[str, None] = OrderedDict()
        self._pid = os.getpid()  # stores are opened inside the process that uses them
        # list files as file_times.Listed (with their atimes, where a download's mark may be):
        # asked by a sync's comparator reading marks (list_atimes); off, the listing makes ObjectInfos
        self._atimes = False

    async def close(self) -> None:
        self._dirs.clear()

    # ---------------------------------------------------------------- listing

    def _sorted_dir(self, rel_dir: str) -> _Dir:
        """The children of root/rel_dir sorted by key bytes; cached (LRU, bounded by entry count)."""
        hit = self._dirs.get(rel_dir)
        if hit is not None:
            self._dirs.move_to_end(rel_dir)
            return hit
        items: list[tuple[bytes, str, bool]] = []
        with os.scandir(os.path.join(self.root, rel_dir) if rel_dir else self.root) as it:
            for entry in it:
                name = entry.name
                if name.endswith(TMP_SUFFIX) and name.startswith(".s3bulk-"):
                    continue  # our own unfinished writes are never objects
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                raw = os.fsencode(name)
                items.append((raw + b"/" if is_dir else raw, name, is_dir))
        items.sort()
        cached: _Dir = ([i[0] for i in items], [i[1] for i in items], [i[2] for i in items])
        self._dirs[rel_dir] = cached
        self._cached_entries += len(items)
        if self._cached_entries > self._dir_cache_entries:
            # evict least recently used directories, but never the ones on the path being walked
            # (above all the root, which every page passes through)
            for name in list(self._dirs):
                if self._cached_entries <= self._dir_cache_entries:
                    break
                if name == rel_dir or rel_dir.startswith(name):
                    continue
                self._cached_entries -= len(self._dirs.pop(name)[0])
        return cached

    def _walk(self, rel_dir: str, prefix: bytes, after: bytes | None) -> Generator[tuple[str, bool], None, None]:
        """Yield (key, is_dir=False) for files under rel_dir with key > after and key starting with prefix."""
        keys, names, dirs = self._sorted_dir(rel_dir)
        base = os.fsencode(rel_dir)
        start = 0
        if prefix and len(prefix) > len(base):
            start = bisect_left(keys, prefix[len(base):])
            # a directory whose "name/" is a prefix of the wanted prefix sorts before it
            if start > 0 and dirs[start - 1] and prefix[len(base):].startswith(keys[start - 1]):
                start -= 1
        descend_with_after: int | None = None
        if after is not None and after.startswith(base):
            rest = after[len(base):]
            i = bisect_right(keys, rest)
            if i > 0 and dirs[i - 1] and rest.startswith(keys[i - 1]):
                descend_with_after = i - 1
                i -= 1
            start = max(start, i)
        elif after is not None and after > base:
            return
        for idx in range(start, len(keys)):
            full = base + keys[idx]
            if prefix and not full.startswith(prefix):
                if dirs[idx] and prefix.startswith(full):
                    pass  # the prefix reaches into this directory
                elif full > prefix:
                    return
                else:
                    continue
            if dirs[idx]:
                sub_after = after if idx == descend_with_after else None
                yield from self._walk(os.fsdecode(full), prefix, sub_after)
            else:  # the key as str: rel_dir (ends in "/") and the name scandir gave, no fsdecode a file
                yield rel_dir + names[idx], False

    def list_page_sync(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        """list_page without an event loop (the list/get server lists with it from its threads)."""
        if not os.path.isdir(self.root):
            if os.path.exists(self.root):
                raise NotFound("is a file, not a directory", op="list", url=self.root)
            raise NotFound("no such directory", op="list", url=self.root)
        pfx = os.fsencode(prefix)
        after = os.fsencode(unit.after) if unit.after is not None else None
        until = unit.until
        entries: list[ObjectInfo] = []
        problems: list[tuple[str, str]] = []
        start_dir = prefix.rsplit("/", 1)[0] + "/" if "/" in prefix else ""
        if start_dir and not os.path.isdir(os.path.join(self.root, start_dir)):
            return Page([])
        last: str | None = None
        root_slash = self._root_slash
        walker = self._walk(start_dir, pfx, after)
        atimes = self._atimes
        try:
            for key, _ in walker:
                if until is not None and key > until:
                    return Page(entries, problems=tuple(problems))
                last = key
                if not key.isascii():  # (a flag of the str: only other names pay for the encode)
                    try:
                        key.encode("utf-8")
                    except UnicodeEncodeError:
                        problems.append((os.fsencode(key).decode("utf-8", "backslashreplace"),
                                         "file name is not valid UTF-8"))
                        continue
                try:
                    st = os.stat(root_slash + key)  # os.path.join's result for a listed key, without its layers
                except OSError as exc:
                    problems.append((key, f"cannot stat: {exc.strerror}"))
                    continue
                if not stat_mod.S_ISREG(st.st_mode):
                    if stat_mod.S_ISDIR(st.st_mode):
                        continue  # a symlink to a directory: not followed, to avoid loops
                    problems.append((key, "not a regular file"))
                    continue
                if atimes:
                    listed = _tuple_new(Listed, (key, st.st_size, st.st_mtime, None, None))
                    listed.atime_ns = st.st_atime_ns
                    entries.append(listed)
                else:  # (tuple.__new__: ObjectInfo() is a Python function that calls it, ~0.2 us a file)
                    entries.append(_tuple_new(ObjectInfo, (key, st.st_size, st.st_mtime, None, None)))
                if len(entries) + len(problems) >= limit:
                    break
            else:
                return Page(entries, problems=tuple(problems))
        except FileNotFoundError:
            pass  # a directory vanished under us: what we have is the page
        except PermissionError as exc:
            raise AccessDenied(exc.strerror or "permission denied", op="list",
                               url=exc.filename or self.root) from exc
        finally:
            walker.close()
        return Page(entries, next_after=last, problems=tuple(problems))

    _list_sync = list_page_sync  # the old private name, still used by serve/server.py

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        return await asyncio.to_thread(self.list_page_sync, prefix, unit, limit)

    async def list_level(self, prefix: str, token: str | None, limit: int) -> LevelPage:
        return await asyncio.to_thread(self._level_sync, prefix, token, limit)

    def _level_sync(self, prefix: str, token: str | None, limit: int) -> LevelPage:
        """One directory read (the cached, sorted one the recursive listing reads): its files
        whose names start with what `prefix` has after its last "/", and its directories as
        prefixes ("name/", a directory with no file in it too), paged by the last name given."""
        if not os.path.isdir(self.root):
            raise NotFound("no such directory", op="list", url=self.root)
        start_dir = prefix.rsplit("/", 1)[0] + "/" if "/" in prefix else ""
        if start_dir and not os.path.isdir(os.path.join(self.root, start_dir)):
            return LevelPage([], [])
        try:
            keys, names, dirs = self._sorted_dir(start_dir)
        except FileNotFoundError:
            return LevelPage([], [])
        except PermissionError as exc:
            raise AccessDenied(exc.strerror or "permission denied", op="list", url=exc.filename or self.root) from exc
        partial = os.fsencode(prefix[len(start_dir):])
        lo = bisect_left(keys, partial)
        if token is not None:
            lo = max(lo, bisect_right(keys, os.fsencode(token[len(start_dir):])))
        entries: list[ObjectInfo] = []
        prefixes: list[str] = []
        last = ""
        for idx in range(lo, len(keys)):
            if not keys[idx].startswith(partial):
                break
            if len(entries) + len(prefixes) >= limit:
                return LevelPage(entries, prefixes, last)
            key = start_dir + names[idx]
            last = key + "/" if dirs[idx] else key
            try:
                key.encode("utf-8")
            except UnicodeEncodeError:
                continue  # not a name S3 could hold (the recursive listing reports it as a problem)
            if dirs[idx]:
                prefixes.append(key + "/")
                continue
            try:
                st = os.stat(os.path.join(self.root, key))
            except OSError:
                continue  # gone meanwhile, or a dangling link: not an object
            if stat_mod.S_ISREG(st.st_mode):  # a link to a directory is not followed, as above
                entries.append(ObjectInfo(key, st.st_size, st.st_mtime, None))
        return LevelPage(entries, prefixes)

    # ---------------------------------------------------------------- reading

    def _src_path(self, key: str) -> str:
        # what os.path.join gives, without its layers for the keys a listing yields (~0.5 us an object)
        if key and key[0] != "/":
            return self._root_slash + key
        return os.path.join(self.root, key) if key else self.root

    async def head(self, key: str) -> ObjectInfo:
        path = self._src_path(key)
        try:
            st = os.stat(path)
        except OSError as exc:
            raise _translate_os(exc, "head", path, key) from exc
        if not stat_mod.S_ISREG(st.st_mode):
            raise NotFound("not a regular file", op="head", url=path, key=key)
        return ObjectInfo(key, st.st_size, st.st_mtime, None)

    def list_atimes(self) -> None:
        self._atimes = True

    def mark_copy_of(self, key: str, last_modified: float, mtime: float) -> None:
        """Note on a file just written that it is the object whose LastModified is `last_modified`,
        its time set to `mtime` from the object's metadata (stores/file_times.py): a later sync from
        the same object then sees the two equal without asking S3. Twice: in the atime (which the
        listing reads anyway; the file's mtime kept to the ns) and in the COPY_OF xattr (which
        outlives a read that moves the atime). Best effort: a filesystem without user xattrs keeps
        no mark (such a sync asks with one HEAD instead), and a file that landed is never failed
        for want of its mark. (A big download's or a HEAD-proved file's: a small one is marked as
        it is written, put_marked.)"""
        path = self._src_path(key)
        _mark(path, file_times.mark_value(last_modified, mtime))
        try:
            os.utime(path, ns=(file_times.atime_mark(last_modified, mtime), os.stat(path).st_mtime_ns))
        except OSError:
            pass

    def copy_of(self, key: str) -> tuple[float, float] | None:
        """(LastModified, mtime) as mark_copy_of noted them on the file, or None."""
        try:
            a, b = os.getxattr(self._src_path(key), file_times.COPY_OF).split()
            return float(a), float(b)
        except (OSError, ValueError):
            return None

    def _read_sync(self, path: str, key: str, start: int | None, end: int | None) -> bytes:
        """Bytes [start, end) (or the whole file), all of one version of it (conditions.FileVersion:
        the fstat at open and after the read are the object's; else SourceFileChanged)."""
        version = source_file()
        fd = _open_source(path, key)
        try:
            st = os.fstat(fd)
            ident = version.opened(st, path, key)
            if start is None:
                size = st.st_size
                data = os.read(fd, size) if size else b""
                want = size
            else:
                assert end is not None  # a range has both ends
                want = end - start
                data = os.pread(fd, want, start)
            while len(data) < want:  # short reads happen on some filesystems
                more = os.pread(fd, want - len(data), (start or 0) + len(data))
                if not more:
                    version.read(ident, os.fstat(fd), path, key)  # shrank: changed, if it says so
                    raise Corrupt(f"file shrank while reading: got {len(data)} of {want} bytes",
                                  op="read", url=path, key=key)
                data += more
            version.read(ident, os.fstat(fd), path, key)
            return data
        except OSError as exc:
            raise _translate_os(exc, "read", path, key) from exc
        finally:
            os.close(fd)

    async def get(self, key: str, opts: GetOptions = WHOLE) -> GetResult:
        """A file has no ETag (if_match is not asked of it: features.conditional_reads is off) and
        no versions; its version is the one the listing saw (stores/conditions.FileVersion)."""
        if opts.version_id is not None:
            raise Unsupported("a file has no versions", op="get", url=self._src_path(key), key=key)
        if opts.first is not None:
            data, size = await self._read_first(key, opts.first)
            return GetResult(data, size)
        rng = opts.range
        if rng is None:
            data = await self._read(key)
            if opts.with_props:
                return GetResult(data, len(data), await self.read_props(key))
            return GetResult(data, len(data))
        start, end = rng
        if opts.into is not None:
            return GetResult(await self._read_into(key, start, end, opts.into))
        data = await self._read(key, start, end)
        if opts.sink is not None:
            opts.sink.begin()
            opts.sink.write(memoryview(data))
            return GetResult(b"")
        return GetResult(data)

    async def _read(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        path = self._src_path(key)
        if start is not None and end is not None and end - start > _BIG:
            return await asyncio.to_thread(self._read_sync, path, key, start, end)
        return self._read_sync(path, key, start, end)

    def _read_into_sync(self, path: str, key: str, start: int, end: int, buf: memoryview) -> memoryview:
        """A part of an upload: checked like _read_sync, so a part read after the file changed is
        never sent and the upload is aborted instead of completed from two versions."""
        version = source_file()
        fd = _open_source(path, key)
        try:
            ident = version.opened(os.fstat(fd), path, key)
            want, got = end - start, 0
            while got < want:
                n = os.preadv(fd, [buf[got:want]], start + got)
                if n == 0:
                    version.read(ident, os.fstat(fd), path, key)
                    raise Corrupt(f"file shrank while reading: got {got} of {want} bytes",
                                  op="read", url=path, key=key)
                got += n
            version.read(ident, os.fstat(fd), path, key)
            return buf[:want]
        except OSError as exc:
            raise _translate_os(exc, "read", path, key) from exc
        finally:
            os.close(fd)

    async def _read_into(self, key: str, start: int, end: int, buf: memoryview) -> memoryview:
        """Bytes [start, end) read into buf: parts of big files reuse the engine's buffers."""
        path = self._src_path(key)
        if end - start > _BIG:
            return await asyncio.to_thread(self._read_into_sync, path, key, start, end, buf)
        return self._read_into_sync(path, key, start, end, buf)

    async def read_props(self, key: str) -> ObjectProps:
        """The file's properties from its user.* extended attributes (--preserve-xattrs)."""
        path = self._src_path(key)
        try:
            return xattrs.read(path)
        except OSError as exc:
            raise _translate_os(exc, "read", path, key) from exc

    async def read_tagging(self, key: str) -> str:
        return ""  # a file has no tags
    def read_body(self, key: str, start: int, end: int) -> FileBody:
        """Bytes [start, end) of the file as a body an upload streams (features.file_bodies)."""
        path = self._src_path(key)
        return FileBody(path, start, end, url=path, key=key, version=source_file())

    async def _read_first(self, key: str, limit: int) -> tuple[bytes, int]:
        info = await self.head(key)
        size = info.size or 0
        return await self._read(key, 0, min(size, limit)), size

    # ---------------------------------------------------------------- writing

    async def prepare(self) -> None:
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            raise WriteFailed("is a file, but a directory is needed here", op="write", url=self.root)
        try:
            os.makedirs(self.root, exist_ok=True)
        except OSError as exc:
            raise _translate_os(exc, "mkdir", self.root) from exc
        self._real_root = os.path.realpath(self.root)

    def _dst_path(self, key: str) -> tuple[str, str]:
        """(directory, final path) for key, creating parents; UnsafeKey if it would leave the root."""
        segments = safe_segments(key)
        # a safe key's segments are key.split("/"), none empty: the joins os.path.join would make
        # are the key's own text after the root's (no join of each segment, ~2 us a download)
        if len(segments) == 1:
            return self.root, self._root_slash + key
        parent_rel = key[:key.rindex("/")]
        if parent_rel not in self._safe_parents:
            self._make_parents(segments[:-1], key)
        return self._root_slash + parent_rel, self._root_slash + key

    def _make_parents(self, dirs: list[str], key: str) -> None:
        """Create the directories `dirs` under the root, from the deepest one known to be safe down.

        Why not os.makedirs + os.path.realpath: with one new directory per object (hashed names)
        they cost ~8 system calls and ~100 us an object. A directory this call creates is a real
        one inside a safe parent, so it is safe without looking; only one that was already there is
        looked at (lstat), and only a symbolic link is resolved, as before: it may point anywhere
        inside the destination, never outside it."""
        known = len(dirs)
        while known > 0 and "/".join(dirs[:known]) not in self._safe_parents:
            known -= 1
        path = os.path.join(self.root, *dirs[:known]) if known else self.root
        for depth in range(known, len(dirs)):
            path = os.path.join(path, dirs[depth])
            try:
                try:
                    os.mkdir(path)
                except FileNotFoundError:
                    if depth != known:
                        raise
                    os.makedirs(path)  # the root itself is missing (not prepared, or removed meanwhile)
            except FileExistsError as exc:
                self._check_existing(path, key, exc)
            except OSError as exc:
                raise _translate_os(exc, "mkdir", path, key) from exc
            self._safe_parents["/".join(dirs[:depth + 1])] = None
        while len(self._safe_parents) > 10_000:
            self._safe_parents.popitem(last=False)

    def _check_existing(self, path: str, key: str, exc: OSError) -> None:
        """`path` was already there: fine if it is a directory, or a symbolic link to one inside the root."""
        try:
            st = os.lstat(path)
        except OSError as err:
            raise _translate_os(err, "mkdir", path, key) from err
        if stat_mod.S_ISDIR(st.st_mode):
            return
        if stat_mod.S_ISLNK(st.st_mode):
            real_root = self._real_root or os.path.realpath(self.root)
            real = os.path.realpath(path)
            if real != real_root and not real.startswith(real_root + os.sep):
                raise UnsafeKey("a symbolic link in the destination would lead outside it",
                                op="write", url=path, key=key)
            if os.path.isdir(real):
                return
        raise WriteFailed("a file is in the way where a directory is needed", op="write", url=path, key=key) from exc

    @staticmethod
    def _tmp_name(parent: str, name: str) -> str:
        digest = hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
        return f"{parent}/.s3bulk-{digest}{TMP_SUFFIX}"

    def _open_tmp(self, key: str) -> tuple[int, str, str]:
        """(fd, temporary path, final path) for writing `key`: the temporary file sits in the
        target directory, so the rename into place is atomic. Its name is derived from the final
        name: one an interrupted run left behind is replaced (and so cleaned up) by the redo."""
        parent, final = self._dst_path(key)
        tmp = self._tmp_name(parent, final.rsplit("/", 1)[-1])
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        try:
            try:
                fd = os.open(tmp, flags, 0o644)
            except FileExistsError:
                if tmp in OPEN_TEMPS:  # this process writes the same name right now: a unique name
                    tmp = f"{parent}/.s3bulk-{self._pid}-{next(_tmp_counter)}{TMP_SUFFIX}"
                else:  # left behind by a run that was killed (with the record of its parts, if any)
                    os.unlink(tmp)
                    unlink_quietly(partfile.sidecar_path(tmp))
                fd = os.open(tmp, flags, 0o644)
            TEMP_INODES[tmp] = os.fstat(fd).st_ino
        except OSError as exc:
            raise _translate_os(exc, "write", final, key) from exc
        OPEN_TEMPS.add(tmp)
        return fd, tmp, final

    def _put_sync(self, key: str, data: bytes, mtime: float | None = None,
                  props: ObjectProps | None = None, mark: bytes | None = None,
                  last_modified: float = 0.0) -> None:
        fd, tmp, final = self._open_tmp(key)
        try:
            try:
                xattrs.write(fd, props)
                if mark is not None:
                    _mark(fd, mark)
                n = os.write(fd, data)
                if n < len(data):  # a short write: finish it
                    view = memoryview(data)[n:]
                    while view:
                        view = view[os.write(fd, view):]
                if mtime is not None:
                    if mark is None:
                        os.utime(fd, (mtime, mtime))
                    else:  # put_marked's: the atime is the mark too (mark_copy_of)
                        os.utime(fd, ns=(file_times.atime_mark(last_modified, mtime), file_times.mtime_ns(mtime)))
            finally:
                os.close(fd)
            land(tmp, final)
        except OSError as exc:
            unlink_quietly(tmp)
            raise _translate_os(exc, "write", final, key) from exc
        except BaseException:
            unlink_quietly(tmp)
            raise

    async def put(self, key: str, data: bytes, mtime: float | None = None, *,
                  props: ObjectProps | None = None) -> None:
        """Write the file; `props` (given with --preserve-xattrs) go to its extended attributes."""
        if _folder_marker(key, data):
            # the directory itself is the faithful copy, as aws-cli makes it; "" is the marker of
            # the prefix copied, the root
            if key:
                self._dst_path(key + "x")  # checks the key like any other and creates the directory
            return
        if len(data) > _BIG:
            await write_in_thread(self._put_sync, key, data, mtime, props)
        else:
            self._put_sync(key, data, mtime, props)

    async def put_marked(self, key: str, data: bytes, mtime: float, last_modified: float, *,
                         props: ObjectProps | None = None) -> None:
        """put() of a file downloaded from an object whose time (`mtime`, from its metadata) is not
        its LastModified, marked as its copy (mark_copy_of) through the open temporary file before
        it lands: one setxattr on a descriptor, not a second lookup of the path after the rename
        (a download's hot path)."""
        if _folder_marker(key, data):  # a directory, as put() makes it, then marked by its path
            await self.put(key, data, mtime, props=props)
            self.mark_copy_of(key, last_modified, mtime)
            return
        mark = file_times.mark_value(last_modified, mtime)
        if len(data) > _BIG:
            await write_in_thread(self._put_sync, key, data, mtime, props, mark, last_modified)
        else:
            self._put_sync(key, data, mtime, props, mark, last_modified)

    async def start_multipart(self, key: str, size: int, part_size: int,
                              mtime: float | None = None, *, props: ObjectProps | None = None) -> "LocalMultipart":
        fd, tmp, final = self._open_tmp(key)
        try:
            xattrs.write(fd, props)
            if size:
                size_for_parts(fd, size)
        except OSError as exc:
            os.close(fd)
            unlink_quietly(tmp)
            raise _translate_os(exc, "write", final, key) from exc
        return LocalMultipart(fd, tmp, final, key, mtime, flush=self.flush_writes)

    async def open_partial(self, key: str, size: int, part_size: int, source: partfile.SourceId,
                           mtime: float | None = None, *, props: ObjectProps | None = None,
                           resume: bool = False) -> tuple["LocalMultipart", int, dict[int, int]]:
        """A multipart download whose temporary file is kept for a resume (stores/files/partfile.py):
        (upload, part size, parts already in it with their CRCs). With `resume`, a file an
        interrupted run left for the same `source` version is continued in the part size it was
        cut into; anything else (no such file, another version, a record that cannot be read, a
        file of the wrong size) is started over, removing what was left."""
        if resume:
            found = await asyncio.to_thread(self._kept, key, size, source)
            if found is not None:
                fd, tmp, final, record = found
                try:
                    ranges = partfile.RangeLog(tmp, partfile.sidecar_path(tmp), continue_at=record.length,
                                               synced=self.flush_writes)
                except OSError:
                    os.close(fd)
                else:
                    TEMP_INODES[tmp] = os.fstat(fd).st_ino
                    OPEN_TEMPS.add(tmp)
                    KEPT_TEMPS.add(tmp)
                    return (LocalMultipart(fd, tmp, final, key, mtime, flush=self.flush_writes, ranges=ranges),
                            record.part, record.parts)
        upload = await self.start_multipart(key, size, part_size, mtime, props=props)
        try:
            upload.ranges = partfile.RangeLog.create(upload.tmp, source, part_size, synced=self.flush_writes)
        except OSError as exc:
            await upload.abort()
            raise _translate_os(exc, "write", upload.final, key) from exc
        KEPT_TEMPS.add(upload.tmp)
        return upload, part_size, {}

    def _kept(self, key: str, size: int, source: partfile.SourceId) -> tuple[int, str, str, partfile.Record] | None:
        """(fd, temporary path, final path, record) of a kept file to continue, else None (and
        what was left of another version is removed)."""
        parent, final = self._dst_path(key)
        tmp = self._tmp_name(parent, final.rsplit("/", 1)[-1])
        side = partfile.sidecar_path(tmp)
        record = partfile.load(side)
        if record is None or not record.source.same(source) or record.source.size != size or tmp in OPEN_TEMPS:
            if record is not None and tmp not in OPEN_TEMPS:
                unlink_quietly(tmp)
                unlink_quietly(side)
            return None
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            unlink_quietly(side)
            return None
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode) or st.st_size != size:
            os.close(fd)
            unlink_quietly(tmp)
            unlink_quietly(side)
            return None
        return fd, tmp, final, record

    async def delete_many(self, keys: Sequence[str]) -> list[tuple[str, str]]:
        failed: list[tuple[str, str]] = []
        for key in keys:
            try:
                safe_segments(key)
                os.unlink(os.path.join(self.root, key))
            except FileNotFoundError:
                pass
            except (OSError, StoreError) as exc:
                failed.append((key, str(exc)))
        return failed

    # ---------------------------------------------------------------- server-side copy

    def can_copy_from(self, src: Store) -> bool:
        """Any other directory on this machine (`src` as unwrapped by any wrapper)."""
        return isinstance(src, LocalStore)

    async def copy_from(self, src: Store, src_key: str, dst_key: str, size: int,
                        mtime: float | None = None, *, props: ObjectProps | None = None,
                        replace: bool = False, if_match: str | None = None) -> None:
        """Copy the bytes (a local copy keeps no properties: `props` is not used; a file has no
        ETag, so `if_match` is not either: its version is held by FileVersion, stores/conditions.py)."""
        assert isinstance(src, LocalStore)  # can_copy_from said so
        await write_in_thread(self._copy_sync, src._src_path(src_key), src_key, dst_key, size, mtime)

    def _copy_sync(self, src_path: str, src_key: str, dst_key: str, size: int, mtime: float | None) -> None:
        version = source_file()
        sfd = _open_source(src_path, src_key)
        try:
            ident = version.opened(os.fstat(sfd), src_path, src_key)
            dfd, tmp, final = self._open_tmp(dst_key)
        except BaseException:
            os.close(sfd)
            raise
        try:
            copied = 0
            while True:
                n = _copy_chunk(sfd, dfd, copied, 64 << 20)
                if n == 0:
                    break
                copied += n
            if mtime is not None:
                os.utime(dfd, (mtime, mtime))
            os.close(dfd)
            dfd = -1
            version.read(ident, os.fstat(sfd), src_path, src_key)  # one version, or nothing lands
            if copied != size:
                raise Corrupt(f"source changed while copying: {copied} bytes instead of {size}",
                              op="copy", url=src_path, key=src_key)
            land(tmp, final)
        except OSError as exc:
            unlink_quietly(tmp)
            raise _translate_os(exc, "write", final, dst_key) from exc
        except BaseException:
            unlink_quietly(tmp)
            raise
        finally:
            os.close(sfd)
            if dfd >= 0:
                os.close(dfd)


def _open_source(path: str, key: str) -> int:
    """A source file opened for reading; an OSError becomes the store's error for it."""
    try:
        return os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise _translate_os(exc, "read", path, key) from exc


def _copy_chunk(sfd: int, dfd: int, offset: int, count: int) -> int:
    try:
        return os.copy_file_range(sfd, dfd, count, offset, offset)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
            raise
    data = os.pread(sfd, count, offset)
    if data:
        os.pwrite(dfd, data, offset)
    return len(data)


class LocalMultipart:
    """A preallocated temporary file written at part offsets; renamed into place on completion."""

    # no upload id: the file is redone by the next run, or, when kept for a resume (open_partial),
    # found again by its name, which is derived from the final one
    upload_id: str | None = None

    def __init__(self, fd: int, tmp: str, final: str, key: str, mtime: float | None = None, *,
                 flush: bool = False, ranges: partfile.RangeLog | None = None) -> None:
        self.fd, self.tmp, self.final, self.key, self.mtime = fd, tmp, final, key, mtime
        self.flush = flush
        # kept for a resume (open_partial): the record of the parts on disk; an abort then keeps
        # the file (a stop, a failure a later run may get past) unless discard() is called
        self.ranges = ranges
        # other processes of this run may open the temporary file and write their parts into it
        # (engine/transfer/spread.py: one big object spread over processes); complete() still renames it
        self.shared_path = tmp

    def _pwrite(self, data: bytes, offset: int) -> None:
        start = offset
        offset = write_part(self.fd, data, offset)
        if self.flush:
            # write the part through and let the kernel drop it: dirty page cache counts against a
            # memory cgroup, and a 1 GiB file written faster than the disk takes it would not fit
            os.fdatasync(self.fd)
            os.posix_fadvise(self.fd, start, offset - start, os.POSIX_FADV_DONTNEED)

    async def put_part(self, number: int, offset: int, data: bytes) -> None:
        try:
            if len(data) > _BIG or self.flush:
                await asyncio.to_thread(self._pwrite, data, offset)
            else:
                self._pwrite(data, offset)
        except OSError as exc:
            raise _translate_os(exc, "write", self.final, self.key) from exc

    @property
    def takes_sinks(self) -> bool:
        """Whether range_sink gives sinks (engine/transfer/sinks.py)."""
        return not self.flush and self.fd >= 0

    def range_sink(self, start: int, end: int, algorithm: str | None = None) -> RangeSink | None:
        """A sink that writes bytes [start, end) into the temporary file as they are received
        (stores/files/filesink.py); None with --flush-writes' part-by-part write-through, which keeps
        its part buffers and thread."""
        if self.flush or self.fd < 0:
            return None
        from ..files.filesink import RangeSink

        return RangeSink(self.fd, start, end, algorithm,
                         on_error=lambda exc: _translate_os(exc, "write", self.final, self.key))

    async def complete(self) -> None:
        try:
            if self.mtime is not None:
                os.utime(self.fd, (self.mtime, self.mtime))
            os.close(self.fd)
            self.fd = -1
            land(self.tmp, self.final)
        except OSError as exc:
            unlink_quietly(self.tmp)
            self._drop_record()
            raise _translate_os(exc, "write", self.final, self.key) from exc
        except DestinationExists:  # --no-clobber: the file is not wanted, nor kept for a resume
            unlink_quietly(self.tmp)
            self._drop_record()
            raise
        self._drop_record()

    def part_landed(self, number: int, crc: int = partfile.NO_CRC) -> None:
        """Part `number` is written (here or by a helper process): recorded once durable."""
        if self.ranges is not None:
            self.ranges.landed(number, crc)

    async def abort(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.ranges is None:
            unlink_quietly(self.tmp)
            return
        await self.ranges.settle()  # the parts that landed are recorded before the run stops
        self.ranges.close()
        OPEN_TEMPS.discard(self.tmp)  # kept: never removed by remove_open_temps
        TEMP_INODES.pop(self.tmp, None)
        KEPT_TEMPS.discard(self.tmp)

    async def discard(self) -> None:
        """Give up a kept file (its bytes are wrong or of another version): remove it and its record."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        unlink_quietly(self.tmp)
        self._drop_record()

    def _drop_record(self) -> None:
        if self.ranges is not None:
            self.ranges.close()
            self.ranges = None
            KEPT_TEMPS.discard(self.tmp)
            unlink_quietly(partfile.sidecar_path(self.tmp))


def _mark(file: int | str, value: bytes) -> None:
    """The COPY_OF mark (stores/file_times.py) on a file, by descriptor or path. Best effort: a
    filesystem without user xattrs keeps no mark (a later sync asks with one HEAD instead), and a
    file is never failed for want of its mark."""
    try:
        os.setxattr(file, file_times.COPY_OF, value)
    except OSError:
        pass


def _folder_marker(key: str, data: bytes) -> bool:
    """A zero-byte object whose key ends in "/" (the AWS console's folders), or "" itself: written
    as a directory, not a file."""
    return (not key or key.endswith("/")) and not data
