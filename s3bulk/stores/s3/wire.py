"""The lean S3 data path: ListObjectsV2, GET, HEAD, PUT, CopyObject, UploadPart and the multipart
uploads' create/complete/abort signed by hand (sigv4.py) over s3bulk's own HTTP/1.1 client.

Per small object aiobotocore spends ~2.5 ms of CPU (endpoint rules, parameter validation, event
hooks, response parsing with dateutil, aiohttp); here a request is one formatted head, one
signature and one parse of the status line and headers. What stays with botocore (store.py): the
credential chain, endpoint resolution (this module is handed the URL botocore would use and the
proxy the run's settings give it, chosen from HTTP(S)_PROXY/NO_PROXY as botocore chooses it:
setup.py proxy_for; an https:// proxy sends the store to botocore),
deletes, listing parts and uploads, and every request this path cannot make (it raises
UseBotocore and the store falls back for good, e.g. on a region redirect).

Errors are mapped by errors.error_for, the same table the botocore path uses. Retries are not done
here: the engine's retrying wrapper (stores/resilient.py) does them for both paths alike.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import ssl
import sys
from binascii import b2a_base64
from operator import attrgetter
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs, unquote, urlsplit

from .. import checksums
from ...errors import Corrupt, StoreError, Transient, from_transport
from .lazy_re import lazy
from ...errors import BodyRefused, ChecksumRefused
from ...http.client import Body, HttpClient, HttpError, Response, retry_after
from ...http.dates import http_date_seconds
from ...model import ObjectInfo
from ..files.bodies import FileBody
from ..conditions import check_answer, copy_source_if_match_header
from .. import written
from . import list_exact, multipart_xml, xml_plain, xml_reference
from ..requests import ERROR, STATUS_CLASS, WIRE_OPS, Counts
from .sigv4 import EMPTY_SHA256, UNSIGNED_PAYLOAD, Credentials, Signer, canonical_query, uri_encode

CredentialSource = Callable[[], Awaitable[Credentials | None]]

_CODE = lazy(rb"<Code>([^<]*)</Code>")
_MESSAGE = lazy(rb"<Message>([^<]*)</Message>")
_TRUNCATED = lazy(rb"<IsTruncated>\s*true\s*</IsTruncated>")
_IS_TRUNCATED = lazy(rb"<IsTruncated>\s*(true|false)\s*</IsTruncated>")
_NEXT_TOKEN = lazy(rb"<NextContinuationToken>([^<]*)</NextContinuationToken>")
# S3's own order inside <Contents> (Key, LastModified, ETag, ..., Size): one match per object. Pages
# whose every entry matches are read this way; any other page is read
# by the reference parser (xml_reference.py), as is any page not in the plain formatting
# (xml_plain.py). Not ElementTree/expat first: measured slower (1.6-1.8x, bench/list_parse_bench.py).
_ETAG = rb"<ETag>(?:&quot;|&#34;|\")?([^<&\"]*)(?:&quot;|&#34;|\")?</ETag>"  # inside its quotes; else no match


def _upto(tag: bytes) -> bytes:
    """Any text inside this <Contents> up to the first <tag>: `(?:(?!</Contents>).)*?<tag>` unrolled
    (runs of non-'<' bytes at once, a look at each '<'), ~0.4 us a key less on S3's pages."""
    return rb"[^<]*(?:<(?!" + tag + rb">|/Contents>)[^<]*)*<" + tag + rb">"


_ENTRY = lazy(rb"<Contents>\s*<Key>([^<]*)</Key>\s*<LastModified>([^<]*)</LastModified>\s*"
                    + _ETAG + _upto(rb"Size") + rb"(\d+)</Size>"
                    + rb"(?:" + _upto(rb"StorageClass") + rb"([^<&]*)</StorageClass>)?")
# versitygw's order (LastModified, checksum fields, ETag, Key, Size, StorageClass), read as fast
_ENTRY_LM_FIRST = lazy(rb"<Contents>\s*<LastModified>([^<]*)</LastModified>" + _upto(rb"ETag")[:-6]
                             + _ETAG + rb"\s*<Key>([^<]*)</Key>\s*<Size>(\d+)</Size>"
                             rb"(?:\s*<StorageClass>([^<&]*)</StorageClass>)?")
# which group holds (key, last modified, etag, size, storage class), by the first tag in <Contents>
_ORDERS = {b"<Key>": (_ENTRY, (1, 2, 3, 4, 5)), b"<LastModified>": (_ENTRY_LM_FIRST, (3, 1, 2, 4, 5))}
_FIRST_TAG = lazy(rb"<Contents>\s*(<[A-Za-z]+>)")
_KEY = attrgetter("key")
_NOT_QUOTE = lazy(rb"&(?!quot;</ETag>|#34;</ETag>)(?<!<ETag>&)")  # not an ETag's quote: a key may hold it
_CLASS_NAMES: dict[bytes, str] = {}  # b"STANDARD" -> one shared str, not one per key
_TAG = lazy(rb"<Tag>\s*<Key>([^<]*)</Key>\s*<Value>([^<]*)</Value>\s*</Tag>")
_PART = lazy(rb"<Part>(.*?)</Part>", re.S)
_PART_FIELD = lazy(rb"<(PartNumber|Size|Checksum(?:CRC32|CRC32C|CRC64NVME|SHA1|SHA256))>([^<]*)</\1>")
_NEXT_PART = lazy(rb"<NextPartNumberMarker>\s*(\d+)\s*</NextPartNumberMarker>")
_unescape = xml_plain.unescape


