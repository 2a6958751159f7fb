"""The plain list/get HTTP contract (a paged /list and /get/{name}), as a read-only store.

    GET /list[?next-marker=TOKEN] -> {"FileNames": [...], "NextMarker": "TOKEN"}  (no NextMarker on the last page)
    GET /get/{name}               -> the bytes (404 if there is none); HEAD and Range where the server has them

Pages can only be walked one after another and the token is opaque, so this store is not
`ordered`: its work units are page tokens, handed to the next worker as soon as a page arrives.
Names carry no sizes; the engine learns a size from the GET itself (`read_first`).
"""

from __future__ import annotations

import json
from urllib.parse import quote, urlsplit

from ..errors import Corrupt, NotFound, StoreError, Throttled, Transient, from_transport
from ..errors import MalformedListing
from ..http.client import HttpClient, HttpError, Response, proxy_for, retry_after
from ..model import ObjectInfo, Page, WorkUnit
from ..config.urls import Location
from .base import WHOLE, Features, GetOptions, GetResult, LevelLister, LevelPage, Store, Traits, Unsupported, range_result
from .features import features_of
from .requests import ERROR, STATUS_CLASS, WIRE_OPS, Counts


class ListGetStore(Store, LevelLister):
    ordered = False
    traits = Traits(ordered=False)  # read-only, token-paged, no mtimes, no hashes

    def __init__(self, location: Location, *, max_connections: int = 64, timeout: float = 60.0) -> None:
        self.location = location
        self.features: Features = features_of(self, self.traits)
        parts = urlsplit(location.root)
        if parts.scheme != "http":
            from ..errors import UsageError

            raise UsageError("only plain http:// list/get servers are supported")
        self.base_path = parts.path.rstrip("/")
        proxy = proxy_for(location.root)  # HTTP_PROXY/NO_PROXY, as for S3 endpoints
        if proxy is not None and not proxy.lower().startswith("http://"):
            from ..errors import UsageError

            raise UsageError(f"only http:// proxies are supported for list/get servers (HTTP_PROXY is {proxy.split('@')[-1]})")
        self.client = HttpClient(parts.hostname or "127.0.0.1", parts.port or 80,
                                 max_connections=max_connections, timeout=timeout, proxy=proxy)
        self.requests: Counts = {}  # by (operation, status class): stores/requests.py

    async def close(self) -> None:
        await self.client.close()

    async def _request(self, method: str, target: str, op: str, key: str = "",
                       headers: dict[str, str] | None = None) -> Response:
        """One request. Transport failures (errors.from_transport), 429/503 (Throttled, with the
        server's Retry-After) and other 5xx (Transient) are retried by the resilient wrapper
        (open_store) with backoff, as for every store."""
        url = f"{self.location.root}{target}"
        counts = self.requests
        try:
            resp = await self.client.request(method, self.base_path + target, headers)
        except HttpError as exc:
            counted = (WIRE_OPS.get(op, op), ERROR)
            counts[counted] = counts.get(counted, 0) + 1
            raise from_transport(exc, op=op, url=url, key=key) from exc
        counted = (WIRE_OPS.get(op, op), STATUS_CLASS.get(resp.status // 100, ERROR))
        counts[counted] = counts.get(counted, 0) + 1
        if resp.status in (429, 503):
            raise Throttled(f"server busy ({resp.status})", op=op, url=url, key=key,
                            retry_after=retry_after(resp.headers))
        if resp.status >= 500:
            raise Transient(f"server error {resp.status}", op=op, url=url, key=key)
        return resp

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        target = "/list" if unit.token is None else f"/list?next-marker={quote(unit.token, safe='')}"
        where = "the first page" if unit.token is None else f"token {unit.token!r}"
        resp = await self._request("GET", target, "list")
        if resp.status != 200:
            raise _status_error(resp.status, "list", self.location.root + target,
                                f"/list answered {resp.status} at {where}")
        try:
            doc = json.loads(resp.body)
            names = doc["FileNames"]
            token = doc.get("NextMarker")
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise TypeError("FileNames is not a list of strings")
            if token is not None and not isinstance(token, str):
                raise TypeError("NextMarker is not a string")
        except (ValueError, KeyError, TypeError) as exc:
            raise MalformedListing(f"malformed /list answer at {where}: {_why(exc)}",
                                   op="list", url=self.location.root + target) from None
        if token == "":
            token = None
        entries = [ObjectInfo(n) for n in names if n.startswith(prefix)] if prefix else [ObjectInfo(n) for n in names]
        return Page(entries, next_token=token)

    async def list_level(self, prefix: str, token: str | None, limit: int) -> LevelPage:
        """The server has no prefix or delimiter, and its pages come in no order: one level is its
        whole /list, every page, names under `prefix` collapsed at their next "/" and sorted, in
        one page (a retry lists it again from the start)."""
        entries: dict[str, ObjectInfo] = {}
        prefixes: set[str] = set()
        n = len(prefix)
        unit, seen = WorkUnit(), set()
        while True:
            page = await self.list_page(prefix, unit, limit)
            for e in page.entries:
                cut = e.key.find("/", n)
                if cut < 0:
                    entries[e.key] = e
                else:
                    prefixes.add(e.key[:cut + 1])
            if page.next_token is None:
                return LevelPage([entries[k] for k in sorted(entries)], sorted(prefixes))
            if page.next_token in seen:
                raise MalformedListing(f"/list tokens loop: token {page.next_token!r} came again",
                                       op="list", url=self.location.root + "/list")
            seen.add(page.next_token)
            unit = WorkUnit(token=page.next_token)

    def _target(self, key: str) -> str:
        return "/get/" + quote(key, safe="/")

    async def head(self, key: str) -> ObjectInfo:
        resp = await self._request("HEAD", self._target(key), "head", key)
        if resp.status != 200:
            raise _status_error(resp.status, "head", self.location.url_for(key), key=key)
        try:
            return ObjectInfo(key, int(resp.headers["content-length"]))
        except (KeyError, ValueError):
            raise Corrupt("HEAD answer has no Content-Length", op="head",
                          url=self.location.url_for(key), key=key) from None

    async def get(self, key: str, opts: GetOptions = WHOLE) -> GetResult:
        """No ETags, versions or properties here: a plain GET, or a Range; a buffer or a sink is
        filled from the answer's body, copied once."""
        if opts.first is not None:
            data, size = await self._read_first(key, opts.first)
            return GetResult(data, size)
        if opts.version_id is not None or opts.with_props:
            raise Unsupported("a list/get server keeps no versions or properties", op="get",
                              url=self.location.url_for(key), key=key)
        rng = opts.range
        if rng is None:
            data = await self._read(key)
            return GetResult(data, len(data))
        return range_result(await self._read(key, rng[0], rng[1]), opts)

    async def _read(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        headers = None
        if start is not None:
            assert end is not None  # a range has both ends
            if end <= start:
                return b""
            headers = {"Range": f"bytes={start}-{end - 1}"}
        resp = await self._request("GET", self._target(key), "get", key, headers)
        if resp.status not in (200, 206):
            raise _status_error(resp.status, "get", self.location.url_for(key), key=key)
        body = resp.body
        if start is not None and end is not None:
            if resp.status == 200:  # the server ignored the Range: cut it ourselves
                body = body[start:end]
            if len(body) != end - start:
                raise Corrupt(f"range returned {len(body)} bytes, expected {end - start}",
                              op="get", url=self.location.url_for(key), key=key)
        return body

    async def _read_first(self, key: str, limit: int) -> tuple[bytes, int]:
        """Up to `limit` first bytes and the object's total size, in one request."""
        resp = await self._request("GET", self._target(key), "get", key, {"Range": f"bytes=0-{max(limit, 1) - 1}"})
        if resp.status == 416:  # empty object: no byte range is satisfiable
            return b"", 0
        if resp.status == 206:
            total = resp.headers.get("content-range", "").rpartition("/")[2]
            if total.isdigit():
                return resp.body, int(total)
            raise Corrupt("206 answer without a usable Content-Range", op="get",
                          url=self.location.url_for(key), key=key)
        if resp.status == 200:
            return resp.body, len(resp.body)
        raise _status_error(resp.status, "get", self.location.url_for(key), key=key)


def _status_error(status: int, op: str, url: str, message: str = "", key: str = "") -> StoreError:
    if status == 404:
        return NotFound(message or "no such file (404)", op=op, url=url, key=key)
    if status in (401, 403):
        from ..errors import AccessDenied

        return AccessDenied(message or f"access denied ({status})", op=op, url=url, key=key)
    return StoreError(message or f"unexpected HTTP status {status}", op=op, url=url, key=key)


def _why(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r} field"
    if isinstance(exc, json.JSONDecodeError):
        return "not JSON"
    return str(exc)
