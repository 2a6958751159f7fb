"""A "remote region" S3 endpoint on loopback: answers every request after a fixed delay.

    python bench/slow_s3.py --port 9000 --delay-ms 50 --shape dated --keys 100000 --size 100
    python bench/slow_s3.py --measure --keys 1000000 --shape hashed   # keys/s of the listing code, one core

Why: on real S3 a ListObjectsV2 page takes 75-300 ms, and that latency, not CPU, is what limits a
lister that walks one bucket through a single chain of pages. LocalStack and versitygw on this machine
spend 100+ us of CPU per key listed, so a benchmark against them measures the server, not the client.
This server holds a synthetic key space (a sorted list of generated names; bodies are derived from the
key, never stored) whose `<Contents>` elements are rendered once at start-up, so a listing page costs a
bisect and one slice of bytes (~0.2 us of CPU a key, was ~3 us built key by key; a bucket written to
falls back to that), and every request waits `--delay-ms` in asyncio (call_later: thousands of requests wait at once).

What it speaks (HTTP/1.1 with keep-alive, path-style `/bucket/key`; the Host header is ignored;
signatures are not checked, any Authorization is accepted):

- ListObjectsV2 (`list-type=2`: prefix, start-after, continuation-token, max-keys <= 1000, delimiter
  with CommonPrefixes, encoding-type=url, KeyCount, IsTruncated/NextContinuationToken) and the V1
  form (marker/NextMarker); ListBuckets.
- GET object (whole or one `Range: bytes=`), HEAD object, HeadBucket, GetBucketLocation (`?location`),
  CreateBucket, DeleteBucket.
- PUT object (kept in a dict: meant for small tests; `x-amz-copy-source` makes it CopyObject),
  DELETE object, DeleteObjects (`POST ?delete`). Multipart uploads are not implemented (501).

Key shapes (`--shape`), all in UTF-8 byte order (= code point order = Python's str order):

- `flat`: `obj-0000123`
- `dated`: `year=2024/month=03/day=17/part-000123.parquet`, `--per-dir` parts a day from 2020-01-01
- `hashed`: 8 hex digits of MD5(N), then `/obj-N`: one level of 4 billion possible prefixes, spread uniformly
- `ymd`: `2024/01/02/part-0001.parquet` (dated, no field names), `--per-dir` parts a day from 2024-01-01
- `hashdirs`: `ab/cd/abcd1234...`: 16 hex digits of MD5(N) under two directory levels made of its first four

A synthetic object's body is its key (UTF-8) repeated to `--size` bytes; its ETag is the MD5 of that
body (up to 64 KiB; above, a multipart-style `md5-1` ETag that no client checks against content), its
LastModified 2024-01-01T00:00:00Z.

Importable: `start_thread(...)` serves from a thread of the calling process (tests), `start_process(...)`
from a child process (benchmarks: the server's CPU is then its own). Both return an object with `.url`
and `.stop()`; a thread server's `.backend.not_implemented` (a set of HTTP methods) makes it answer
those with 501 NotImplemented, to test how a client takes an operation a server does not do.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from array import array
from bisect import bisect_left, bisect_right, insort
from itertools import accumulate
from datetime import date, datetime, timedelta, timezone
from email.utils import formatdate
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qsl, quote, unquote, urlsplit
from xml.sax.saxutils import escape

NS = "http://s3.amazonaws.com/doc/2006-03-01/"
SHAPES = ("flat", "dated", "hashed", "ymd", "hashdirs")
SYNTH_MTIME = datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp()
MAX_KEYS = 1000
BIG_ETAG = 64 << 10  # above this a synthetic object's ETag is not its MD5 (listing stays cheap)


# ------------------------------------------------------------------------------------- key space

def make_keys(shape: str, n: int, per_dir: int = 500) -> list[str]:
    """n keys of the given shape, sorted in UTF-8 byte order; the same n always gives the same keys."""
    if shape == "flat":
        width = max(7, len(str(max(n - 1, 0))))
        return [f"obj-{i:0{width}d}" for i in range(n)]
    if shape == "dated":
        start = date(2020, 1, 1)
        out: list[str] = []
        day = 0
        while len(out) < n:
            d = start + timedelta(days=day)
            head = f"year={d.year}/month={d.month:02d}/day={d.day:02d}/part-"
            out.extend(f"{head}{j:06d}.parquet" for j in range(min(per_dir, n - len(out))))
            day += 1
        return out  # generated in order: zero-padded fields sort as dates
    if shape == "hashed":
        md5 = hashlib.md5
        keys = [f"{md5(str(i).encode()).hexdigest()[:8]}/obj-{i}" for i in range(n)]
        keys.sort()
        return keys
    if shape == "ymd":  # date-partitioned without field names: 2024/01/02/part-0001.parquet
        start, out, day = date(2024, 1, 1), [], 0
        while len(out) < n:
            d = start + timedelta(days=day)
            out.extend(f"{d.year}/{d.month:02d}/{d.day:02d}/part-{j:04d}.parquet" for j in range(min(per_dir, n - len(out))))
            day += 1
        return out
    if shape == "hashdirs":  # hashed, two directory levels from the hash: ab/cd/abcd1234...
        md5 = hashlib.md5
        hashes = sorted(md5(str(i).encode()).hexdigest()[:16] for i in range(n))
        return [f"{h[:2]}/{h[2:4]}/{h}" for h in hashes]
    raise ValueError(f"unknown shape {shape!r}; choose from {', '.join(SHAPES)}")


def synth_body(key: str, size: int, start: int = 0, end: int | None = None) -> bytes:
    """Bytes [start, end) of the synthetic object `key`: its UTF-8 name repeated to `size` bytes."""
    end = size if end is None else min(end, size)
    if end <= start:
        return b""
    kb = key.encode() or b"\0"
    off = start % len(kb)
    n = end - start
    return (kb * ((off + n) // len(kb) + 1))[off:off + n]


def synth_etag(key: str, size: int) -> str:
    if size <= BIG_ETAG:
        return hashlib.md5(synth_body(key, size)).hexdigest()
    return hashlib.md5(f"{key}\0{size}".encode()).hexdigest() + "-1"


def _past_prefix(p: str) -> str | None:
    """The smallest string above every string that starts with p (None: there is none)."""
    while p:
        c = ord(p[-1])
        if c < 0x10FFFF:
            return p[:-1] + chr(c + 1)
        p = p[:-1]
    return None


class Rendered:
    """Every key's `<Contents>` element, rendered once at start-up, back to back in one bytes object.

    Why: a listing page is then one slice of it (a memcpy), not a thousand MD5s, quotes and f-strings.
    This server stands in for a remote region, whose CPU is not on the client's machine; on this
    benchmark machine it shares the client's cores, so every microsecond it spends per key is taken
    from the tool being measured. ~200 bytes a key (1M keys: ~200 MB; two encodings when they differ)."""

    def __init__(self, keys: list[str], size: int, url: bool) -> None:
        lm = _iso(SYNTH_MTIME)
        tail = f"</LastModified><ETag>&quot;%s&quot;</ETag><Size>{size}</Size>" \
               "<StorageClass>STANDARD</StorageClass></Contents>"
        frags = [(f"<Contents><Key>{url_quote(k) if url else escape(k)}</Key><LastModified>{lm}"
                  + tail % synth_etag(k, size)).encode() for k in keys]
        self.offsets = array("q", accumulate(map(len, frags), initial=0))  # element i = blob[off[i]:off[i+1]]
        self.blob = b"".join(frags)

    def page(self, i: int, j: int) -> bytes:
        """The `<Contents>` elements of keys[i:j]."""
        return self.blob[self.offsets[i]:self.offsets[j]]


class Bucket:
    """A sorted key list; bodies of PUT objects in a dict, every other key is synthetic."""

    def __init__(self, name: str, keys: list[str], size: int) -> None:
        self.name = name
        self.keys = keys
        self.size = size
        self.stored: dict[str, tuple[bytes, str, float]] = {}  # key -> (body, etag, mtime)
        # {url encoding?: pre-rendered <Contents>}, until the first PUT or DELETE (then every page is built
        # key by key, as before: tests that write are small, and a benchmark that deletes (rm) lists once)
        self.rendered: dict[bool, Rendered] = {}

    def render(self) -> None:
        """Pre-render the listing of the synthetic keys in both encodings (one blob when they agree)."""
        url = Rendered(self.keys, self.size, True)
        same = not any(map(_UNSAFE.search, self.keys))  # plain ASCII names: both encodings are the name
        self.rendered = {True: url, False: url if same else Rendered(self.keys, self.size, False)}

    def has(self, key: str) -> bool:
        i = bisect_left(self.keys, key)
        return i < len(self.keys) and self.keys[i] == key

    def info(self, key: str) -> tuple[int, str, float] | None:
        """(size, etag, mtime) or None."""
        got = self.stored.get(key)
        if got is not None:
            return len(got[0]), got[1], got[2]
        if not self.has(key):
            return None
        return self.size, synth_etag(key, self.size), SYNTH_MTIME

    def body(self, key: str, start: int, end: int) -> bytes:
        got = self.stored.get(key)
        if got is not None:
            return got[0][start:end]
        return synth_body(key, self.size, start, end)

    def put(self, key: str, body: bytes) -> str:
        etag = hashlib.md5(body).hexdigest()
        if not self.has(key):
            insort(self.keys, key)
        self.stored[key] = (body, etag, time.time())
        self.rendered = {}
        return etag

    def delete(self, key: str) -> None:
        i = bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            del self.keys[i]
            self.rendered = {}
        self.stored.pop(key, None)

    def first(self, prefix: str, after: str | None, start_at: str | None) -> int:
        """Index of the first key a listing answers: in `prefix`, past `after`, from `start_at`."""
        i = bisect_left(self.keys, prefix)
        if after is not None:
            i = max(i, bisect_right(self.keys, after))
        if start_at is not None:
            i = max(i, bisect_left(self.keys, start_at))
        return i

    def span(self, prefix: str, after: str | None, start_at: str | None, limit: int) -> tuple[int, int, bool]:
        """A page without a delimiter as indices: keys[i:j], and whether more keys follow in the prefix."""
        keys = self.keys
        n = len(keys)
        i = self.first(prefix, after, start_at)
        j = min(i + limit, n)
        if prefix and j > i and not keys[j - 1].startswith(prefix):
            past = _past_prefix(prefix)
            j = min(j, n if past is None else bisect_left(keys, past, i, j))
        truncated = j - i == limit and j < n and keys[j].startswith(prefix)
        return i, j, truncated

    def walk(self, prefix: str, after: str | None, start_at: str | None, delimiter: str,
             limit: int) -> tuple[list[str], list[str], bool, tuple[str, str] | None]:
        """One listing page: (keys, common prefixes, truncated, resume point).

        Keys > `after` (and >= `start_at`) that start with `prefix`, with keys that have `delimiter`
        after the prefix rolled up into one common prefix each. The resume point is ("after", key) or
        ("from", smallest string past the last common prefix)."""
        keys = self.keys
        n = len(keys)
        i = self.first(prefix, after, start_at)
        out: list[str] = []
        cps: list[str] = []
        last: tuple[str, str] | None = None
        plen = len(prefix)
        if not delimiter:  # the common case: one slice
            j = i + limit
            chunk = keys[i:j]
            if prefix and chunk and not chunk[-1].startswith(prefix):
                chunk = [k for k in chunk if k.startswith(prefix)]
            if chunk:
                last = ("after", chunk[-1])
            i += len(chunk)
            truncated = len(chunk) == limit and i < n and keys[i].startswith(prefix)
            return chunk, cps, truncated, last
        while i < n and len(out) + len(cps) < limit:
            k = keys[i]
            if not k.startswith(prefix):
                break
            d = k.find(delimiter, plen)
            if d >= 0:
                cp = k[:d + len(delimiter)]
                cps.append(cp)
                nxt = _past_prefix(cp)
                i = n if nxt is None else bisect_left(keys, nxt, i)
                last = ("from", nxt or "\U0010ffff")
                continue
            out.append(k)
            last = ("after", k)
            i += 1
        truncated = i < n and keys[i].startswith(prefix)
        return out, cps, truncated, last


def encode_token(point: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(f"{point[0]}:{point[1]}".encode()).decode()


def decode_token(token: str) -> tuple[str | None, str | None]:
    """(after, start_at) from a continuation token; ValueError when it is not one of ours."""
    raw = base64.urlsafe_b64decode(token.encode()).decode()
    kind, _, value = raw.partition(":")
    if kind == "after":
        return value, None
    if kind == "from":
        return None, value
    raise ValueError(token)


# ------------------------------------------------------------------------------------- S3 answers

class S3Error(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


Reply = tuple[int, list[tuple[str, str]], bytes, bool]  # status, headers, body, head-only


def _xml(status: int, body: str) -> Reply:
    data = ('<?xml version="1.0" encoding="UTF-8"?>\n' + body).encode()
    return status, [("Content-Type", "application/xml")], data, False


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


class S3Backend:
    """The S3 semantics: requests in, (status, headers, body) out. No I/O, no clock."""

    def __init__(self, buckets: dict[str, Bucket]) -> None:
        self.buckets = buckets
        self.requests = 0
        # methods answered 501 NotImplemented whatever they ask (tests: how a client takes a server
        # that does not do an operation at all; multipart uploads and ?versions always are)
        self.not_implemented: set[str] = set()
        self.by_method: dict[str, int] = {}  # requests counted per method
        self.keys_listed = 0
        self.list_requests = 0
        self.connections = 0
        self.inflight = 0  # requests read and not yet answered (kept by Conn)
        self.peak_inflight = 0
        self.first_at: float | None = None  # when the first request since the last reset was read
        self.ramp: list[tuple[int, float]] = []  # (requests in flight, ms since first_at) at each new peak
        self.reset_at = self.last_at = time.monotonic()  # the loop's clock (asyncio uses monotonic)

    def started(self, now: float) -> None:
        """A request was read at `now` (Conn's loop clock): note how fast requests in flight ramp up
        (the fan-out of a split listing: how many round trips pass before N listings are in flight)."""
        if self.first_at is None:
            self.first_at = now
        self.last_at = now
        if self.inflight > self.peak_inflight:
            self.peak_inflight = self.inflight
            self.ramp.append((self.inflight, round((now - self.first_at) * 1000, 1)))

    def stats(self, reset: bool) -> Reply:
        """GET /_slow_s3/stats[?reset=1]: counters for benchmarks (no S3 bucket can be named `_slow_s3`)."""
        body = json.dumps({"requests": self.requests, "list_requests": self.list_requests,
                           "keys_listed": self.keys_listed, "peak_inflight": self.peak_inflight,
                           "connections": self.connections, "ramp": self.ramp,
                           # ms from the reset to the first request read, and to the last one
                           "first_ms": round(((self.first_at or self.reset_at) - self.reset_at) * 1000, 1),
                           "last_ms": round((self.last_at - self.reset_at) * 1000, 1)}).encode()
        if reset:
            self.requests = self.list_requests = self.keys_listed = self.connections = 0
            self.peak_inflight = self.inflight
            self.first_at, self.ramp = None, []
            self.reset_at = self.last_at = time.monotonic()
        return 200, [("Content-Type", "application/json")], body, False

    def bucket(self, name: str) -> Bucket:
        b = self.buckets.get(name)
        if b is None:
            raise S3Error(404, "NoSuchBucket", "The specified bucket does not exist")
        return b

    def handle(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Reply:
        if target.startswith("/_slow_s3/stats"):
            return self.stats("reset=1" in target)
        self.requests += 1
        self.by_method[method] = self.by_method.get(method, 0) + 1
        try:
            if method in self.not_implemented and target.partition("?")[0].strip("/"):
                raise S3Error(501, "NotImplemented", f"{method} is not implemented here")
            return self._route(method, target, headers, body)
        except S3Error as e:
            if method == "HEAD":
                return e.status, [], b"", True
            return _xml(e.status, f"<Error><Code>{e.code}</Code><Message>{escape(e.message)}</Message>"
                                  f"<Resource>{escape(target)}</Resource><RequestId>slow-s3</RequestId></Error>")

    def _route(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Reply:
        parts = urlsplit(target)
        q = dict(parse_qsl(parts.query, keep_blank_values=True))
        path = unquote(parts.path)
        name, _, key = path.lstrip("/").partition("/")
        if not name:
            if method == "GET":
                items = "".join(f"<Bucket><Name>{escape(b)}</Name><CreationDate>{_iso(SYNTH_MTIME)}</CreationDate>"
                                "</Bucket>" for b in sorted(self.buckets))
                return _xml(200, f'<ListAllMyBucketsResult xmlns="{NS}"><Owner><ID>slow-s3</ID></Owner>'
                                 f"<Buckets>{items}</Buckets></ListAllMyBucketsResult>")
            raise S3Error(405, "MethodNotAllowed", "not supported on /")
        if not key:
            return self._bucket_op(method, name, q, body)
        return self._object_op(method, name, key, q, headers, body)

    def _bucket_op(self, method: str, name: str, q: dict[str, str], body: bytes) -> Reply:
        if method == "PUT" and not q:
            self.buckets.setdefault(name, Bucket(name, [], 0))
            return 200, [("Location", "/" + name)], b"", False
        b = self.bucket(name)
        if method == "HEAD":
            return 200, [("x-amz-bucket-region", "us-east-1")], b"", True
        if method == "DELETE" and not q:
            if b.keys:
                raise S3Error(409, "BucketNotEmpty", "The bucket you tried to delete is not empty")
            del self.buckets[name]
            return 204, [], b"", False
        if method == "POST" and "delete" in q:
            return self._delete_many(b, body)
        if method != "GET":
            raise S3Error(501, "NotImplemented", f"{method} on a bucket is not implemented here")
        if "location" in q:
            return _xml(200, f'<LocationConstraint xmlns="{NS}"></LocationConstraint>')
        sub = set(q) - {"list-type", "prefix", "delimiter", "max-keys", "start-after", "continuation-token",
                        "encoding-type", "marker", "fetch-owner", "x-id"}
        if sub:
            raise S3Error(501, "NotImplemented", f"?{sorted(sub)[0]} is not implemented here")
        return self._list(b, q)

    def _list(self, b: Bucket, q: dict[str, str]) -> Reply:
        v2 = q.get("list-type") == "2"
        prefix, delimiter = q.get("prefix", ""), q.get("delimiter", "")
        try:
            limit = min(int(q.get("max-keys", MAX_KEYS)), MAX_KEYS)
        except ValueError:
            raise S3Error(400, "InvalidArgument", "max-keys is not a number") from None
        if limit < 0:
            raise S3Error(400, "InvalidArgument", "max-keys is negative")
        url = q.get("encoding-type") == "url"
        if q.get("encoding-type") not in (None, "url"):
            raise S3Error(400, "InvalidArgument", "Invalid Encoding Method specified in Request")
        after, start_at = None, None
        token = q.get("continuation-token")
        if v2 and token is not None:
            try:
                after, start_at = decode_token(token)
            except ValueError:
                raise S3Error(400, "InvalidArgument", "The continuation token provided is incorrect") from None
        elif v2:
            after = q.get("start-after") or None
        else:
            after = q.get("marker") or None
            # V1 pages with a delimiter end at NextMarker = the last common prefix: resume past all of it
            if after and delimiter and after.startswith(prefix) and (d := after.find(delimiter, len(prefix))) >= 0:
                start_at = _past_prefix(after[:d + len(delimiter)]) or "\U0010ffff"
        rendered = None if delimiter else b.rendered.get(url)
        span = (0, 0)
        if limit == 0:
            keys, cps, truncated, last = [], [], False, None
        elif rendered is not None:  # the fast path: a slice of the pre-rendered elements
            i, j, truncated = b.span(prefix, after, start_at, limit)
            keys, cps, span = [], [], (i, j)
            last = ("after", b.keys[j - 1]) if j > i else None
        else:
            keys, cps, truncated, last = b.walk(prefix, after, start_at, delimiter, limit)
        count = len(keys) + span[1] - span[0]
        self.keys_listed += count
        self.list_requests += 1

        def enc(s: str) -> str:
            return url_quote(s) if url else escape(s)
        parts = [f'<ListBucketResult xmlns="{NS}"><Name>{escape(b.name)}</Name><Prefix>{enc(prefix)}</Prefix>']
        if v2:
            parts.append(f"<KeyCount>{count + len(cps)}</KeyCount>")
            if token is not None:
                parts.append(f"<ContinuationToken>{escape(token)}</ContinuationToken>")
            if q.get("start-after"):
                parts.append(f"<StartAfter>{enc(q['start-after'])}</StartAfter>")
        else:
            parts.append(f"<Marker>{enc(q.get('marker', ''))}</Marker>")
        parts.append(f"<MaxKeys>{limit}</MaxKeys>")
        if delimiter:
            parts.append(f"<Delimiter>{enc(delimiter)}</Delimiter>")
        if url:
            parts.append("<EncodingType>url</EncodingType>")
        parts.append(f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>")
        if truncated and last is not None:
            if v2:
                parts.append(f"<NextContinuationToken>{encode_token(last)}</NextContinuationToken>")
            else:
                nm = last[1] if last[0] == "after" else (cps[-1] if cps else last[1])
                parts.append(f"<NextMarker>{enc(nm)}</NextMarker>")
        if rendered is not None:
            head = ('<?xml version="1.0" encoding="UTF-8"?>\n' + "".join(parts)).encode()
            body = b"".join((head, rendered.page(*span), b"</ListBucketResult>"))
            return 200, [("Content-Type", "application/xml")], body, False
        stored, size = b.stored, b.size
        synth_tail = f"</LastModified><ETag>&quot;%s&quot;</ETag><Size>{size}</Size>" \
                     "<StorageClass>STANDARD</StorageClass></Contents>"
        synth_lm = _iso(SYNTH_MTIME)
        plain = not url
        for k in keys:
            got = stored.get(k)
            ek = escape(k) if plain else url_quote(k)
            if got is None:
                parts.append(f"<Contents><Key>{ek}</Key><LastModified>{synth_lm}"
                             + synth_tail % synth_etag(k, size))
            else:
                parts.append(f"<Contents><Key>{ek}</Key><LastModified>{_iso(got[2])}</LastModified>"
                             f"<ETag>&quot;{got[1]}&quot;</ETag><Size>{len(got[0])}</Size>"
                             "<StorageClass>STANDARD</StorageClass></Contents>")
        for cp in cps:
            parts.append(f"<CommonPrefixes><Prefix>{enc(cp)}</Prefix></CommonPrefixes>")
        parts.append("</ListBucketResult>")
        return _xml(200, "".join(parts))

    def _delete_many(self, b: Bucket, body: bytes) -> Reply:
        text = body.decode("utf-8", "replace")
        quiet = re.search(r"<Quiet>\s*true\s*</Quiet>", text) is not None
        done = []
        for m in re.finditer(r"<Key>([^<]*)</Key>", text):
            k = _unescape_xml(m.group(1))
            b.delete(k)
            done.append(k)
        items = "" if quiet else "".join(f"<Deleted><Key>{escape(k)}</Key></Deleted>" for k in done)
        return _xml(200, f'<DeleteResult xmlns="{NS}">{items}</DeleteResult>')

    def _object_op(self, method: str, name: str, key: str, q: dict[str, str], headers: dict[str, str],
                   body: bytes) -> Reply:
        b = self.bucket(name)
        if set(q) - {"x-id"}:
            raise S3Error(501, "NotImplemented", f"?{sorted(q)[0]} on an object is not implemented here")
        if method in ("GET", "HEAD"):
            info = b.info(key)
            if info is None:
                raise S3Error(404, "NoSuchKey", "The specified key does not exist.")
            size, etag, mtime = info
            hdrs = [("ETag", f'"{etag}"'), ("Last-Modified", formatdate(mtime, usegmt=True)),
                    ("Accept-Ranges", "bytes"), ("Content-Type", "application/octet-stream")]
            status, start, end = 200, 0, size
            rng = headers.get("range")
            if rng:
                m = _RANGE.match(rng.strip())
                if not m or (not m.group(1) and not m.group(2)):
                    raise S3Error(400, "InvalidArgument", "unsupported Range")
                if m.group(1):
                    start = int(m.group(1))
                    end = min(int(m.group(2)) + 1, size) if m.group(2) else size
                else:
                    start = max(size - int(m.group(2)), 0)
                if start >= size or end <= start:
                    hdrs.append(("Content-Range", f"bytes */{size}"))
                    raise S3Error(416, "InvalidRange", "The requested range is not satisfiable")
                status = 206
                hdrs.append(("Content-Range", f"bytes {start}-{end - 1}/{size}"))
            if method == "HEAD":
                return status, hdrs + [("Content-Length", str(end - start))], b"", True
            return status, hdrs, b.body(key, start, end), False
        if method == "PUT":
            src = headers.get("x-amz-copy-source")
            if src:
                sname, _, skey = unquote(src.split("?", 1)[0]).lstrip("/").partition("/")
                sb = self.bucket(sname)
                info = sb.info(skey)
                if info is None:
                    raise S3Error(404, "NoSuchKey", "The specified key does not exist.")
                etag = b.put(key, sb.body(skey, 0, info[0]))
                return _xml(200, f'<CopyObjectResult xmlns="{NS}"><LastModified>{_iso(time.time())}</LastModified>'
                                 f"<ETag>&quot;{etag}&quot;</ETag></CopyObjectResult>")
            etag = b.put(key, body)
            return 200, [("ETag", f'"{etag}"')], b"", False
        if method == "DELETE":
            b.delete(key)
            return 204, [], b"", False
        raise S3Error(501, "NotImplemented", f"{method} on an object is not implemented here")


_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-~/]")
_PCT = {chr(c): f"%{c:02X}" for c in range(128)}
_DIR_CACHE: dict[str, str] = {}


def _sub(s: str) -> str:
    return _UNSAFE.sub(lambda m: _PCT[m.group()], s)


def url_quote(s: str) -> str:
    """quote(s, safe="/~"), cheap for the synthetic keys: ASCII, and the directory part (which repeats,
    `year=2024/month=03/day=17`) is quoted once and remembered."""
    if not s.isascii():
        return quote(s, safe="/~")
    if _UNSAFE.search(s) is None:
        return s
    head, sep, tail = s.rpartition("/")
    q = _DIR_CACHE.get(head)
    if q is None:
        if len(_DIR_CACHE) > 100_000:
            _DIR_CACHE.clear()
        q = _DIR_CACHE[head] = _sub(head)
    return q + sep + (tail if _UNSAFE.search(tail) is None else _sub(tail))


_ENT = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def _unescape_xml(s: str) -> str:
    def one(m: re.Match[str]) -> str:
        n = m.group(1)
        if n[0] == "#":
            return chr(int(n[2:], 16) if n[1] in "xX" else int(n[1:]))
        return _ENT.get(n, m.group(0))
    return re.sub(r"&(#?\w+);", one, s)


def _decode_aws_chunked(data: bytes) -> bytes:
    """The payload of an `aws-chunked` body (SigV4 streaming or trailing checksums): chunks of
    `hex[;chunk-signature=..]\\r\\n DATA \\r\\n`, ended by a zero-size chunk and optional trailers."""
    out, i = bytearray(), 0
    while True:
        eol = data.index(b"\r\n", i)
        n = int(data[i:eol].split(b";", 1)[0], 16)
        if n == 0:
            return bytes(out)
        out += data[eol + 2:eol + 2 + n]
        i = eol + 2 + n + 2


# ------------------------------------------------------------------------------------- HTTP

_REASON = {200: "OK", 204: "No Content", 206: "Partial Content", 400: "Bad Request", 404: "Not Found",
           405: "Method Not Allowed", 409: "Conflict", 416: "Range Not Satisfiable", 501: "Not Implemented"}


class Conn(asyncio.Protocol):
    """One keep-alive connection: requests one at a time, each answered `delay` seconds after it is read."""

    def __init__(self, backend: S3Backend, delay: float) -> None:
        self.backend, self.delay = backend, delay
        self.buf = bytearray()
        self.busy = False
        self.continued = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.backend.connections += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.busy:
            self._next()

    def _next(self) -> None:
        """Parse one complete request from the buffer, if there is one, and schedule its answer."""
        t = self.transport
        if t is None:
            return
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buf) > 1 << 16:
                t.close()
            return
        lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        try:
            method, target, _version = lines[0].split(" ", 2)
        except ValueError:
            t.close()
            return
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        start = end + 4
        if headers.get("transfer-encoding", "").lower() == "chunked":
            got = _read_chunked(self.buf, start)
            if got is None:
                self._maybe_continue(headers)
                return
            body, stop = got
        else:
            n = int(headers.get("content-length") or 0)
            if len(self.buf) < start + n:
                self._maybe_continue(headers)
                return
            body, stop = bytes(self.buf[start:start + n]), start + n
        del self.buf[:stop]
        self.continued = False
        if "aws-chunked" in headers.get("content-encoding", "") or "x-amz-decoded-content-length" in headers:
            try:
                body = _decode_aws_chunked(body)
            except (ValueError, IndexError):
                pass
        keep = headers.get("connection", "").lower() != "close"
        try:
            status, hdrs, payload, head_only = self.backend.handle(method, target, headers, body)
        except Exception as exc:  # a bug here must not hang the client
            status, hdrs, payload, head_only = 500, [], f"internal error: {exc!r}".encode(), False
        head = [f"HTTP/1.1 {status} {_REASON.get(status, 'Error')}", "Server: slow_s3",
                "x-amz-request-id: slow-s3"]
        head += [f"{k}: {v}" for k, v in hdrs]
        if not head_only:
            head.append(f"Content-Length: {len(payload)}")
        if not keep:
            head.append("Connection: close")
        wire = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (b"" if head_only else payload)
        self.busy = True
        if target.startswith("/_slow_s3/"):  # the benchmark's own questions: no delay, not counted
            self.backend.inflight += 1
            self._send(wire, keep)
            return
        be = self.backend
        be.inflight += 1
        loop = asyncio.get_running_loop()
        be.started(loop.time())
        loop.call_later(self.delay, self._send, wire, keep)

    def _maybe_continue(self, headers: dict[str, str]) -> None:
        if headers.get("expect", "").lower() == "100-continue" and not self.continued and self.transport:
            self.continued = True
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _send(self, wire: bytes, keep: bool) -> None:
        self.busy = False
        self.backend.inflight -= 1
        t = self.transport
        if t is None:
            return
        t.write(wire)
        if not keep:
            t.close()
            return
        if self.buf:
            self._next()


def _read_chunked(buf: bytearray, i: int) -> tuple[bytes, int] | None:
    """(body, end offset) of a complete Transfer-Encoding: chunked body at buf[i:], or None."""
    out = bytearray()
    while True:
        eol = buf.find(b"\r\n", i)
        if eol < 0:
            return None
        n = int(bytes(buf[i:eol]).split(b";", 1)[0], 16)
        if n == 0:
            stop = buf.find(b"\r\n\r\n", eol)
            if buf[eol:eol + 4] == b"\r\n\r\n":
                return bytes(out), eol + 4
            return None if stop < 0 else (bytes(out), stop + 4)
        if len(buf) < eol + 2 + n + 2:
            return None
        out += buf[eol + 2:eol + 2 + n]
        i = eol + 2 + n + 2


async def serve(backend: S3Backend, host: str, port: int, delay: float,
                ready: Callable[[int], None] | None = None, stop: asyncio.Event | None = None) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Conn(backend, delay), host, port, backlog=1024, reuse_address=True)
    bound = server.sockets[0].getsockname()[1]
    if ready:
        ready(bound)
    async with server:
        if stop is None:
            await asyncio.Future()
        else:
            await stop.wait()


def make_backend(shape: str, keys: int, size: int, bucket: str = "b", per_dir: int = 500) -> S3Backend:
    b = Bucket(bucket, make_keys(shape, keys, per_dir), size)
    b.render()
    return S3Backend({bucket: b})


# ------------------------------------------------------------------------------------- embedding

class ThreadServer:
    """slow_s3 serving from a daemon thread of this process (for tests)."""

    def __init__(self, backend: S3Backend, delay_ms: float, host: str = "127.0.0.1") -> None:
        self.backend = backend
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        started = threading.Event()
        port: list[int] = []

        def ready(p: int) -> None:
            port.append(p)
            started.set()

        async def main() -> None:
            self._stop = asyncio.Event()
            await serve(backend, host, 0, delay_ms / 1000, ready, self._stop)

        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(main(),), daemon=True,
                                        name="slow_s3")
        self._thread.start()
        if not started.wait(30):
            raise RuntimeError("slow_s3 did not start")
        self.url = f"http://{host}:{port[0]}"

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def start_thread(shape: str = "flat", keys: int = 1000, size: int = 100, delay_ms: float = 0,
                 bucket: str = "b", per_dir: int = 500) -> ThreadServer:
    """Serve a synthetic bucket from a thread of this process; returns the server (.url, .stop())."""
    return ThreadServer(make_backend(shape, keys, size, bucket, per_dir), delay_ms)


class ProcessServer:
    """slow_s3 in a child process of its own session (for benchmarks: its CPU is not the caller's)."""

    def __init__(self, argv: list[str], timeout: float = 300) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=None, stdin=subprocess.DEVNULL,
                                     start_new_session=True, text=True)
        assert self.proc.stdout is not None
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        line = box[0] if box else ""
        m = re.search(r"listening on (http://\S+)", line)
        if not m:
            self.stop()
            raise RuntimeError(f"slow_s3 did not start (said {line!r})")
        self.url = m.group(1)
        self.pid = self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()


def start_process(shape: str = "flat", keys: int = 1000, size: int = 100, delay_ms: float = 50,
                  bucket: str = "b", per_dir: int = 500, python: str = sys.executable) -> ProcessServer:
    """Serve a synthetic bucket from a child process on a free port; returns the server (.url, .pid, .stop())."""
    argv = [python, str(Path(__file__).resolve()), "--port", "0", "--delay-ms", str(delay_ms), "--shape", shape,
            "--keys", str(keys), "--size", str(size), "--bucket", bucket, "--per-dir", str(per_dir)]
    return ProcessServer(argv)


# ------------------------------------------------------------------------------------- command line

def measure(shape: str, keys: int, size: int, per_dir: int, delimiter: str) -> None:
    """Print how many keys a second the listing code answers on one core (no HTTP, no delay)."""
    t0 = time.perf_counter()
    backend = make_backend(shape, keys, size, per_dir=per_dir)
    made = time.perf_counter() - t0
    q = {"list-type": "2", "encoding-type": "url"}
    if delimiter:
        q["delimiter"] = delimiter
    listed, pages, nbytes = 0, 0, 0
    c0, t0 = time.process_time(), time.perf_counter()
    token = None
    while True:
        qq = dict(q, **({"continuation-token": token} if token else {}))
        status, _, body, _ = backend.handle("GET", "/b?" + "&".join(f"{k}={quote(v)}" for k, v in qq.items()), {}, b"")
        assert status == 200, body[:300]
        pages += 1
        nbytes += len(body)
        listed += body.count(b"<Contents>") + body.count(b"<CommonPrefixes>")
        m = re.search(rb"<NextContinuationToken>([^<]*)<", body)
        if not m:
            break
        token = m.group(1).decode()
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    print(f"{shape}: {keys:,} keys generated in {made:.2f} s; listed {listed:,} entries in {pages:,} pages, "
          f"{nbytes / 2**20:.1f} MiB of XML, {cpu:.2f} CPU s = {listed / cpu:,.0f} keys/s "
          f"({cpu * 1e6 / max(listed, 1):.2f} us/key), wall {wall:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9000, help="0 = any free port (the URL is printed)")
    ap.add_argument("--delay-ms", type=float, default=50, help="added to every answer (default %(default)s)")
    ap.add_argument("--shape", choices=SHAPES, default="flat")
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=100, help="bytes per synthetic object (default %(default)s)")
    ap.add_argument("--bucket", default="b")
    ap.add_argument("--per-dir", type=int, default=500, help="parts per day for --shape dated")
    ap.add_argument("--measure", action="store_true", help="time the listing code on one core and exit")
    ap.add_argument("--delimiter", default="", help="with --measure: list with this delimiter")
    a = ap.parse_args()
    if a.keys < 0 or a.size < 0 or a.per_dir < 1 or a.delay_ms < 0:
        ap.error("--keys, --size and --delay-ms must be >= 0, --per-dir >= 1")
    if a.measure:
        measure(a.shape, a.keys, a.size, a.per_dir, a.delimiter)
        return
    backend = make_backend(a.shape, a.keys, a.size, a.bucket, a.per_dir)
    try:
        import uvloop  # a faster loop when the project's venv has it
        uvloop.install()
    except ImportError:
        pass

    def ready(port: int) -> None:
        print(f"slow_s3: listening on http://{a.host}:{port} (bucket {a.bucket}: {a.keys:,} {a.shape} keys of "
              f"{a.size} B, {a.delay_ms:g} ms per request)", flush=True)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        asyncio.run(serve(backend, a.host, a.port, a.delay_ms / 1000, ready))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"slow_s3: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