class UseBotocore(Exception):
    """This request needs what only botocore does (a redirect to another region, an odd answer)."""


_NOT_DIGEST_ERRORS = ("BadDigest", "InvalidDigest", "XAmzContentChecksumMismatch", "XAmzContentSHA256Mismatch")


def refuses_checksums(status: int | None, code: str, message: str) -> bool:
    """Whether an error answer to a request that carried checksum headers refuses the headers
    themselves: 501 NotImplemented, or a 400 whose message names one (not a checksum mismatch)."""
    if status == 501 or code == "NotImplemented":
        return True
    text = message.lower()
    return status == 400 and code not in _NOT_DIGEST_ERRORS and ("x-amz-checksum" in text or
                                                                 "x-amz-sdk-checksum" in text)


_TS_CACHE: dict[bytes, float] = {}


def _listed_ts(raw: bytes) -> float:
    """LastModified of a listing ("2026-11-23T01:02:03.000Z"), cached: objects written together share
    their second, and the calendar arithmetic is most of a key's cost otherwise."""
    v = _TS_CACHE.get(raw)
    if v is None:
        v = list_exact.timestamp(raw.decode())
        if len(_TS_CACHE) >= 4096:
            _TS_CACHE.clear()
        _TS_CACHE[raw] = v
    return v


def _class_name(raw: bytes | None) -> str | None:
    if not raw:
        return None
    name = _CLASS_NAMES.get(raw)
    if name is None:
        name = raw.decode()  # UTF-8 as the reference reads it (was ASCII with U+FFFD for any other byte)
        if len(_CLASS_NAMES) < 64:
            _CLASS_NAMES[raw] = name
    return name


def _fast_entries(body: bytes, encoded: bool,
                  until: str | None = None) -> list[ObjectInfo] | None:
    """Every <Contents> of a page in S3's field order (or versitygw's), as ObjectInfo (made as a
    tuple is: ObjectInfo(...) is a Python call, ~0.5 us a key), or None when some entry is not (then
    the page is read field by field). `until`: entries stop at the first key above it
    (kept, so the caller still sees the page went past its range): a split key range is listed with
    S3's full page, and the keys beyond its end, often most of the page, are neither matched nor
    converted."""
    out: list[ObjectInfo] = []
    first = _FIRST_TAG.search(body)
    if first is None:
        return out if b"Contents" not in body else None  # <Contents >, a prefix: not an empty page
    order = _ORDERS.get(first.group(1))
    if order is None:
        return None
    pattern, groups = order
    if not encoded:
        exact = list_exact.entries(body, pattern is _ENTRY_LM_FIRST, until)
        if exact is not None:
            return exact
        if _NOT_QUOTE.search(body) is None:
            return _plain_entries(body, pattern, groups, until)
    append = out.append
    ts_get, class_get = _TS_CACHE.get, _CLASS_NAMES.get  # the caches' hits without a call each (~0.4 us a key)
    new = tuple.__new__
    end = -1  # where the matching stopped at `until`; -1: it went through the page
    classless = 0
    for m in pattern.finditer(body):
        k, lm, et, size, sc = m.group(*groups)
        key = k.decode("utf-8")
        if "&" in key:
            key = _unescape(key)
        if encoded:
            key = unquote(key)
        etag = et.decode()  # an ETag with an entity or a quote inside fails the match: read field by field
        ts = ts_get(lm)
        if ts is None:
            ts = _listed_ts(lm)
        name = class_get(sc) if sc else None
        if name is None:
            if sc:
                name = _class_name(sc)
            else:
                classless += 1
        append(new(ObjectInfo, (key, int(size), ts, etag, name)))
        if until is not None and key > until:
            end = body.find(b"</Contents>", m.end()) + 11  # past this entry's end (-1 + 11: no end, no match)
            break
    # every <Contents>...</Contents> up to where the matching stopped was one match: none skipped
    # or read in part, none written another way (<Contents >, a prefix, a key holding the word)
    if 2 * len(out) != (body.count(b"Contents") if end < 0 else body.count(b"Contents", 0, end)):
        return None
    if classless and _class_missed(body, len(out) - classless, end):
        return None
    return out


def _class_missed(body: bytes, read: int, end: int = -1) -> bool:
    """Whether some entry's StorageClass was there but not read by the optional group
    (<StorageClass >, <StorageClass/>, an entity in it): asked only of pages with entries
    without one (S3 gives every entry its class), by counting the word."""
    return 2 * read != (body.count(b"StorageClass") if end < 0 else body.count(b"StorageClass", 0, end))


