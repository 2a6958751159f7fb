"""What `s3bulk ls` does once its command line is read, without typer: the listing, its lines
(text or JSON) and its last line. Both ways of reading the command line run this code:
cli/commands/ls.py (typer's) and cli/quick.py (a plain `ls URL [--json] ...`, read without the
parser). Why a module of its own: typer's import and building its click commands cost ~60 ms of a
200,000-key listing's ~1 s, before its first request."""

from __future__ import annotations

import bisect
import gc
from operator import itemgetter
import sys
from datetime import datetime, timezone
from json.encoder import encode_basestring
from typing import TYPE_CHECKING

from ..errors import UsageError
from .shell import quiet_broken_pipe
from .signals import LatchedInterrupt

if TYPE_CHECKING:
    from ..config.filters import Filters
    from ..config.urls import S3Options
    from ..model import ObjectInfo


def run_ls(url: str, s3: S3Options, filters: Filters, *, json_out: bool, unordered: bool, concurrency: int,
           all_versions: bool, recursive: bool) -> None:
    """`s3bulk ls URL` with its options read: every object under URL (or every version, or one
    level) to stdout, the total to stderr (text)."""
    from ..engine.actions.ls import list_rendered, stepped

    if not recursive:
        if all_versions:
            raise UsageError("--all-versions lists every version under URL: drop --no-recursive")
        if filters:
            raise UsageError("--no-recursive lists one level as the server gives it; it takes no filters")
        return ls_level(url, s3, json_out)
    if all_versions:
        if filters:
            raise UsageError("ls --all-versions lists every version; it takes no filters")
        from .versions import ls_versions

        try:
            return ls_versions(url, s3, json_out)
        except BrokenPipeError:
            return quiet_broken_pipe()
    lines = LsLines(json_out)
    # as api.ls_rendered lists (the filters given as one Filters are the filters), without importing the API
    texts = stepped(list_rendered(url, lines.render, s3=s3, concurrency=concurrency, ordered=not unordered,
                                  filters=filters or None))
    collections = _fewer_collections()
    try:
        with LatchedInterrupt() as interrupt:
            for text in texts:
                if text:
                    sys.stdout.write(text)
                interrupt.check()  # a Ctrl-C lost in a weakref callback still ends ls (exit 130)
    except BrokenPipeError:
        quiet_broken_pipe()
        return
    finally:
        texts.close()  # `| head`, Ctrl-C: listings cancelled and spill files gone before the loop closes
        gc.set_threshold(*collections)
    if not json_out:
        print(ls_total(lines.count, lines.total, lines.unsized), file=sys.stderr)


YOUNG_OBJECTS = 100_000  # objects allocated and still alive that start a collection while ls lists


