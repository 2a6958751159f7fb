"""A dry run's estimate of the S3 requests a real run's copies would send, object by object.

A dry run lists and compares exactly as the real run would, so the requests it sends itself
(LIST, a comparison's HEADs) are counted as they go (stores/requests.py); what it does not send
are the copies and deletes. Those are added here from each object's size and the run's settings,
following the ways one_object.py moves an object (the two must change together):

- server-side (same S3 endpoint and credentials): one COPY up to the copy threshold (5 GiB), with a
  HEAD of the source first when the object properties are not simply kept (--copy-props,
  --metadata-directive REPLACE, a metadata or tagging option); above it a HEAD (its properties),
  a HEAD with checksum mode (its checksum algorithm) unless --checksum-algorithm is given,
  CREATE_MULTIPART, one UPLOAD_PART_COPY per copy part (512 MiB) and COMPLETE_MULTIPART;
- up to the multipart threshold: one GET from an S3 source and one PUT to an S3 destination;
- above it, in parts of the run's part size (raised to fit 10,000 parts, or the download part
  size of a local destination): from an S3 source a HEAD with checksum mode, a HEAD of its
  properties when they are carried (to a local file: the time its x-amz-meta-mtime holds,
  stores/file_times.py), and one ranged GET per part; to an S3 destination
  CREATE_MULTIPART, one UPLOAD_PART per part and COMPLETE_MULTIPART;
- copy / mv --backup-dir to an S3 destination: one HEAD per object first (what DST holds; the
  backups themselves are not counted, the dry run cannot know which keys DST has).

Assumed, since a dry run cannot know without asking: no source object has tags (each that has
costs one GET_TAGGING more where its properties are carried); an S3 source object above the
multipart threshold whose ETag says it was uploaded in N parts ("...-N") carries a COMPOSITE
checksum, as s3bulk's and the AWS SDKs' uploads do, so it is read by its own N parts after one
GET_ATTRIBUTES (one without such an ETag carries a full-object checksum or none); no request is
retried, no source changes while it is copied, and no upload of an earlier stopped run is
continued; an object of a list/get server (whose listing gives no size) is taken to be small: one
GET (and no bytes). Local disk takes no request.
"""

from __future__ import annotations

from typing import Any

from ...model import ObjectInfo
from ...stores import part_size_for
from ...stores.requests import (COMPLETE_MULTIPART, COPY, CREATE_MULTIPART, DELETE, GET, GET_ATTRIBUTES, HEAD, PUT,
                                UPLOAD_PART, UPLOAD_PART_COPY)
from .link import part_size as link_part_size
from .sinks import range_sinks

BATCH = 1000  # keys per DeleteObjects request


def plan_copy(transfer: Any, info: ObjectInfo, planned: dict[str, int]) -> None:
    """Add to `planned` the requests `transfer` (one_object.Transfer) would send to copy `info`."""
    src, dst, opts = transfer.src, transfer.dst, transfer.options
    from_s3, to_s3 = src.location.is_s3, dst.location.is_s3
    gets = src.location.remote  # a list/get server's GETs are counted too

    def add(op: str, n: int = 1) -> None:
        planned[op] = planned.get(op, 0) + n

    size = info.size
    if to_s3 and opts.backup_dir is not None and not opts.no_clobber:
        add(HEAD)  # copy / mv --backup-dir: what DST holds, asked first (its backup, if any, not counted)
    if info.size is not None and to_s3 and transfer.verifies_next():
        add(HEAD)  # the object read back after its write (verify.py)
    if transfer.server_side:
        if not to_s3:
            return  # a local rename or copy: no request
        size = size or 0
        if size <= opts.copy_threshold:
            if not transfer.write_props.plain_copy and transfer.wants_src_props:
                add(HEAD)  # the source's properties, replaced as the options say
            add(COPY)
            return
        add(HEAD)  # the properties a copy in parts carries itself
        if opts.checksum_algorithm is None:
            add(HEAD)  # the source's checksum algorithm, kept by the copy
        add(CREATE_MULTIPART)
        add(UPLOAD_PART_COPY, _parts(size, part_size_for(size, opts.copy_part_size)))
        add(COMPLETE_MULTIPART)
        return
    if size is None or size <= opts.multipart_threshold:
        if gets:
            add(GET)
        if to_s3:
            add(PUT)
        return
    parts = _parts(size, link_part_size(size, opts, local_dst=dst.location.is_local,
                                        sinks=range_sinks(opts, src, dst)))  # as one_object.py cuts it
    if from_s3:
        add(HEAD)  # with checksum mode: what checks the parts read
        uploaded_in = _uploaded_parts(info.etag)
        if uploaded_in:  # taken to carry a COMPOSITE checksum: its parts are asked, and read one by one
            add(GET_ATTRIBUTES)
            parts = uploaded_in
        if transfer.wants_src_props or transfer.restore_mtime:
            add(HEAD)  # the properties the upload is created with; to a local file, its time
    if gets:
        add(GET, parts)
    if to_s3:
        add(CREATE_MULTIPART)
        add(UPLOAD_PART, parts)
        add(COMPLETE_MULTIPART)


def plan_deletes(keys: int, planned: dict[str, int], to_s3: bool = True) -> None:
    """Add the DeleteObjects requests that delete `keys` keys sent together (1,000 a request)."""
    if keys and to_s3:
        planned[DELETE] = planned.get(DELETE, 0) + _parts(keys, BATCH)


def _uploaded_parts(etag: str | None) -> int:
    """N for an S3 ETag "<hex>-N" (an object uploaded in N parts), else 0."""
    if not etag:
        return 0
    tail = etag.strip('"').rpartition("-")[2]
    return int(tail) if tail.isdigit() and "-" in etag else 0


def _parts(size: int, part: int) -> int:
    return max(1, -(-size // part))