def _plain_entries(body: bytes, pattern: re.Pattern[bytes], groups: tuple[int, ...],
                   until: str | None) -> list[ObjectInfo] | None:
    """`_fast_entries` of a page whose keys hold no entity and are not URL-encoded (the common
    case): every match's fields at once (findall) and the entries in one comprehension, ~1 us a
    key less than a loop over match objects; the keys beyond `until` are matched but dropped."""
    found = pattern.findall(body)
    if 2 * len(found) != body.count(b"Contents"):  # as in _fast_entries
        return None
    classless = [f[4] for f in found].count(b"")
    if classless and _class_missed(body, len(found) - classless):
        return None
    ts_get, class_get, new = _TS_CACHE.get, _CLASS_NAMES.get, tuple.__new__
    if groups == (1, 2, 3, 4, 5):
        out = [new(ObjectInfo, (k.decode("utf-8"), int(size), ts_get(lm) or _listed_ts(lm), et.decode(),
                                class_get(sc) or _class_name(sc)))
               for k, lm, et, size, sc in found]
    else:  # versitygw's order
        out = [new(ObjectInfo, (k.decode("utf-8"), int(size), ts_get(lm) or _listed_ts(lm), et.decode(),
                                class_get(sc) or _class_name(sc)))
               for lm, et, k, size, sc in found]
    if until is not None and out and out[-1].key > until:
        # the first key past the range ends the page's entries (kept, as the loop does)
        del out[bisect.bisect_right(out, until, key=_KEY) + 1:]
    return out


def read_listing(body: bytes, encoded: bool, until: str | None = None
                 ) -> tuple[list[ObjectInfo], bool, str | None]:
    """A ListObjectsV2 answer as (entries, truncated, next token): by the regexes when the page is
    plain (xml_plain.py) and every entry matches, else by the reference parser, which raises
    xml_reference.Malformed when it is not a whole listing answer (cut off, or not XML: a regex
    would read a truncated page as a short last one)."""
    fast = _fast_listing(body, encoded, until)
    return fast if fast is not None else xml_reference.listing(body, encoded, until)


def _fast_listing(body: bytes, encoded: bool, until: str | None
                  ) -> tuple[list[ObjectInfo], bool, str | None] | None:
    """read_listing by the regexes, or None where they might read the page otherwise than the
    reference does."""
    if not (body.endswith(b"</ListBucketResult>") or body.rstrip().endswith(b"</ListBucketResult>")) or \
            not xml_plain.listing_page(body):
        return None
    flag = _outside_entries(body, _IS_TRUNCATED)
    if flag is None:
        return None
    truncated = flag.group(1) == b"true"
    token = _outside_entries(body, _NEXT_TOKEN)
    if truncated and token is None:
        return None
    try:
        entries = _fast_entries(body, encoded, until)
        if entries is None:
            return None
        return entries, truncated, (_unescape(token.group(1).decode()) if token else None)
    except ValueError:  # an entity in a time or an ETag, bytes that are not UTF-8: not plain after all
        return None


def _outside_entries(body: bytes, pattern: re.Pattern[bytes]) -> re.Match[bytes] | None:
    """The first match of `pattern` before the page's first entry or after its last (where every
    server writes IsTruncated and the token), else anywhere: a search through the entries costs
    ~0.15 us a key, as much as the plain-formatting check and the exact counts together."""
    first = body.find(b"<Contents>")
    if first < 0:
        return pattern.search(body)
    m = pattern.search(body, 0, first)
    if m is None:
        last = body.rfind(b"</Contents>")
        m = pattern.search(body, last)
        if m is None:
            m = pattern.search(body, first, last)
    return m


def error_fields(body: bytes) -> tuple[str, str]:
    """An error answer's (Code, Message), "" where it has none. A plain answer (xml_plain.py) by
    the regexes, any other XML by the reference parser; what is not XML at all (an HTML page from a
    proxy, a body cut off) by the regexes still, for whatever they find in it."""
    if xml_plain.small_root(body) is None:
        try:
            return xml_reference.error_fields(body)
        except xml_reference.Malformed:
            pass
    m = _CODE.search(body)
    code = m.group(1).decode("utf-8", "replace").strip() if m else ""
    m = _MESSAGE.search(body)
    msg = m.group(1).decode("utf-8", "replace") if m else ""
    try:
        msg = _unescape(msg)
    except ValueError:
        pass  # not XML: the message as it came
    return code, msg.strip()


def read_tags(body: bytes) -> list[tuple[str, str]]:
    """A GetObjectTagging answer's (key, value) pairs: by the regex when the answer is plain and
    every <Tag> matched (Key before Value), else by the reference parser."""
    if xml_plain.small_root(body) == b"Tagging":
        found = _TAG.findall(body)
        if len(found) == body.count(b"<Tag>"):
            return [(_unescape(k.decode()), _unescape(v.decode())) for k, v in found]
    return xml_reference.tags(body)


def crc32_b64(data: bytes | bytearray | memoryview) -> str:
    """An upload part's (or a body's) CRC32 as its header carries it: zlib-ng's for a big body
    (checksums.crc32_of), computed on the thread that sends every connection's bytes."""
    return b2a_base64(checksums.crc32_of(data).to_bytes(4, "big"), newline=False).decode()  # not base64's layer


