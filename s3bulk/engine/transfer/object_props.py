"""Which properties each object is written with: the user's options (WriteProps) over what the
source object carries, as aws-cli decides them.

One pure function per question, so the rules are read (and tested) in one place and the
transfer code only asks: do I need the source's properties, and what do I write?
"""

from __future__ import annotations

from ...model import SYSTEM_METADATA, ObjectProps, WriteProps
from ...stores.content_types import content_type_for

DEFAULT = WriteProps()


def wants_source(write: WriteProps, src_kind: str | None, dst_kind: str | None) -> bool:
    """Whether the source's properties are read at all. `*_kind` is the store's features.props:
    "s3" (headers), "xattrs" (local files), None (nothing to carry). S3 to S3 carries them unless
    --copy-props none or --metadata-directive REPLACE with no tags kept; local disk only with
    --preserve-xattrs, both ways."""
    if src_kind == "s3":
        if dst_kind == "s3":
            return write.carries_metadata or write.carries_tags
        return dst_kind == "xattrs" and write.preserve_xattrs
    if src_kind == "xattrs":
        return write.preserve_xattrs and dst_kind == "s3"
    return False


def for_destination(write: WriteProps, key: str, src: ObjectProps | None, src_kind: str | None,
                    dst_kind: str | None) -> ObjectProps | None:
    """The properties to write `key` with; None where the destination keeps none (a local file
    without --preserve-xattrs, the in-memory store)."""
    if dst_kind is None or (dst_kind == "xattrs" and not write.preserve_xattrs):
        return None
    carried = _carried(write, src, src_kind == "s3" and dst_kind == "s3")
    given = write.set
    out = {name: getattr(given, name) if getattr(given, name) is not None else getattr(carried, name)
           for name in (*SYSTEM_METADATA, "metadata", "tagging", "storage_class")}
    if out["content_type"] is None and write.guess_mime_type and dst_kind == "s3":
        out["content_type"] = guess_content_type(key)
    return ObjectProps(**out, acl=given.acl, sse=given.sse, sse_kms_key_id=given.sse_kms_key_id,
                       sse_c_key=given.sse_c_key, request_payer=given.request_payer)


class Resolver:
    """for_destination for one run's options and stores, remembered where only the name's guessed
    Content-Type varies (uploads, --copy-props none): building and mapping properties costs more
    than the rest of a small object's upload, so each distinct answer is made once."""

    def __init__(self, write: WriteProps, src_kind: str | None, dst_kind: str | None) -> None:
        self.write, self.src_kind, self.dst_kind = write, src_kind, dst_kind
        self._guess = write.set.content_type is None and write.guess_mime_type and dst_kind == "s3"
        self._by_type: dict[str | None, ObjectProps | None] = {}
        self._by_src: dict[ObjectProps, ObjectProps | None] = {}

    def __call__(self, key: str, src: ObjectProps | None) -> ObjectProps | None:
        if src is not None:
            return self._from_source(key, src)
        kind = guess_content_type(key) if self._guess else None
        try:
            return self._by_type[kind]
        except KeyError:
            if len(self._by_type) > 1024:
                self._by_type.clear()
            props = self._by_type[kind] = for_destination(self.write, key, None, self.src_kind, self.dst_kind)
            return props

    def _from_source(self, key: str, src: ObjectProps) -> ObjectProps | None:
        """Objects of one source mostly share their properties: the answer for equal source
        properties is reused unless it took its Content-Type from this key's name."""
        hit = self._by_src.get(src)
        if hit is not None:
            return hit
        props = for_destination(self.write, "", src, self.src_kind, self.dst_kind)
        if props is None or props.content_type is not None or not self._guess:
            if len(self._by_src) > 1024:
                self._by_src.clear()
            self._by_src[src] = props
            return props
        return for_destination(self.write, key, src, self.src_kind, self.dst_kind)


def _carried(write: WriteProps, src: ObjectProps | None, s3_to_s3: bool) -> ObjectProps:
    """What of the source's properties is kept. Between two S3 stores --copy-props and
    --metadata-directive decide; from a local file's xattrs (or to one) all that was read."""
    if src is None:
        return ObjectProps()
    if not s3_to_s3:
        return ObjectProps(**{n: getattr(src, n) for n in SYSTEM_METADATA}, metadata=src.metadata)
    keep: dict = {}
    if write.carries_metadata:
        keep.update({n: getattr(src, n) for n in SYSTEM_METADATA}, metadata=src.metadata)
    if write.carries_tags:
        keep.update(tagging=src.tagging, storage_class=src.storage_class)
    return ObjectProps(**keep)


def needs_tags(write: WriteProps, src: ObjectProps, s3_to_s3: bool) -> bool:
    """GetObjectTagging is asked only when the source has tags that are kept (HEAD and GET say
    how many with x-amz-tagging-count; None: the answer did not say, so ask)."""
    return s3_to_s3 and write.carries_tags and src.tagging is None and src.tag_count != 0


def guess_content_type(key: str) -> str | None:
    """aws-cli's guess from the name (one rule for both data paths: stores/content_types.py)."""
    return content_type_for(key)
