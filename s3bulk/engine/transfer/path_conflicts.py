"""Keys that cannot both be local paths: `a` and `a/b` (a file and a directory of one name).

S3 holds both; a local disk holds one. Left to the writes, whichever key a worker happened to
write first would win and the other fail, so two runs of the same copy could end differently.
Instead the outcome is decided from the listing, before anything is written: the directory
always wins, and the key `a` is reported as a failure that names a key under `a/` (exit 1).

Keys come in S3 order, so a key's children mostly sit in the same page right after it; only a
key with no later key in its page that could be a child (in practice the page's last key) needs
one LIST request of one key to look beyond the page: about one request per 1,000 objects, and
only when DST is a local directory.
"""

from __future__ import annotations

from bisect import bisect_left
from ...errors import S3BulkError
from ...model import ObjectInfo, WorkUnit
from ...stores import Store
from ..plan import Plan


def applies(plan: Plan, src: Store) -> bool:
    """Only a listed, ordered source copied into a local directory can meet the conflict (not a
    local source: a directory cannot hold a file and a directory of one name)."""
    return (plan.dst.is_local and not plan.src.is_local and plan.single_key is None
            and plan.manifest is None and src.ordered)


async def find(src: Store, entries: list[ObjectInfo]) -> dict[str, str]:
    """{key: a source key under key + "/"} for each entry that is also a directory's name."""
    keys = [e.key for e in entries if not _unsafe(e.key)]  # those the store refuses as UnsafeKey anyway
    found: dict[str, str] = {}
    for i, key in enumerate(keys):
        if not key or key.endswith("/"):
            continue  # "" and folder markers are directories themselves
        child = key + "/"
        j = bisect_left(keys, child, i + 1)
        if j < len(keys):
            if keys[j].startswith(child):
                found[key] = keys[j]
            continue
        other = await _first_under(src, child)  # past this page: ask the source
        if other is not None:
            found[key] = other
    return found


def _unsafe(key: str) -> bool:
    """A key no local path can be made of (`..`, `.`, empty segments, absolute): the local store
    refuses it as UnsafeKey, which is the failure to report, not a conflict. Asked of every key of
    a download's page (a re-sync's too): three substring tests on the key with its ends marked, no
    split list or generator per key."""
    if key.startswith("/"):
        return True
    marked = "/" + key.rstrip("/") + "/"  # an empty, "." or ".." segment shows as "//", "/./", "/../"
    return "//" in marked or "/./" in marked or "/../" in marked


async def _first_under(src: Store, prefix: str) -> str | None:
    try:
        page = await src.list_page(prefix, WorkUnit(), 1)
    except S3BulkError:
        return None  # cannot tell: the writes then decide, as they did before
    return page.entries[0].key if page.entries else None


def message(key: str, other: str) -> str:
    return (f"key {key!r} is also a directory on local disk (key {other!r} is under it): the directory is "
            f"kept and {key!r} is not copied; copy it on its own to another name")