def checksum_header(algorithm: str, data: bytes | bytearray | memoryview) -> dict[str, str]:
    """The x-amz-checksum-* header of a PUT or UploadPart body (CRC32 by crc32_b64, the rest by stores/checksums.py),
    with x-amz-sdk-checksum-algorithm as botocore sends it (moto keeps no checksum without it)."""
    if algorithm == "CRC32":
        return {"x-amz-sdk-checksum-algorithm": "CRC32", "x-amz-checksum-crc32": crc32_b64(data)}
    return {"x-amz-sdk-checksum-algorithm": algorithm, checksums.header(algorithm): checksums.b64(algorithm, data)}


class _Longer:
    """get_small's sink (http/client.py BodySink): a body of at most `most` bytes is received as
    usual; a longer one is taken here and refused at its first bytes, which drops the connection.
    Its head is kept: it says of the object all a HEAD would (ETag, time, checksum, properties)."""

    __slots__ = ("most", "length", "headers")

    def __init__(self, most: int) -> None:
        self.most, self.length = most, 0
        self.headers: dict[str, str] = {}

    def accepts(self, status: int, length: int, headers: dict[str, str]) -> bool:
        if status == 200 and length > self.most:
            self.length, self.headers = length, dict(headers)
            return True
        return False

    def write(self, chunk: memoryview) -> None:
        raise BodyRefused()


def _answered(key: str, size: int, h: dict[str, str], url: str) -> ObjectInfo:
    """What a GET's answer says of the object: its size, time, ETag and storage class."""
    try:
        mtime = http_date_seconds(h["last-modified"]) if "last-modified" in h else None
    except (ValueError, TypeError) as exc:
        raise Transient(f"GET answer with an unusable Last-Modified ({exc})", op="get", url=url, key=key) from exc
    etag = h.get("etag")
    return ObjectInfo(key, size, mtime, etag.strip('"') if etag else None, h.get("x-amz-storage-class"))


def verify_body(data: bytes | bytearray | memoryview, headers: Any, url: str, key: str) -> tuple[str, str] | None:
    """Corrupt when a whole object's body does not match the full-object checksum its GET answer
    carries (x-amz-checksum-mode: ENABLED asked for it). A composite checksum (multipart objects,
    "-N") covers parts this answer does not tell: it is returned as (algorithm, value) for the
    store to check with the parts' checksums (S3Store.check_composite_body). An algorithm this
    process cannot compute (CRC32C without awscrt) is left unchecked: the body length still is."""
    found = checksums.from_headers(headers)
    if found is None:
        return None
    algorithm, want, kind = found
    if not checksums.available(algorithm):
        return None
    if kind == "COMPOSITE":
        return algorithm, want
    if kind != "FULL_OBJECT":
        return None
    got = crc32_b64(data) if algorithm == "CRC32" else checksums.b64(algorithm, data)
    if got != want:
        raise Corrupt(f"{algorithm} of the body does not match the server's", op="get", url=url, key=key)
    return None


def parse_object_parts(body: bytes) -> tuple[list[tuple[int, int, str]], int | None] | None:
    """A GetObjectAttributes answer's ObjectParts: ([(number, size, base64 checksum)], the next
    part-number marker when truncated), or None when it has no parts with checksums."""
    if xml_plain.small_root(body) is None:
        return xml_reference.object_parts(body)  # Malformed when not XML (a ValueError, as int() raises)
    if b"<ObjectParts>" not in body:  # versitygw answers without them (MinIO's root element is lower case)
        return None
    parts: list[tuple[int, int, str]] = []
    for m in _PART.finditer(body):
        f = dict(_PART_FIELD.findall(m.group(1)))
        value = next((v for k, v in f.items() if k.startswith(b"Checksum") and v), None)
        if value is None or not f.get(b"PartNumber") or not f.get(b"Size"):
            return None
        parts.append((int(f[b"PartNumber"]), int(f[b"Size"]), value.decode()))
    if not parts:
        return None
    nxt = _NEXT_PART.search(body)
    return parts, (int(nxt.group(1)) if _TRUNCATED.search(body) and nxt else None)