def _fewer_collections() -> tuple[int, int, int]:
    """While ls lists, a garbage collection only after 100,000 objects more are alive, not 700.
    Why: a page's entries are made and dropped by the thousand (freed by their counts, not by the
    collector), and at 700 the collector walked each page's young objects several times and every
    object the imports made in 10 full collections: 12% of a 1,000,000-key listing's CPU (360 ms of
    2.9 s), ~10 ms at 100,000. Memory stays bounded: the count is of objects alive, and cycles
    (an exception's frames) are still collected, at 100,000 as at 700. Returns the thresholds
    before, to put back."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS, before[1], before[2])
    return before


class LsLines:
    """ls's output, a page's lines at a time as the page is listed (a page listed ahead of the
    output waits as text), and the totals of what it listed: objects, bytes, and keys listed
    without a size (a list/get server's)."""

    def __init__(self, json_out: bool) -> None:
        self.json_out = json_out
        self.count = self.total = self.unsized = 0
        # one text per second seen, not per key
        self.stamps: dict[float | None, str] = {None: "null" if json_out else "-"}

    def render(self, page: list[ObjectInfo]) -> str:
        if not page:
            return ""
        text = self._plain(page)
        if text is None:
            lines = self._json(page) if self.json_out else self._text(page)
            text = "\n".join(lines) + "\n"
        self.count += len(page)
        return text

    def _plain(self, page: list[ObjectInfo]) -> str | None:
        """The page's lines the short way when every entry has a size, a time and (--json) an ETag,
        and no key or ETag needs a JSON escape: one f-string a key with no escaper call and no None
        test, the bytes summed in C, the escapes looked for once over the page's keys and ETags
        joined (as UTF-8, the characters json escapes deleted: the length tells). None: render the
        general way (bench/listing_render_bench.py times both)."""
        try:
            total = sum(map(_SIZE, page))  # TypeError: a size is None (a list/get server's)
            if self.json_out:  # TypeError: an ETag is None; UnicodeEncodeError: a lone surrogate
                plain = ("".join(map(_KEY, page)) + "".join(map(_ETAG, page))).encode()
                if len(plain.translate(None, _JSON_ESCAPED)) != len(plain):
                    return None
        except (TypeError, UnicodeEncodeError):
            return None
        try:
            text = self._lines(page)
        except KeyError:  # a second not rendered yet: the page's few seconds, each once
            if not self._stamp({e[2] for e in page}):
                return None
            text = self._lines(page)
        self.total += total
        return text

    def _lines(self, page: list[ObjectInfo]) -> str:
        """KeyError: an entry's time is not in self.stamps."""
        stamps = self.stamps
        if self.json_out:
            return "".join([f'{{"key": "{key}", "size": {size}, "mtime": {stamps[mtime]}, "etag": "{etag}"}}\n'
                            for key, size, mtime, etag, _ in page])
        return "".join([f"{stamps[mtime]} {size:>12} {key}\n" for key, size, mtime, _, _ in page])

    def _stamp(self, times: set[float | None]) -> bool:
        """Each time's text in self.stamps (False: a time is None, rendered the general way)."""
        if None in times:
            return False
        stamps = self.stamps
        if len(stamps) + len(times) > 4096:
            stamps = self.stamps = {None: "null" if self.json_out else "-"}
        for mtime in times:
            if mtime not in stamps:
                assert mtime is not None
                stamps[mtime] = (repr(mtime) if self.json_out  # as json writes a float (or an int)
                                 else datetime.fromtimestamp(mtime, timezone.utc).strftime("%Y-%m-%d %H:%M:%S"))
        return True

    def _json(self, page: list[ObjectInfo]) -> list[str]:
        """Each line made by hand as json.dumps({"key", "size", "mtime", "etag"}, ensure_ascii=False)
        makes it, byte for byte (tests/test_json_ls.py), at a quarter of its CPU: strings through
        json's own C escaper, numbers as json writes them (int and float repr), an mtime's text once
        a second."""
        quote = encode_basestring
        stamps = self.stamps
        total = unsized = 0
        lines: list[str] = []
        append = lines.append
        for key, size, mtime, etag, _ in page:
            if size is None:
                unsized += 1
            else:
                total += size
            when = stamps.get(mtime)
            if when is None:
                assert mtime is not None  # stamps maps None to "null"
                if len(stamps) > 4096:
                    stamps = self.stamps = {None: "null"}
                when = stamps[mtime] = repr(mtime)  # as json writes a float (or an int)
            append(f'{{"key": {quote(key)}, "size": {"null" if size is None else size}, '
                   f'"mtime": {when}, "etag": {"null" if etag is None else quote(etag)}}}')
        self.total += total
        self.unsized += unsized
        return lines

    def _text(self, page: list[ObjectInfo]) -> list[str]:
        stamps = self.stamps
        total = unsized = 0
        lines: list[str] = []
        append = lines.append
        for key, size, mtime, _, _ in page:  # unpacked: a named field is a property call
            if size is None:
                unsized += 1
            else:
                total += size
            when = stamps.get(mtime)
            if when is None:
                assert mtime is not None  # stamps maps None to "-"
                if len(stamps) > 4096:
                    stamps = self.stamps = {None: "-"}
                when = stamps[mtime] = datetime.fromtimestamp(mtime, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
            append(f"{when} {size if size is not None else '-':>12} {key}")
        self.total += total
        self.unsized += unsized
        return lines


_KEY, _SIZE, _ETAG = itemgetter(0), itemgetter(1), itemgetter(3)  # ObjectInfo's key, size, etag
_JSON_ESCAPED = bytes(range(32)) + b'"\\'  # what json's encode_basestring escapes (as UTF-8 bytes)


def ls_level(url: str, s3: S3Options, json_out: bool) -> None:
    """`ls --no-recursive`: one level under URL, its objects and prefixes merged in key order."""
    from ..engine.actions.ls import list_levels, stepped

    lines = LsLines(json_out)
    prefixes = 0
    pages = stepped(list_levels(url, s3=s3))
    try:
        with LatchedInterrupt() as interrupt:
            for page in pages:
                prefixes += len(page.prefixes)
                text = level_text(lines, page.entries, page.prefixes)
                if text:
                    sys.stdout.write(text)
                interrupt.check()
    except BrokenPipeError:
        quiet_broken_pipe()
        return
    finally:
        pages.close()
    if not json_out:  # what the lines above hold: the objects of this level, not those below its prefixes
        print(f"{prefixes:,} prefix{'' if prefixes == 1 else 'es'}, {ls_total(lines.count, lines.total, lines.unsized)}",
              file=sys.stderr)


PRE = "PRE".rjust(32)  # under the size column of an object's line (19 + 1 + 12 characters), as aws s3 ls has it


def level_text(lines: LsLines, entries: list[ObjectInfo], prefixes: list[str]) -> str:
    """One level's page as text: the objects' lines as `ls` renders them, each prefix's line in
    its place in key order (`PRE name/`, or {"prefix": "name/"} with --json)."""
    if not prefixes:
        return lines.render(entries)
    out: list[str] = []
    done = 0
    for prefix in prefixes:
        upto = bisect.bisect_left(entries, prefix, lo=done, key=_key)
        if upto > done:
            out.append(lines.render(entries[done:upto]))
            done = upto
        out.append(f'{{"prefix": {encode_basestring(prefix)}}}\n' if lines.json_out else f"{PRE} {prefix}\n")
    out.append(lines.render(entries[done:]))
    return "".join(out)


def _key(info: ObjectInfo) -> str:
    return info.key


def ls_total(count: int, total: int, unsized: int) -> str:
    """ls's last line: objects and bytes, and what of the bytes is not known (a list/get server
    lists no sizes: its total is unknown, not 0 bytes)."""
    from .render import plural

    if unsized and unsized == count:
        return f"{plural(count, 'object')}, sizes unknown (the listing gives none)"
    if unsized:
        return f"{plural(count, 'object')}, {plural(total, 'byte')} and {unsized:,} of unknown size"
    return f"{plural(count, 'object')}, {plural(total, 'byte')}"