class S3Wire:
    """Requests against one bucket at the address botocore resolved for it."""

    def __init__(self, presigned_url: str, region: str | None, credentials: CredentialSource, *,
                 bucket: str, max_connections: int = 64, timeout: float = 60.0,
                 verify: bool | str = True, proxy: str | None = None, request_payer: str | None = None,
                 sse_c_key: bytes | None = None, requests: Counts | None = None) -> None:
        parts = urlsplit(presigned_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UseBotocore(f"unexpected endpoint {parts.scheme}")
        # the presigned URL was made for key "k": what precedes it is where keys go
        if not parts.path.endswith("/k"):
            raise UseBotocore("unexpected object address")
        self.base_path = parts.path[:-1]
        self.list_path = self.base_path.rstrip("/") or "/"
        scope = parse_qs(parts.query).get("X-Amz-Credential", [""])[0].split("/")
        self.signer = Signer(scope[2] if len(scope) >= 4 else (region or "us-east-1"))
        tls = None
        if parts.scheme == "https":
            tls = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
            if verify is False:
                tls.check_hostname = False
                tls.verify_mode = ssl.CERT_NONE
        port = parts.port or (443 if tls else 80)
        # `proxy`: the one the run's settings give this address (setup.py proxy_for), if any
        if proxy is not None and not proxy.lower().startswith("http://"):
            raise UseBotocore("TLS to the proxy itself (an https:// proxy) is botocore's to do")
        self.client = HttpClient(parts.hostname, port, max_connections=max_connections, timeout=timeout,
                                 tls=tls, proxy=proxy)
        self.host = self.client.host_header
        self.bucket = bucket
        self._credentials = credentials
        self.request_payer = request_payer  # --request-payer: sent (and signed) on every request
        # SSE-C: the bucket's objects are read with this customer key (GET and HEAD carry it)
        from .props import customer_key_headers

        self.read_headers: dict[str, str] = customer_key_headers(sse_c_key)
        # every request counted by operation and status class (stores/requests.py): the store's dict
        self.requests: Counts = requests if requests is not None else {}

    async def close(self) -> None:
        await self.client.close()

    # ------------------------------------------------------------ one request

    async def _send(self, method: str, path: str, params: dict[str, str] | None, headers: dict[str, str],
                    body: Body | None, op: str, url: str, key: str,
                    into: memoryview | None = None, sink: Any = None,
                    payload_hash: str = UNSIGNED_PAYLOAD) -> Response:
        query = canonical_query(params) if params else ""
        if self.request_payer:
            headers["x-amz-request-payer"] = self.request_payer
        creds = await self._credentials()
        if creds is not None:
            self.signer.sign(creds, method, self.host, path, query, headers, payload_hash)
        target = f"{path}?{query}" if query else path
        counts = self.requests
        try:
            resp = await self.client.request(method, target, headers, body, into, sink)
        except HttpError as exc:
            counted = (WIRE_OPS.get(op, op), ERROR)
            counts[counted] = counts.get(counted, 0) + 1
            raise from_transport(exc, op=op, url=url, key=key) from exc
        counted = (WIRE_OPS.get(op, op), STATUS_CLASS.get(resp.status // 100, ERROR))
        counts[counted] = counts.get(counted, 0) + 1
        return resp

    def _error(self, resp: Response, op: str, url: str, key: str) -> StoreError:
        from .errors import error_for

        region = resp.headers.get("x-amz-bucket-region")
        if (region and region != self.signer.region) or (
                resp.status == 400 and b"AuthorizationHeaderMalformed" in resp.body[:1024]):
            raise UseBotocore(f"{op}: the bucket is in {region or 'another region'}")  # botocore re-resolves
        code, msg = error_fields(bytes(resp.body)) if resp.body else ("", "")
        err = error_for(resp.status, code, msg, op, url, key)
        if resp.status in (429, 503):
            err.retry_after = retry_after(resp.headers)
        return err

    def _write_error(self, resp: Response, op: str, url: str, key: str, headers: dict[str, str]) -> StoreError:
        """_error for a PUT or UploadPart: ChecksumRefused when the server refuses the checksum
        headers it carried."""
        if any(h.startswith(("x-amz-checksum-", "x-amz-sdk-checksum")) for h in headers) and resp.status in (400, 501):
            code, msg = error_fields(bytes(resp.body[:4096])) if resp.body else ("", "")
            if refuses_checksums(resp.status, code, msg):
                return ChecksumRefused(f"the server refuses checksum headers ({resp.status} {code})".strip(),
                                       op=op, url=url, key=key)
        return self._error(resp, op, url, key)

    def _object_path(self, key: str) -> str:
        return self.base_path + uri_encode(key, keep_slash=True)

    # ------------------------------------------------------------ operations

    async def list_page(self, prefix: str, after: str | None, token: str | None, limit: int,
                        encoded: bool, url: str, until: str | None = None
                        ) -> tuple[list[ObjectInfo], bool, str | None]:
        """(entries, truncated, next token). `until`: the
        entries may stop after the first key above it (the caller cuts there anyway)."""
        params = {"list-type": "2", "max-keys": str(limit)}
        if prefix:
            params["prefix"] = prefix
        if token:
            params["continuation-token"] = token
        elif after is not None:
            params["start-after"] = after
        if encoded:
            params["encoding-type"] = "url"
        resp = await self._send("GET", self.list_path, params, {}, None, "list", url, "")
        if resp.status != 200:
            raise self._error(resp, "list", url, "")
        body = bytes(resp.body)
        try:
            return read_listing(body, encoded, until)
        except xml_reference.Malformed as exc:  # cut off, or not S3's answer: retried
            raise Transient(f"listing answer is not S3 XML ({exc})", op="list", url=url) from None

    async def head(self, key: str, url: str) -> ObjectInfo:
        resp = await self._send("HEAD", self._object_path(key), None, dict(self.read_headers), None, "head", url, key)
        if resp.status != 200:
            raise self._error(resp, "head", url, key)
        h = resp.headers
        try:
            size = int(h["content-length"])
            mtime = http_date_seconds(h["last-modified"]) if "last-modified" in h else None
        except (KeyError, ValueError, TypeError) as exc:
            raise Transient(f"HEAD answer without a usable size ({exc})", op="head", url=url, key=key) from exc
        etag = h.get("etag")
        # the storage class, as a listing names it (S3 leaves it out for STANDARD): archived objects
        # are told apart by it (engine/transfer/archived.py) when a HEAD, not a listing, found the key
        return ObjectInfo(key, size, mtime, etag.strip('"') if etag else None, h.get("x-amz-storage-class"))

    async def checksum(self, key: str, url: str) -> tuple[str, str, str] | None:
        """HEAD with x-amz-checksum-mode: ENABLED: (algorithm, value, type) of the object's checksum."""
        resp = await self._send("HEAD", self._object_path(key), None,
                                {"x-amz-checksum-mode": "ENABLED", **self.read_headers}, None, "head", url, key)
        if resp.status != 200:
            raise self._error(resp, "head", url, key)
        return checksums.from_headers(resp.headers)

    async def get(self, key: str, start: int | None, end: int | None, url: str,
                  into: memoryview | None = None, composite: list[tuple[str, str]] | None = None,
                  if_match: str | None = None) -> bytes | bytearray | memoryview:
        """The object or bytes [start, end) of it; a range is received straight into `into` when given.
        A whole object's COMPOSITE checksum, which needs its parts to check, is put in `composite`."""
        headers: dict[str, str] = dict(self.read_headers)
        if if_match:  # a range of several, or a whole object the listing named: only that version,
            headers["if-match"] = f'"{if_match}"'  # and an answer naming it (check_answer)
        if start is not None and end is not None:  # a range has both ends
            headers["range"] = f"bytes={start}-{end - 1}"
        else:
            headers["x-amz-checksum-mode"] = "ENABLED"
        resp = await self._send("GET", self._object_path(key), None, headers, None, "get", url, key,
                                into if start is not None else None)
        if resp.status not in (200, 206):
            raise self._error(resp, "get", url, key)
        if if_match:
            check_answer(resp.headers.get("etag"), "get", url, key, if_match)
        data = resp.body
        if start is not None and end is not None:
            if resp.status == 200:
                data = data[start:end]  # a server that ignores Range sends it all
            if len(data) != end - start:
                raise Corrupt(f"range returned {len(data)} bytes, expected {end - start}",
                              op="get", url=url, key=key)
            return data
        found = verify_body(data, resp.headers, url, key)
        if found is not None and composite is not None:
            composite.append(found)
        return data

    async def get_to(self, key: str, start: int, end: int, url: str, sink: Any, if_match: str | None = None) -> None:
        """Bytes [start, end) of the object handed to `sink` (a stores/filesink.RangeSink) as they
        arrive; the sink is started over first (a retried read rewrites the range from its start).
        A server that ignores Range (200, the whole object) is cut here and written in one go."""
        headers: dict[str, str] = dict(self.read_headers)
        headers["range"] = f"bytes={start}-{end - 1}"
        if if_match:  # one range of several: only the version the copy reads
            headers["if-match"] = f'"{if_match}"'
        sink.begin()
        resp = await self._send("GET", self._object_path(key), None, headers, None, "get", url, key, sink=sink)
        if resp.status not in (200, 206):
            raise self._error(resp, "get", url, key)
        if if_match:
            check_answer(resp.headers.get("etag"), "get", url, key, if_match)
        if resp.status == 206 and sink.written == end - start and not resp.body:
            return  # the body went to the sink, byte-counted by the client against its Content-Length
        data = resp.body if resp.status == 206 else memoryview(resp.body)[start:end]
        if len(data) != end - start:
            raise Corrupt(f"range returned {len(data)} bytes, expected {end - start}", op="get", url=url, key=key)
        sink.begin()
        sink.write(memoryview(data))

    async def put(self, key: str, data: bytes | bytearray | memoryview | FileBody, url: str,
                  content_type: str | None = None, extra: dict[str, str] | None = None,
                  checksum: str | None = None, with_checksum: bool = True) -> str | None:
        """PutObject; a FileBody is streamed from its file (one pass for its CRC32, one to send: the
        store sends other checksum algorithms' bodies as bytes). Without `with_checksum` no
        checksum header goes (a server that refuses them). Returns the version id the write made
        (a versioned bucket's x-amz-version-id), else None."""
        if not with_checksum:
            headers: dict[str, str] = {}
        elif isinstance(data, FileBody):
            headers = {"x-amz-sdk-checksum-algorithm": "CRC32", "x-amz-checksum-crc32": await data.crc32_b64()}
        elif checksum is None or checksum == "CRC32":
            headers = {"x-amz-sdk-checksum-algorithm": "CRC32", "x-amz-checksum-crc32": crc32_b64(data)}
        else:
            headers = checksum_header(checksum, data)
        if content_type:
            headers["content-type"] = content_type
        if extra:
            headers.update(extra)  # the object's properties (props.py headers)
        resp = await self._send("PUT", self._object_path(key), None, headers, data, "put", url, key)
        if resp.status != 200:  # `headers` as signed: the signer's own names are no checksum's
            raise self._write_error(resp, "put", url, key, headers)
        written.note_headers(resp.headers)  # for --verify (stores/written.py)
        return resp.headers.get("x-amz-version-id")

    async def upload_part(self, key: str, upload_id: str, number: int, data: bytes | bytearray | memoryview,
                          url: str, checksum: bool | str, extra: dict[str, str] | None = None) -> dict[str, Any]:
        """One part; `checksum` names the algorithm its header carries (True: CRC32, False: none)."""
        algorithm = "CRC32" if checksum is True else checksum or None
        headers = checksum_header(algorithm, data) if algorithm else {}
        if extra:
            headers.update(extra)  # SSE-C: every part carries the key
        sent = dict(headers)
        resp = await self._send("PUT", self._object_path(key), {"partNumber": str(number), "uploadId": upload_id},
                                headers, data, "upload part", url, key)
        if resp.status != 200:
            raise self._write_error(resp, "upload part", url, key, sent)
        part = {"PartNumber": number, "ETag": resp.headers.get("etag", "")}
        if algorithm:
            name = checksums.header(algorithm)
            part[checksums.field(algorithm)] = resp.headers.get(name) or headers[name]
        return part

    # ------------------------------------------------------------ multipart control

    async def create_multipart(self, key: str, url: str, headers: dict[str, str]) -> str:
        """CreateMultipartUpload with these request headers (the object's properties and checksum
        settings, as botocore sends them): the upload id. A 200 whose body is an error, or holds
        no UploadId, is an error (a 500, retried, as botocore reads it)."""
        sent = dict(headers)
        resp = await self._send("POST", self._object_path(key), {"uploads": ""}, headers, b"",
                                "create multipart upload", url, key, payload_hash=EMPTY_SHA256)
        body = bytes(resp.body) if resp.body else b""
        if resp.status == 200 and multipart_xml.error_in_200(body):
            resp = resp._replace(status=500)
        if resp.status != 200:
            raise self._write_error(resp, "create multipart upload", url, key, sent)
        try:
            found = multipart_xml.upload_id(body)
        except ValueError as exc:  # not the answer's XML (xml_reference.Malformed)
            raise Transient(f"CreateMultipartUpload answer is not S3 XML ({exc})", op="create multipart upload",
                            url=url, key=key) from None
        if found is None:
            raise Transient("CreateMultipartUpload answer has no UploadId", op="create multipart upload",
                            url=url, key=key)
        return found

    async def complete_multipart(self, key: str, upload_id: str, parts: list[dict[str, Any]], url: str,
                                 headers: dict[str, str]) -> str | None:
        """CompleteMultipartUpload of `parts` ({"PartNumber", "ETag", "Checksum...": ...}, in
        order): the version id it made in a versioned bucket, else None. S3 answers 200 before it
        has finished and may then put an <Error> in the body: that is an error (a 500, retried,
        as botocore reads it)."""
        body = multipart_xml.complete_body(parts)
        resp = await self._send("POST", self._object_path(key), {"uploadId": upload_id}, headers, body,
                                "complete multipart upload", url, key,
                                payload_hash=hashlib.sha256(body).hexdigest())
        if resp.status == 200 and multipart_xml.error_in_200(bytes(resp.body) if resp.body else b""):
            resp = resp._replace(status=500)
        if resp.status != 200:
            raise self._error(resp, "complete multipart upload", url, key)
        if written.WRITTEN.get() is not None:  # for --verify (stores/written.py): the ETag is in the XML
            written.note_headers(resp.headers, multipart_xml.answered_etag(bytes(resp.body or b"")))
        return resp.headers.get("x-amz-version-id")

    async def abort_multipart(self, key: str, upload_id: str, url: str) -> None:
        """AbortMultipartUpload (204; NoSuchUpload is NotFound, as botocore's answer maps)."""
        resp = await self._send("DELETE", self._object_path(key), {"uploadId": upload_id}, {}, None,
                                "abort multipart upload", url, key, payload_hash=EMPTY_SHA256)
        if resp.status not in (200, 204):
            raise self._error(resp, "abort multipart upload", url, key)

    async def copy(self, src_bucket: str, src_key: str, key: str, url: str,
                   extra: dict[str, str] | None = None, checksum: str | None = None,
                   if_match: str | None = None) -> None:
        headers = {"x-amz-copy-source": f"{src_bucket}/{uri_encode(src_key, keep_slash=True)}",
                   **copy_source_if_match_header(if_match)}  # the version the run listed (412 otherwise)
        if extra:
            headers.update(extra)  # directives and the new properties (props.py headers)
        if checksum:  # the server computes the copy's checksum with this algorithm
            headers["x-amz-checksum-algorithm"] = checksum
        resp = await self._send("PUT", self._object_path(key), None, headers, None, "copy", url, key)
        # CopyObject can fail after answering 200: the error is then in the body (or it is cut off)
        if resp.status != 200 or multipart_xml.error_in_200(bytes(resp.body)):
            raise self._error(resp if resp.status != 200 else resp._replace(status=500), "copy", url, key)
        if written.WRITTEN.get() is not None:  # for --verify (stores/written.py): the ETag is in the XML
            written.note_headers(resp.headers, multipart_xml.answered_etag(bytes(resp.body or b"")))

    async def object_parts(self, key: str, url: str, marker: int
                           ) -> tuple[list[tuple[int, int, str]], int | None] | None:
        """One page of GetObjectAttributes (ObjectParts): (parts as (number, size, base64 checksum),
        the next part-number marker when truncated). None when the server does not answer it with
        the parts' checksums (501, 400, 403, 405, or no ObjectParts: versitygw)."""
        headers = {"x-amz-object-attributes": "ObjectParts", "x-amz-max-parts": "1000"}
        if marker:
            headers["x-amz-part-number-marker"] = str(marker)
        resp = await self._send("GET", self._object_path(key), {"attributes": ""}, headers, None,
                                "get object attributes", url, key)
        if resp.status in (400, 403, 405, 501):
            return None
        if resp.status != 200:
            raise self._error(resp, "get object attributes", url, key)
        try:
            return parse_object_parts(bytes(resp.body))
        except ValueError as exc:  # cut off, not XML (xml_reference.Malformed): retried
            raise Transient(f"GetObjectAttributes answer is not S3 XML ({exc})", op="get object attributes",
                            url=url, key=key) from None

    # ------------------------------------------------------------ with the object's properties

    async def head_headers(self, key: str, url: str) -> dict[str, str]:
        """A HEAD's answer headers (lower-case names): the object's properties (props.py from_headers)."""
        resp = await self._send("HEAD", self._object_path(key), None, dict(self.read_headers), None, "head", url, key)
        if resp.status != 200:
            raise self._error(resp, "head", url, key)
        return dict(resp.headers)

    async def get_with_headers(self, key: str, url: str, if_match: str | None = None
                               ) -> tuple[bytes | bytearray | memoryview, dict[str, str], tuple[str, str] | None]:
        """The whole object, its answer's headers (the client's dict, not a copy: read, never kept)
        and the composite checksum the answer names, for the store to check against the parts
        (verify_body), in the one GET a download makes anyway. A download's hot path.

        A read held to an ETag (`if_match`) is first asked without If-Match: the answer of a whole
        object names the ETag of the very bytes it carries, so its check holds the read to the
        listed version as well. Only an answer naming another ETag is asked again with If-Match,
        whose 412 tells an object changed since the listing (SourceChanged, restarted as before)
        from an answer that was not this request's (Transient, retried). Why: If-Match on every
        small GET of a mirror cost versitygw ~3% and toxiproxy ~6% more CPU per object (the
        header read, signed and checked; bench/README "Sync down: what differs on the wire");
        a read in ranges keeps it on every request (its ranges must be of one version)."""
        held: dict[str, str] = {}  # {"if-match": ...} once an answer named another ETag
        while True:
            # (a new dict each time: _send signs it in place)
            headers = {"x-amz-checksum-mode": "ENABLED", **self.read_headers, **held}
            resp = await self._send("GET", self._object_path(key), None, headers, None, "get", url, key)
            if resp.status != 200:
                raise self._error(resp, "get", url, key)  # with If-Match, 412: SourceChanged
            if if_match:  # a read held to a version: the usual answer names it (quoted), else looked at closely
                etag = resp.headers.get("etag")
                if etag is None or if_match not in etag:
                    try:
                        check_answer(etag, "get", url, key, if_match)
                    except Transient:
                        if held:
                            raise  # held to the version and still another's answer: retried as before
                        held = {"if-match": f'"{if_match}"'}
                        continue
            return resp.body, resp.headers, verify_body(resp.body, resp.headers, url, key)

    async def get_small(self, key: str, url: str, most: int
                        ) -> tuple[ObjectInfo, bytes | bytearray | memoryview | None, dict[str, str],
                                   tuple[str, str] | None] | None:
        """One GET that finds the object and, when it is at most `most` bytes, reads it whole (its
        checksum checked as get_with_headers checks it): (what the answer says of it: size, ETag,
        time, storage class; the body, or None for a longer object, whose body is not read: the
        connection is dropped after the head; the answer's headers, a longer object's too: they
        tell what a HEAD would; the composite checksum to check). None where a body cannot be
        refused (no sink on Windows)."""
        if sys.platform == "win32":
            return None
        headers = {"x-amz-checksum-mode": "ENABLED", **self.read_headers}
        longer = _Longer(most)
        try:
            resp = await self._send("GET", self._object_path(key), None, headers, None, "get", url, key, sink=longer)
        except BodyRefused:
            counted = (WIRE_OPS.get("get", "get"), STATUS_CLASS[2])
            self.requests[counted] = self.requests.get(counted, 0) + 1
            return _answered(key, longer.length, longer.headers, url), None, longer.headers, None
        if resp.status != 200:
            raise self._error(resp, "get", url, key)
        h = resp.headers
        return _answered(key, len(resp.body), h, url), resp.body, h, verify_body(resp.body, h, url, key)

    async def get_tagging(self, key: str, url: str) -> list[tuple[str, str]]:
        """GetObjectTagging's (key, value) pairs: asked only of objects whose answer counted tags,
        on this path so that carrying them needs no botocore client in the worker."""
        resp = await self._send("GET", self._object_path(key), {"tagging": ""}, {}, None, "get tagging", url, key)
        if resp.status == 501:
            return []  # a server without tagging (s3proxy: 501 NotImplemented) keeps no tags
        if resp.status != 200:
            raise self._error(resp, "get tagging", url, key)
        try:
            return read_tags(bytes(resp.body))
        except ValueError as exc:  # xml_reference.Malformed among them
            raise Transient(f"tagging answer is not S3 XML ({exc})", op="get tagging", url=url, key=key) from None
