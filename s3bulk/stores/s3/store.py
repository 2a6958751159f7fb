"""S3 (and any S3-compatible endpoint): the lean data path (wire.py) and aiobotocore.

botocore gives us the whole credential chain (env, config and credentials files,
profiles, SSO, assume-role, instance metadata), endpoint settings
(AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3, config files: resolved once per run, where it starts, into
the location's S3Settings, which every client here is then built from; setup.py settle), the control plane (deletes,
listing parts and uploads, versions, UploadPartCopy) and the fallback data path. A multipart upload (create, parts,
complete, abort) goes on the lean path like a PUT, so an upload in parts loads no botocore either. Its exceptions are translated
into s3bulk.errors by errors.py beside this module and nowhere else. aiobotocore (and aiohttp under it) is imported and
its client built only when a request needs it: a lean-path run whose credentials come from the
environment and whose bucket address is cached (setup.py) never loads it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from typing import Any, Awaitable, Callable, Sequence, TypeVar

from ...errors import (AccessDenied, BucketMissing, ConnectFailed, Corrupt, DestinationUnusable, NotFound,
                       S3BulkError, StoreError, Throttled, Transient, UsageError)
from ...model import ObjectInfo, ObjectProps, Page, WorkUnit
from ...config.urls import Location
from ..base import (COPY_UPLOAD_OPENED, WHOLE, ChecksumReader, Features, GetOptions, GetResult, LevelLister, ObjectHead, LevelPage, ObjectChecksum, ObjectVersion, OpenUpload, PartInfo,
                    PartSizeReader, PropsReader, ResumableUploads, ServerSideCopier, Store, StreamedBody,
                    StreamedPutter, Traits, VersionedStore, VersionPage, Writer, abort_confirmed, part_request,
                    part_size_for, upload_in_parts)
from ..features import features_of
from ..files.bodies import FileBody
from ..content_types import content_type_for
from ..conditions import NO_CLOBBER, if_none_match_header, if_none_match_param
from .. import checksums, file_times, written  # file_times, checksums: a download's hot path imports nothing
from ...http import requestlog
from .pages import botocore_entries, check_token, checked_page
from .errors import NO_CREDENTIALS, not_implemented, short_text, translate
from .wire import ChecksumRefused, UseBotocore, refuses_checksums
from . import props as s3props

T = TypeVar("T")
_NO_WIRE: Any = object()  # what _on_wire returns when the request must go through botocore

COPY_OBJECT_LIMIT = 5 * 1024**3  # CopyObject refuses sources above 5 GiB

_CHECKSUM_FIELDS = ("ChecksumCRC32", "ChecksumCRC32C", "ChecksumCRC64NVME", "ChecksumSHA1", "ChecksumSHA256")
# CreateMultipartUpload's checksum parameters (_multipart_checksum) as the lean path sends them
_CHECKSUM_HEADERS = {"ChecksumAlgorithm": "x-amz-checksum-algorithm", "ChecksumType": "x-amz-checksum-type"}


class S3Store(Writer, ResumableUploads, ServerSideCopier, PartSizeReader,
              ChecksumReader, VersionedStore, PropsReader, StreamedPutter, LevelLister):
    """One bucket on one endpoint, with one aiobotocore client per event loop."""

    ordered = True
    # LastModified has whole seconds and is the upload time (no mtime is kept); ETags are S3's
    traits = Traits(ordered=True, read_into=True, read_to=True, keeps_mtime=False, mtime_precision=1.0, hashes=frozenset({"s3-etag"}), props="s3",
                    conditional_reads=True, conditional_writes=True)

    def __init__(self, location: Location, *, max_connections: int = 64,
                 copy_threshold: int = COPY_OBJECT_LIMIT, copy_part_size: int = 512 * 1024**2,
                 copy_concurrency: int = 8, lean: bool = True, timeout: float = 60.0,
                 request_payer: str | None = None, checksum_algorithm: str | None = None) -> None:
        self.location = location
        self.checksum_algorithm = checksum_algorithm  # --checksum-algorithm: on every PUT and part
        self.bucket = location.bucket
        self._max_connections = max_connections
        self._copy_threshold = copy_threshold
        self._copy_part_size = copy_part_size
        self._copy_concurrency = copy_concurrency
        self._stack = contextlib.AsyncExitStack()
        self._client: Any = None
        self._lean = lean
        self._timeout = timeout
        self._request_payer = request_payer  # x-amz-request-payer on every request, both data paths
        self._wire: Any = None  # wire.py's S3Wire once open, unless the lean path is off or cannot serve
        # requests sent on either path, by (operation, status class): stores/requests.py
        self.requests: dict[tuple[str, str], int] = {}
        self._no_parts = False  # GetObjectAttributes gave no part checksums: not asked again (object_parts)
        self._checksums_refused = False  # the server refused a checksum header: writes go without (_without_checksums)
        self._conditions_refused = False  # the server refused If-None-Match: --no-clobber asks with a HEAD (_no_clobber)
        self._client_lock: asyncio.Lock | None = None
        self._cred_source: Any = None  # async () -> sigv4.Credentials | None; None: unsigned
        self._frozen: Any = None
        self._frozen_at = 0.0
        self._ca_bundle: str | None = None
        self.settings: Any = location.s3.settled  # urls.S3Settings, resolved at the latest in open()
        self.identity: tuple[str, str] | None = None  # (endpoint, access key id): who we are, for copy
        # set to a dict to learn the version id each PutObject or CompleteMultipartUpload made in a
        # versioned bucket, by key (engine/actions/versions.py: what tells, after a kill, whether a version landed)
        self.written_versions: dict[str, str] | None = None
        # SSE-C: objects here are read with this customer key (every GET and HEAD, and as the copy
        # source of a server-side copy); their ETags are then no MD5 of the bytes, so none is declared
        self._read_key: bytes | None = location.s3.sse_c_key
        if self._read_key is not None:
            from dataclasses import replace

            self.traits = replace(S3Store.traits, hashes=frozenset())
        self.features: Features = features_of(self, self.traits)

    async def open(self) -> "S3Store":
        """Ready the store. On the lean path nothing of aiobotocore is built here when the bucket's
        address is known from an earlier run (setup.py); the botocore client is made on first
        need (_control)."""
        opts = self.location.s3
        try:
            # every setting of this side, resolved once where the run started (the plan carries
            # them) or here when nothing did: never this process's environment over the run's
            from dataclasses import replace

            from .setup import settle

            opts = settle(opts)
            self.location = replace(self.location, s3=opts)
            self.settings = opts.settled
            if self._lean and not (self.bucket.startswith("arn:") or self.bucket.endswith("--x-s3")):
                await self._open_lean()
            else:  # the botocore data path; access points and directory buckets: botocore knows their rules
                client = await self._control()
                access = (await self._credentials()).access_key if self._cred_source is not None else ""
                self.identity = (client.meta.endpoint_url, access)
        except (StoreError, UsageError):
            await self._stack.aclose()
            raise
        except Exception as exc:
            await self._stack.aclose()
            raise _open_error(exc, opts.profile, f"s3://{self.bucket}") from exc
        return self

    async def _open_lean(self) -> None:
        """Credentials and the bucket's address for the lean path, with botocore only as far as needed."""
        from . import setup as s3setup
        from .wire import S3Wire

        opts = self.location.s3
        chain = None
        if not opts.no_sign_request:
            static = s3setup.env_credentials(opts) or s3setup.profile_credentials(opts)
            if static is not None:
                self._cred_source = _static_credentials(static)
            else:
                chain = s3setup.BotocoreCredentials(opts.profile)
                if await chain.resolve():
                    self._cred_source = chain.frozen
            if self._cred_source is None:  # as botocore says when it has nothing to sign with
                raise AccessDenied(NO_CREDENTIALS, op="connect", url=f"s3://{self.bucket}")
        access = (await self._credentials()).access_key if self._cred_source is not None else ""
        # the address: written without botocore where its rules are plain, else remembered from
        # an earlier run, else botocore's (kept for the next run)
        key = None
        resolved = s3setup.plain_address(self.bucket, self.settings)
        fresh = False
        if resolved is None:
            key = s3setup.cache_key(self.bucket, opts)
            resolved = s3setup.lookup(key)
            fresh = resolved is None
        if resolved is None:
            resolved = self._resolve(chain.session if chain is not None else None)
        if resolved is None:
            client = await self._control()  # an address the lean path does not take: botocore serves all
            self.identity = (client.meta.endpoint_url, access)
            return
        self.identity = (resolved.endpoint_url, access)
        settings = self.settings
        self._ca_bundle = settings.ca_bundle
        try:
            self._wire = S3Wire(resolved.wire_url(), resolved.region,
                                self._credentials if self._cred_source is not None else _no_credentials,
                                bucket=self.bucket, max_connections=self._max_connections,
                                timeout=self._timeout, verify=settings.ca_bundle or True,
                                proxy=s3setup.proxy_for(settings, resolved.object_url),
                                request_payer=self._request_payer, sse_c_key=self._read_key,
                                requests=self.requests)
        except UseBotocore:
            if key is not None:
                s3setup.forget(key)
            client = await self._control()  # every request goes through botocore: have it ready, as before
            self.identity = (client.meta.endpoint_url, access)
            return
        if fresh and key is not None:
            s3setup.remember(key, resolved)

    def _resolve(self, session: Any = None) -> Any:
        """The address botocore resolves for this bucket: a presigned URL runs the whole endpoint
        ruleset (custom endpoints, path or virtual-host style, FIPS, dual-stack). A plain botocore
        client makes it (no aiohttp), with placeholder keys: only the address and the signing region
        are kept, and no credential chain runs twice. None when the lean path cannot take it."""
        from urllib.parse import parse_qs, urlsplit

        import botocore.session
        from botocore.config import Config

        from . import setup as s3setup

        opts = self.location.s3
        settings = self.settings
        if session is None:
            session = botocore.session.Session(profile=opts.profile)
        session.register_component("data_loader", _shared_loader(session.get_config_variable("data_path")))
        s3setup.pin(session, settings)
        client = session.create_client("s3", **s3setup.client_args(settings),
                                       config=Config(**s3setup.config_args(settings)),
                                       aws_access_key_id="presign-only", aws_secret_access_key="presign-only")
        url = client.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "k"}, ExpiresIn=60)
        parts = urlsplit(url)
        if not parts.path.endswith("/k") or parts.scheme not in ("http", "https"):
            return None
        scope = parse_qs(parts.query).get("X-Amz-Credential", [""])[0].split("/")
        return s3setup.Resolved(endpoint_url=client.meta.endpoint_url, region=client.meta.region_name,
                                object_url=f"{parts.scheme}://{parts.netloc}{parts.path}",
                                signing_region=scope[2] if len(scope) >= 4 else None,
                                ca_bundle=settings.ca_bundle)

    async def _control(self) -> Any:
        """The aiobotocore client (control plane, the botocore data path, fallbacks): imported and
        built on first need, once per store."""
        if self._client is not None:
            return self._client
        if self._client_lock is None:
            self._client_lock = asyncio.Lock()
        async with self._client_lock:
            if self._client is None:
                self._client = await self._create_client()
        return self._client

    async def _create_client(self) -> Any:
        from aiobotocore.config import AioConfig
        from aiobotocore.session import AioSession

        from . import setup as s3setup

        opts = self.location.s3
        settings = self.settings
        session = AioSession(profile=opts.profile)
        session.register_component("data_loader", _shared_loader(session.get_config_variable("data_path")))
        s3setup.pin(session, settings)
        self._ca_bundle = settings.ca_bundle
        kwargs: dict[str, Any] = dict(
            max_pool_connections=self._max_connections,
            # retries are the engine's (stores/resilient.py), the same for both data paths: one
            # attempt per call. (botocore's "max_attempts" counts retries, not attempts: 1 there
            # was a second, uncounted try inside each of ours that ignored Retry-After.)
            retries={"mode": "standard", "total_max_attempts": 1},
            connect_timeout=10,
            read_timeout=self._timeout,
            tcp_keepalive=True,
            http_session_cls=_head_bound_session(),
            **s3setup.config_args(settings),
        )
        config = AioConfig(**kwargs)
        client = await self._stack.enter_async_context(session.create_client(
            "s3", **s3setup.client_args(settings), config=config))
        # List keys as they are. botocore would ask for url-encoded keys on every listing, but some
        # servers (LocalStack) then compare StartAfter and continuation tokens against the *encoded*
        # keys, whose order is not the key order: a listing resumed after "ü" starts over. We ask
        # for encoding only when a page cannot be parsed (keys with XML-invalid characters).
        from botocore.handlers import set_list_objects_encoding_type_url

        client.meta.events.unregister("before-parameter-build.s3.ListObjectsV2",
                                      set_list_objects_encoding_type_url)
        _refuse_redirects(client)
        client.meta.events.register("before-call.s3", self._drop_refused_checksums)
        client.meta.events.register("response-received.s3", self._count_request)
        log = requestlog.current()
        if log is not None:  # --log-requests: botocore's requests too (http/requestlog.py)
            log.hook(client.meta.events)
        if self._request_payer:
            _add_request_payer(client, self._request_payer)
        if self._cred_source is None and not settings.no_sign_request:
            creds = await session.get_credentials()
            if creds is not None:
                self._cred_source = _aio_credentials(creds)
        return client

    def _count_request(self, response_dict: Any = None, exception: Any = None, context: Any = None,
                       event_name: str = "", **kwargs: Any) -> None:
        """botocore's `response-received` (once per HTTP attempt, answered or not): one more
        request of this operation and status class (stores/requests.py)."""
        from ..requests import botocore_op, status_class

        status = response_dict.get("status_code") if response_dict is not None else None
        key = (botocore_op(event_name.rsplit(".", 1)[-1]), status_class(status))
        self.requests[key] = self.requests.get(key, 0) + 1

    async def _credentials(self) -> Any:
        """Frozen credentials, asked of their source again every minute (botocore refreshes expiring ones)."""
        now = time.monotonic()
        if self._frozen is None or now - self._frozen_at > 60:
            self._frozen = await self._cred_source()
            self._frozen_at = now
        return self._frozen

    async def _on_wire(self, call: Callable[[Any], Awaitable[T]]) -> T:
        """call(wire) on the lean path, or _NO_WIRE when it is off or hands this request (and from
        then on every request) to botocore."""
        wire = self._wire
        if wire is None:
            return _NO_WIRE
        try:
            return await call(wire)
        except UseBotocore:
            self._drop_wire()
            return _NO_WIRE

    def _drop_wire(self) -> None:
        """Something only botocore handles came up: use it for the rest of the run."""
        wire, self._wire = self._wire, None
        if wire is not None:
            asyncio.ensure_future(wire.close())

    async def close(self) -> None:
        if self._wire is not None:
            await self._wire.close()
        await self._stack.aclose()

    def _url(self, key: str = "") -> str:
        return f"s3://{self.bucket}/{key}"

    # ---------------------------------------------------------------- listing

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        # a bounded range is asked for under the prefix all its keys share: the server's page then
        # ends near the range's end instead of running on past it
        narrowed = unit.shared_prefix(prefix)
        page = await self._list_page(narrowed, unit, limit)
        if narrowed != prefix and page.next_token is not None:
            # an empty page that goes on holds a token for the narrowed request; the unit's next
            # request would not be asked under that prefix: ask this one again as it was
            page = await self._list_page(prefix, unit, limit)
        # empty pages that go on are followed here, each token once, a bounded number in a row
        # (pages.py): a server whose tokens loop or never end is refused, not listed forever
        seen: set[str] = set()
        empties = 0
        while not page.entries and page.next_token is not None:
            empties += 1
            check_token(page.next_token, seen, empties, self._url(prefix))
            unit = WorkUnit(after=unit.after, until=unit.until, token=page.next_token, seq=unit.seq)
            page = await self._list_page(prefix, unit, limit)
        return page

    async def _list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
        async def lean(wire: Any) -> Page:
            url = self._url(prefix)
            try:
                rows, truncated, token = await wire.list_page(prefix, unit.after, unit.token, limit, False, url,
                                                              unit.until)
            except Transient:
                # some servers fail with a 5xx on keys XML cannot carry: ask for url-encoded keys
                rows, truncated, token = await wire.list_page(prefix, unit.after, unit.token, limit, True, url,
                                                              unit.until)
            return checked_page(rows, unit.after, unit.until, truncated, token, self._url(prefix))

        page = await self._on_wire(lean)
        if page is not _NO_WIRE:
            return page
        params: dict[str, Any] = {"Bucket": self.bucket, "MaxKeys": limit}
        if prefix:
            params["Prefix"] = prefix
        if unit.token:
            params["ContinuationToken"] = unit.token
        elif unit.after is not None:
            params["StartAfter"] = unit.after
        encoded = False
        try:
            try:
                resp = await (await self._control()).list_objects_v2(**params)
            except Exception as exc:
                # a key the XML cannot carry makes the page unparseable (or some servers fail with a
                # 5xx): ask once more with url-encoded keys
                if type(exc).__name__ not in ("ResponseParserError", "ParseError") and \
                        not isinstance(translate(exc, "list", ""), Transient):
                    raise
                encoded = True
                resp = await (await self._control()).list_objects_v2(EncodingType="url", **params)
        except Exception as exc:
            raise translate(exc, "list", self._url(prefix)) from exc
        if not encoded and resp.get("Prefix", prefix) not in (prefix, None):  # S3 echoes the request's prefix: another request's answer
            raise Transient(f"a listing answer for prefix {resp.get('Prefix')!r}, not {prefix!r}", op="list",
                            url=self._url(prefix))
        entries = botocore_entries(resp.get("Contents", ()), encoded)
        return checked_page(entries, unit.after, unit.until, bool(resp.get("IsTruncated")),
                            resp.get("NextContinuationToken"), self._url(prefix))

    async def list_level(self, prefix: str, token: str | None, limit: int) -> LevelPage:
        """ListObjectsV2 with delimiter "/" (levels.py), on the lean path where it serves."""
        from . import levels

        url = self._url(prefix)
        page = await self._on_wire(lambda wire: levels.lean_level(wire, prefix, token, limit, url))
        if page is not _NO_WIRE:
            return page
        try:
            return await levels.botocore_level(await self._control(), self.bucket, prefix, token, limit, url)
        except S3BulkError:
            raise
        except Exception as exc:
            raise translate(exc, "list", url) from exc

    # ---------------------------------------------------------------- reading

    async def head(self, key: str) -> ObjectInfo:
        info = await self._on_wire(lambda wire: wire.head(key, self._url(key)))
        if info is not _NO_WIRE:
            return info
        try:
            resp = await (await self._control()).head_object(Bucket=self.bucket, Key=key, **self._read_params())
        except Exception as exc:
            raise translate(exc, "head", self._url(key), key) from exc
        etag = resp.get("ETag")
        return ObjectInfo(key, resp["ContentLength"], resp["LastModified"].timestamp(),
                          etag.strip('"') if etag else None, resp.get("StorageClass"))

    async def read_props(self, key: str) -> ObjectProps:
        """HEAD: the object's properties (tags only counted)."""
        from . import props as s3props

        h = await self._on_wire(lambda wire: wire.head_headers(key, self._url(key)))
        if h is not _NO_WIRE:
            return s3props.from_headers(h)
        try:
            resp = await (await self._control()).head_object(Bucket=self.bucket, Key=key, **self._read_params())
        except Exception as exc:
            raise translate(exc, "head", self._url(key), key) from exc
        return s3props.from_botocore(resp)

    async def get(self, key: str, opts: GetOptions = WHOLE) -> GetResult:
        """One GET as `opts` asks, on the lean path where it serves, else through botocore: a
        whole plain read (WHOLE) goes straight to _read, the lean path's GET."""
        if opts is WHOLE:
            data = await self._read(key)
            return GetResult(data, len(data))
        if_match = opts.if_match
        if opts.first is not None:
            data, size = await self._read_first(key, opts.first)
            return GetResult(data, size)
        if opts.version_id is not None:
            start, end = opts.range if opts.range is not None else (None, None)
            return GetResult(await self._read_version(key, opts.version_id, start, end, if_match))
        rng = opts.range
        if rng is None:
            if opts.with_props:
                data, props = await self._read_with_props(key, if_match)
                return GetResult(data, len(data), props, file_times.stored_mtime(props.metadata))
            if opts.with_mtime:
                wire = self._wire
                if wire is None:
                    data, mtime = await self._read_with_mtime(key, if_match)
                    return GetResult(data, len(data), None, mtime)
                # a download's hot path (a small object held to the listing's ETag, its file time
                # read): the wire called here, not through _read_with_mtime and _on_wire's lambda,
                # two coroutine frames fewer that every resumption of this GET would pass through
                try:
                    data, headers, composite = await wire.get_with_headers(key, self._url(key), if_match)
                except UseBotocore:
                    self._drop_wire()
                    data, mtime = await self._read_with_mtime(key, if_match)
                    return GetResult(data, len(data), None, mtime)
                if composite is not None:
                    await self.check_composite_body(key, data, (*composite, "COMPOSITE"))
                return GetResult(data, len(data), None, file_times.from_headers(headers))
            data = await self._read(key, None, None, if_match)
            return GetResult(data, len(data))
        start, end = rng
        if opts.sink is not None:
            await self._read_to(key, start, end, opts.sink, if_match)
            return GetResult(b"")
        if opts.into is not None:
            return GetResult(await self._read_into(key, start, end, opts.into, if_match))
        return GetResult(await self._read(key, start, end, if_match))

    async def _read_with_mtime(self, key: str, if_match: str | None = None) -> tuple[bytes, float | None]:
        """The whole object and the file time its metadata carries (x-amz-meta-mtime, rclone's or
        mc's: stores/file_times.py; None without one), from the one GET: a download to a local
        file gives the file that time. Only those two headers are read, not the whole properties."""
        got = await self._on_wire(lambda wire: wire.get_with_headers(key, self._url(key), if_match))
        if got is not _NO_WIRE:
            data, headers, composite = got
            if composite is not None:
                await self.check_composite_body(key, data, (*composite, "COMPOSITE"))
            return data, file_times.from_headers(headers)
        data, props = await self._read_with_props(key, if_match)
        return data, file_times.stored_mtime(props.metadata)

    async def read_small(self, key: str, most: int) -> tuple[ObjectInfo, GetResult | None, ObjectHead | None]:
        """What one GET says of the object (size, ETag, time, storage class) and, when it is at most
        `most` bytes, the object itself with the file time its metadata carries (as a download's
        get with_mtime reads it): a small one-object download is then this one request
        (engine/planner.py). A longer one's body is not read: what its head said (size, ETag, time:
        the version the download in parts that follows holds its ranges to; its properties and
        checksum, which that download would otherwise ask two HEADs for), and None. Through
        botocore, or where the lean path cannot refuse a body: one HEAD, as before, and None."""
        got = await self._on_wire(lambda wire: wire.get_small(key, self._url(key), most))
        if got is _NO_WIRE or got is None:
            return await self.head(key), None, None
        info, data, headers, composite = got
        if data is None:  # longer: what its head said, its body not read
            found = checksums.from_headers(headers)
            return info, None, ObjectHead(key, s3props.from_headers(headers),
                                          ObjectChecksum(*found) if found is not None else None)
        if composite is not None:
            await self.check_composite_body(key, data, (*composite, "COMPOSITE"))
        return info, GetResult(data, len(data), None, file_times.from_headers(headers)), None

    async def restore_status(self, key: str) -> str | None:
        """HEAD: the object's x-amz-restore header (`ongoing-request="false", expiry-date=...` once a
        restore of an archived object finished; None when none was asked). Asked only of keys the
        listing says are archived (engine/transfer/archived.py), never on the default path."""
        h = await self._on_wire(lambda wire: wire.head_headers(key, self._url(key)))
        if h is not _NO_WIRE:
            return h.get("x-amz-restore")
        try:
            resp = await (await self._control()).head_object(Bucket=self.bucket, Key=key, **self._read_params())
        except Exception as exc:
            raise translate(exc, "head", self._url(key), key) from exc
        restore = resp.get("Restore")
        return None if restore is None else str(restore)

    async def _read_with_props(self, key: str, if_match: str | None = None) -> tuple[bytes, ObjectProps]:
        """The whole object and its properties from the one GET (a GET names a tag count when
        there are tags, so none named is none)."""
        from . import props as s3props

        from ..checksums import from_fields

        got = await self._on_wire(lambda wire: wire.get_with_headers(key, self._url(key), if_match))
        if got is not _NO_WIRE:
            data, headers, composite = got
            if composite is not None:
                await self.check_composite_body(key, data, (*composite, "COMPOSITE"))
            return data, s3props.from_headers(headers, tag_count_known=True)
        try:
            from ..conditions import quoted

            etag = quoted(if_match)  # a whole object the listing named: that version only (check_answer below)
            resp = await (await self._control()).get_object(Bucket=self.bucket, Key=key, ChecksumMode="ENABLED",
                                                             **self._read_params(), **({"IfMatch": etag} if etag else {}))
            async with resp["Body"] as body:
                data = await body.read()
        except Exception as exc:
            raise translate(exc, "get", self._url(key), key) from exc
        want = resp.get("ContentLength")
        if want is not None and len(data) != want:
            raise Corrupt(f"got {len(data)} bytes, expected {want}", op="get", url=self._url(key), key=key)
        if not resp.get("ETag"):  # every S3 GET answer names its object's version: this is not one
            raise Transient("a GET answer without an ETag (not this request's answer)", op="get",
                            url=self._url(key), key=key)
        from ..conditions import check_answer

        check_answer(resp.get("ETag"), "get", self._url(key), key, if_match)
        await self.check_composite_body(key, data, from_fields(resp))
        return data, s3props.from_botocore(resp, tag_count_known=True)

    def _read_params(self) -> dict[str, Any]:
        """botocore's SSE-C parameters for a GET or HEAD here (none without a customer key)."""
        from .props import customer_key_params

        return customer_key_params(self._read_key)

    async def read_tagging(self, key: str) -> str:
        """GetObjectTagging (asked only of objects that have tags)."""
        from urllib.parse import urlencode

        from . import props as s3props

        tags = await self._on_wire(lambda wire: wire.get_tagging(key, self._url(key)))
        if tags is not _NO_WIRE:
            return urlencode(tags)
        try:
            resp = await (await self._control()).get_object_tagging(Bucket=self.bucket, Key=key)
        except Exception as exc:
            if not_implemented(exc):
                return ""  # a server without tagging (s3proxy: 501 NotImplemented) keeps no tags
            raise translate(exc, "get tagging", self._url(key), key) from exc
        return s3props.tagging_from_botocore(resp)

    async def _source_props_for_copy(self, src: "S3Store", key: str, given: ObjectProps | None) -> ObjectProps:
        """What CopyObject would keep, for a copy in parts: the source's metadata, tags and
        storage class, with the write-only settings of `given` (ACL, encryption, storage class)."""
        props = await src.read_props(key)
        if props.tag_count != 0:
            props = props.with_(tagging=await src.read_tagging(key) or None)
        if given is not None:
            props = props.with_(acl=given.acl, sse=given.sse, sse_kms_key_id=given.sse_kms_key_id,
                                sse_c_key=given.sse_c_key, request_payer=given.request_payer,
                                storage_class=given.storage_class or props.storage_class)
        return props

    async def first_part_size(self, key: str) -> int | None:
        """HEAD with partNumber=1: Content-Length is the first part's size (rare: sync --checksum
        of multipart objects only, so the control plane serves it)."""
        try:
            resp = await (await self._control()).head_object(Bucket=self.bucket, Key=key, PartNumber=1,
                                                             **self._read_params())
        except Exception as exc:
            raise translate(exc, "head", self._url(key), key) from exc
        if int(resp.get("PartsCount") or 0) <= 1 and "-" not in str(resp.get("ETag", "")):
            return None
        return int(resp["ContentLength"])

    async def object_checksum(self, key: str) -> ObjectChecksum | None:
        """HEAD with x-amz-checksum-mode: ENABLED (sync --checksum, and before a multipart download)."""
        found = await self._on_wire(lambda wire: wire.checksum(key, self._url(key)))
        if found is not _NO_WIRE:
            return ObjectChecksum(*found) if found is not None else None
        try:
            resp = await (await self._control()).head_object(Bucket=self.bucket, Key=key, ChecksumMode="ENABLED",
                                                             **self._read_params())
        except Exception as exc:
            raise translate(exc, "head", self._url(key), key) from exc
        from ..checksums import from_fields

        found = from_fields(resp)
        return ObjectChecksum(*found) if found is not None else None

    async def object_parts(self, key: str) -> list[tuple[int, int, str]] | None:
        """GetObjectAttributes (ObjectParts), every page: each part's number, size and checksum, to
        check a COMPOSITE checksum on download. One request per multipart object with such a
        checksum (LocalStack and MinIO answer it). None when the server does not give the parts'
        checksums (versitygw answers without ObjectParts, others 501 or 400, a policy may deny
        s3:GetObjectAttributes): then this store is not asked again (a HEAD with partNumber would
        be one request per part, and the servers measured that lack the one lack the other). On the
        lean path, so a download that needs it loads no botocore client (about 0.5 s of CPU)."""
        if self._no_parts:
            return None
        parts: list[tuple[int, int, str]] = []
        marker = 0
        while True:
            page = await self._on_wire(lambda wire: wire.object_parts(key, self._url(key), marker))
            if page is _NO_WIRE:
                page = await self._object_parts_page(key, marker)
            if page is None:
                self._no_parts = True
                return None
            parts.extend(page[0])
            if not page[1]:
                return parts
            marker = page[1]

    async def _object_parts_page(self, key: str, marker: int) -> tuple[list[tuple[int, int, str]], int | None] | None:
        """object_parts' page through botocore (the lean path is off or handed over)."""
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": key, "ObjectAttributes": ["ObjectParts"],
                                  "MaxParts": 1000}
        if marker:
            params["PartNumberMarker"] = marker
        try:
            resp = await (await self._control()).get_object_attributes(**params)
        except Exception as exc:
            err = translate(exc, "get object attributes", self._url(key), key)
            if isinstance(err, (NotFound, Throttled)) or type(err) is ConnectFailed or (
                    isinstance(err, Transient) and not not_implemented(exc)):
                raise err from exc
            return None
        listed = resp.get("ObjectParts") or {}
        parts: list[tuple[int, int, str]] = []
        for p in listed.get("Parts") or ():
            value = next((str(p[f]) for f in _CHECKSUM_FIELDS if p.get(f)), None)
            if value is None or not p.get("Size"):
                return None
            parts.append((int(p["PartNumber"]), int(p["Size"]), value))
        if not parts:
            return None
        more = listed.get("IsTruncated") and int(listed.get("NextPartNumberMarker") or 0)
        return parts, (more or None)

    async def check_composite_body(self, key: str, data: bytes | bytearray | memoryview,
                                   found: tuple[str, str, str] | None) -> None:
        """A whole object read into memory against its COMPOSITE checksum (`found`: algorithm, value,
        type from its GET answer; anything else is left alone, at no cost): the parts' sizes and
        checksums (one GetObjectAttributes) cut the bytes, each part's digest must match, and their
        digest the object's value. Corrupt (retried as a bad body is) on a mismatch; unchecked, with
        one note, where the store does not tell the parts."""
        if found is None or found[2] != "COMPOSITE" or not checksums.available(found[0]):
            return
        algorithm, want, _ = found
        parts = await self.object_parts(key)
        if parts is None:
            checksums.note_once(f"{self._url()} does not tell the parts of multipart objects (GetObjectAttributes): "
                                "their composite checksums are not verified on download")
            return
        view, at, digests = memoryview(data), 0, []
        for number, size, value in parts:
            digest = checksums.Hasher(algorithm).digest_of(view[at:at + size])
            at += size
            if digest != base64.b64decode(value):
                raise Corrupt(f"{algorithm} of part {number} does not match the part's checksum",
                              op="get", url=self._url(key), key=key)
            digests.append(digest)
        if at != len(data) or checksums.composite(algorithm, digests) != want:
            raise Corrupt(f"{algorithm} of the body's parts does not match the object's composite checksum",
                          op="get", url=self._url(key), key=key)

    async def _read(self, key: str, start: int | None = None, end: int | None = None,
                    if_match: str | None = None) -> bytes:
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if start is not None:
            assert end is not None  # a range has both ends
            if end <= start:
                return b""
        composite: list[tuple[str, str]] = []
        data = await self._on_wire(lambda wire: wire.get(key, start, end, self._url(key), composite=composite,
                                                         if_match=if_match))
        if data is not _NO_WIRE:
            if composite:
                await self.check_composite_body(key, data, (*composite[0], "COMPOSITE"))
            return data
        return await self._get_object(params, key, start, end, if_match)

    async def _get_object(self, params: dict[str, Any], key: str, start: int | None, end: int | None,
                          if_match: str | None = None) -> bytes:
        """GetObject through botocore (the whole object with its checksum checked, or bytes
        [start, end)), its length checked against the answer and the range asked."""
        params.update(self._read_params())
        from ..conditions import check_answer, quoted

        etag = quoted(if_match)
        if etag:  # a range of an object read in several, or a whole one the listing named: that version only
            params["IfMatch"] = etag
        if start is not None and end is not None:
            params["Range"] = f"bytes={start}-{end - 1}"
        else:
            params["ChecksumMode"] = "ENABLED"  # botocore then checks the body against a full-object checksum
        try:
            resp = await (await self._control()).get_object(**params)
            async with resp["Body"] as body:
                data = await body.read()
        except Exception as exc:
            raise translate(exc, "get", self._url(key), key) from exc
        want = resp.get("ContentLength")
        if want is not None and len(data) != want:
            raise Corrupt(f"got {len(data)} bytes, expected {want}", op="get", url=self._url(key), key=key)
        check_answer(resp.get("ETag"), "get", self._url(key), key, if_match)  # not another request's answer
        if start is None and "VersionId" not in params:
            from ..checksums import from_fields

            await self.check_composite_body(key, data, from_fields(resp))
        if start is not None and end is not None and len(data) != end - start:
            raise Corrupt(f"range returned {len(data)} bytes, expected {end - start}",
                          op="get", url=self._url(key), key=key)
        return data

    async def _read_into(self, key: str, start: int, end: int, buf: memoryview,
                         if_match: str | None = None) -> memoryview:
        """Bytes [start, end) received into buf (the lean path writes them there as they arrive)."""
        data = await self._on_wire(lambda wire: wire.get(key, start, end, self._url(key), buf, if_match=if_match))
        if data is _NO_WIRE:
            data = await self._read(key, start, end, if_match)
        elif isinstance(data, memoryview) and data.obj is buf.obj:
            return data  # received in place
        buf[:len(data)] = data
        return buf[:len(data)]

    async def _read_to(self, key: str, start: int, end: int, sink: Any, if_match: str | None = None) -> None:
        """Bytes [start, end) handed to `sink` (stores/filesink.RangeSink) as they arrive on the lean
        path; through botocore, read whole and handed over in one go."""
        if await self._on_wire(lambda wire: wire.get_to(key, start, end, self._url(key), sink,
                                                        if_match)) is not _NO_WIRE:
            return
        data = await self._read(key, start, end, if_match)
        sink.begin()
        sink.write(memoryview(data))

    async def _read_first(self, key: str, limit: int) -> tuple[bytes, int]:
        info = await self.head(key)
        size = info.size or 0
        return await self._read(key, 0, min(size, limit)), size

    # ---------------------------------------------------------------- writing

    async def prepare(self) -> None:
        """HeadBucket: the bucket is there and ours to write (lean path when it is on: an upload of
        one object then needs no botocore client at all)."""
        async def lean(wire: Any) -> bool:
            url = self._url()
            # HEAD of the listing address is HeadBucket, in either addressing style
            resp = await wire._send("HEAD", wire.list_path, None, {}, None, "check bucket", url, "")
            if resp.status in (403, 404):
                # a HEAD answer has no body to say why (NoSuchBucket, SignatureDoesNotMatch, an unknown
                # key): a listing of no keys asks again, with an answer that does
                again = await wire._send("GET", wire.list_path, {"list-type": "2", "max-keys": "0"}, {}, None,
                                         "check bucket", url, "")
                if again.status != 200 and again.body and b"<Code>" in again.body[:1024]:
                    raise wire._error(again, "check bucket", url, "")
            if resp.status == 404:
                raise BucketMissing("bucket does not exist", op="check bucket", url=url)
            if resp.status != 200:
                raise wire._error(resp, "check bucket", url, "")
            return True

        if await self._on_wire(lean) is not _NO_WIRE:
            return
        client = await self._control()
        try:
            await client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            mapped = translate(exc, "check bucket", self._url())
            status = (getattr(exc, "response", None) or {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status in (403, 404):  # as above: the HEAD's answer named no cause, a listing's does
                try:
                    await client.list_objects_v2(Bucket=self.bucket, MaxKeys=0)
                except Exception as again:
                    code = str(((getattr(again, "response", None) or {}).get("Error") or {}).get("Code") or "")
                    if code and not code.isdigit():  # a code from a body, not just the status
                        raise translate(again, "check bucket", self._url()) from again
            raise mapped from exc

    async def put(self, key: str, data: bytes, mtime: float | None = None, *,
                  props: ObjectProps | None = None) -> None:
        """PutObject; with `props` the object gets exactly those properties (the engine resolved
        them, Content-Type guess included), without it the Content-Type guessed from the name.
        --checksum-algorithm's header goes with it (CRC32 otherwise). `mtime`, given for a local
        file's upload, is kept in x-amz-meta-mtime (stores/file_times.py)."""
        kind = content_type_for(key) if props is None else None
        algorithm = self.checksum_algorithm
        headers = s3props.with_mtime(s3props.headers(props), mtime)
        wire = self._wire
        if wire is not None and not self._checksums_refused and not NO_CLOBBER.get():
            # the common case, straight to the wire: what the general path below does for it, without
            # its closures and three coroutines an object (~2 us); anything unusual goes on to it
            try:
                made = await wire.put(key, data, self._url(key), kind, headers, algorithm, True)
            except UseBotocore:
                self._drop_wire()
            except ChecksumRefused as exc:
                self._checksums_now_refused(exc)
            else:
                self._written(key, made)
                return

        async def attempt(with_checksum: bool) -> str | None:
            extra = headers | self._if_none_match() if NO_CLOBBER.get() else headers
            made = await self._on_wire(lambda wire: wire.put(key, data, self._url(key), kind, extra, algorithm,
                                                             with_checksum))
            if made is not _NO_WIRE:
                return made
            try:
                resp = await (await self._control()).put_object(
                    Bucket=self.bucket, Key=key, Body=data, **({"ContentType": kind} if kind else {}),
                    **s3props.params_with_mtime(props, mtime), **(self._put_checksum() if with_checksum else {}),
                    **self._if_none_match(param=True))
            except Exception as exc:
                raise self._write_error(exc, "put", key) from exc
            written.note_fields(resp)  # for --verify (stores/written.py)
            return resp.get("VersionId")

        if NO_CLOBBER.get():
            self._written(key, await self._no_clobber(key, lambda: self._without_checksums_if_refused(attempt)))
        else:
            self._written(key, await self._without_checksums_if_refused(attempt))

    def _written(self, key: str, version_id: str | None) -> None:
        """Note the version a write made, when asked to (written_versions)."""
        if self.written_versions is not None and version_id:
            self.written_versions[key] = version_id

    async def put_body(self, key: str, body: StreamedBody, mtime: float | None = None, *,
                       props: ObjectProps | None = None) -> None:
        """put() of a body streamed from a local file (features.streamed_puts): the lean path sends
        it chunk by chunk with its CRC32 and the object's properties; botocore, or another
        --checksum-algorithm, gets it read whole (rare: a proxy over TLS...)."""
        if self.checksum_algorithm in (None, "CRC32") and isinstance(body, FileBody):
            kind = content_type_for(key) if props is None else None
            headers = s3props.with_mtime(s3props.headers(props), mtime)

            async def attempt(with_checksum: bool) -> Any:
                extra = headers | self._if_none_match() if NO_CLOBBER.get() else headers
                return await self._on_wire(lambda wire: wire.put(key, body, self._url(key), kind, extra,
                                                                 with_checksum=with_checksum))

            made = await (self._no_clobber(key, lambda: self._without_checksums_if_refused(attempt))
                          if NO_CLOBBER.get() else self._without_checksums_if_refused(attempt))
            if made is not _NO_WIRE:
                self._written(key, made)
                return
        await self.put(key, await body.read_all(), mtime, props=props)

    async def start_multipart(self, key: str, size: int, part_size: int, mtime: float | None = None, *,
                              checksum: bool = True, props: ObjectProps | None = None,
                              algorithm: str | None = None) -> "S3Multipart":
        """CreateMultipartUpload: the object's properties are given here (and SSE-C on every part).
        `algorithm` creates it with that checksum instead of --checksum-algorithm's (a copy in
        parts keeps its source's, as CopyObject does)."""
        from . import props as s3props

        kind = content_type_for(key) if props is None else None

        async def attempt(with_checksum: bool) -> str:
            # CRC32 on every part, as botocore computes it by default; the upload must say so up
            # front or servers refuse the part checksums at completion.
            extra = self._multipart_checksum(algorithm) if with_checksum else {}
            headers = {"content-type": kind} if kind else {}
            # the object's properties, as PutObject sends them (and a local file's time)
            headers.update(s3props.with_mtime(s3props.headers(props), mtime))
            headers.update({_CHECKSUM_HEADERS[k]: v for k, v in extra.items()})
            made = await self._on_wire(lambda wire: wire.create_multipart(key, self._url(key), headers))
            if made is not _NO_WIRE:
                return made
            params: dict[str, Any] = {"Bucket": self.bucket, "Key": key, **({"ContentType": kind} if kind else {}),
                                      **s3props.params_with_mtime(props, mtime)}
            try:
                resp = await (await self._control()).create_multipart_upload(**params, **extra)
            except Exception as exc:
                raise self._write_error(exc, "create multipart upload", key) from exc
            return str(resp["UploadId"])

        if checksum:
            upload_id = await self._without_checksums_if_refused(attempt)
            checksum = not self._checksums_refused
        else:
            upload_id = await attempt(False)
        return S3Multipart(self, key, upload_id, (algorithm or self.checksum_algorithm or "CRC32") if checksum
                           else None, props)

    # ---------------------------------------------------------------- --no-clobber (stores/conditions.py)

    def _if_none_match(self, param: bool = False) -> dict[str, str]:
        """A write's If-None-Match: * while NO_CLOBBER is set (the header, or with `param` botocore's
        parameter), unless this server refused it before (then _no_clobber asks with a HEAD)."""
        if self._conditions_refused:
            return {}
        return if_none_match_param() if param else if_none_match_header()

    async def _no_clobber(self, key: str, write: Callable[[], Awaitable[T]], op: str = "put",
                          ambiguous: bool = False) -> T:
        """write(), which carries If-None-Match: * while NO_CLOBBER is set: its 412 means the key
        exists (DestinationExists, nothing replaced). `ambiguous` (CopyObject): a 412 may also be
        the copy source's If-Match, so a HEAD of the key tells which; and the key is looked for
        with a HEAD first, because LocalStack (4.x) answers a refused conditional CopyObject with
        412 yet writes the source's bytes under the existing object's metadata (a HEAD is little
        beside a copy; the copy is still conditional, for a key that appears meanwhile). A server
        that refuses the header (501, or a 400 naming it) gets a HEAD before each write instead, for
        the rest of the run: not race-free, said once."""
        from ..checksums import note_once
        from ...errors import DestinationExists, SourceChanged

        if not NO_CLOBBER.get():
            return await write()

        def exists() -> DestinationExists:
            return DestinationExists("already at the destination (--no-clobber): not replaced",
                                     op=op, url=self._url(key), key=key)

        if self._conditions_refused or ambiguous:
            if await self._exists(key):
                raise exists()
            if self._conditions_refused:
                return await write()
        try:
            return await write()
        except DestinationExists:
            raise
        except SourceChanged:
            if ambiguous and not await self._exists(key):
                raise
            raise exists() from None
        except StoreError as exc:
            text = exc.message
            if not ("NotImplemented" in text or "does not implement" in text or "If-None-Match" in text
                    or "if-none-match" in text.lower()):
                raise
            self._conditions_refused = True
            note_once(f"{self._url('')} refuses conditional writes (If-None-Match): --no-clobber looks for each "
                      "key with a HEAD before writing it, so a key written by someone else in between is replaced")
            if await self._exists(key):
                raise exists() from None
            return await write()

    async def _exists(self, key: str) -> bool:
        try:
            await self.head(key)
        except NotFound:
            return False
        return True

    async def _without_checksums_if_refused(self, attempt: Callable[[bool], Awaitable[T]]) -> T:
        """attempt(with_checksum): with the checksum headers, unless this server refused them
        before; when it refuses them now (ChecksumRefused), once more without, and so from then on
        (s3proxy answers 501 NotImplemented to any x-amz-checksum-*). With --checksum-algorithm
        the user asked for them: the run stops with one line instead."""
        if self._checksums_refused:
            return await attempt(False)
        conditional = NO_CLOBBER.get() and not self._conditions_refused  # this attempt carries If-None-Match
        try:
            return await attempt(True)
        except ChecksumRefused as exc:
            if conditional:
                raise  # a 501 may refuse If-None-Match instead: _no_clobber tries without it first
            self._checksums_now_refused(exc)
        return await attempt(False)

    def _checksums_now_refused(self, exc: ChecksumRefused) -> None:
        """The server refused a write's checksum headers: none from now on, or, when the user asked
        for them (--checksum-algorithm), the run stops with one line."""
        if self.checksum_algorithm is not None:
            raise DestinationUnusable(
                f"this server does not support additional checksums (--checksum-algorithm "
                f"{self.checksum_algorithm}): run without the option",
                op=exc.op, url=exc.url, key=exc.key) from None
        self._checksums_refused = True

    def _write_error(self, exc: BaseException, op: str, key: str) -> StoreError:
        """translate() for a write through botocore; ChecksumRefused when the server refuses the
        checksum headers it carried (only while they are still sent)."""
        response = getattr(exc, "response", None) or {}
        error = response.get("Error") or {}
        status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        if not self._checksums_refused and refuses_checksums(status, str(error.get("Code") or ""),
                                                             str(error.get("Message") or "")):
            return ChecksumRefused(f"the server refuses checksum headers ({status} {error.get('Code') or ''})".strip(),
                                   op=op, url=self._url(key), key=key)
        return translate(exc, op, self._url(key), key)

    def _drop_refused_checksums(self, params: dict[str, Any], model: Any = None, **kwargs: Any) -> None:
        """botocore hook (before-call): once the server refused checksum headers, none is computed
        or named any more; requests that must carry one (DeleteObjects) get Content-MD5 instead,
        which s3proxy takes."""
        if not self._checksums_refused:
            return
        context = (params.get("context") or {}).get("checksum")
        if context:
            context.pop("request_algorithm", None)
            context.pop("request_algorithm_header", None)
        headers = params.setdefault("headers", {})
        for name in [h for h in headers if h.lower() in ("x-amz-sdk-checksum-algorithm", "x-amz-checksum-algorithm")]:
            del headers[name]
        required = model is not None and (model.http_checksum_required or
                                          (model.http_checksum or {}).get("requestChecksumRequired"))
        body = params.get("body")
        if required and isinstance(body, (bytes, bytearray)):
            import base64
            import hashlib

            headers["Content-MD5"] = base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()

    def _put_checksum(self) -> dict[str, str]:
        """PutObject's parameters for --checksum-algorithm on the botocore path (it computes the value)."""
        return {"ChecksumAlgorithm": self.checksum_algorithm} if self.checksum_algorithm else {}

    def _multipart_checksum(self, algorithm: str | None = None) -> dict[str, str]:
        """CreateMultipartUpload's checksum parameters: CRC32 (composite, the servers' default) unless
        --checksum-algorithm names one; a CRC is then kept FULL_OBJECT (S3 combines the part CRCs, so
        the object's checksum does not depend on the part size and a download or a sync can check
        it against the whole file), SHA1/SHA256 can only be COMPOSITE. `algorithm` overrides the option's."""
        algorithm = algorithm or self.checksum_algorithm
        if self._checksums_refused:
            return {}
        if algorithm is None:
            return {"ChecksumAlgorithm": "CRC32"}
        from ..checksums import CRCS

        return {"ChecksumAlgorithm": algorithm, "ChecksumType": "FULL_OBJECT" if algorithm in CRCS else "COMPOSITE"}

    async def list_parts(self, key: str, upload_id: str) -> list[PartInfo]:
        """ListParts, every page (control plane: botocore)."""
        parts: list[PartInfo] = []
        marker = 0
        while True:
            try:
                resp = await (await self._control()).list_parts(
                    Bucket=self.bucket, Key=key, UploadId=upload_id, PartNumberMarker=marker)
            except Exception as exc:
                raise translate(exc, "list parts", self._url(key), key) from exc
            for p in resp.get("Parts", ()):
                extra = tuple((k, str(v)) for k, v in p.items() if k == "ETag" or k.startswith("Checksum"))
                parts.append(PartInfo(int(p["PartNumber"]), int(p.get("Size") or 0), extra))
            if not resp.get("IsTruncated"):
                return parts
            marker = int(resp.get("NextPartNumberMarker") or 0)

    async def resume_multipart(self, key: str, upload_id: str, parts: Sequence[PartInfo], *,
                               props: ObjectProps | None = None) -> "S3Multipart":
        upload = S3Multipart(self, key, upload_id, self.checksum_algorithm or "CRC32", props=props)
        for p in parts:
            upload.parts[p.number] = dict(p.extra) | {"PartNumber": p.number}
        return upload

    async def abort_multipart(self, key: str, upload_id: str) -> None:
        if await self._on_wire(lambda wire: wire.abort_multipart(key, upload_id, self._url(key))) is not _NO_WIRE:
            return
        try:
            await (await self._control()).abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
        except Exception as exc:
            raise translate(exc, "abort multipart upload", self._url(key), key) from exc

    async def _list_after(self, prefix: str, op: str, params: dict[str, Any], key_marker: str | None,
                          id_name: str, id_marker: str | None) -> Any:
        """One page of ListMultipartUploads or ListObjectVersions (`op`, control plane: botocore),
        after the two-part marker of the page before: a key, and the upload or version id in it."""
        if key_marker is not None:
            params["KeyMarker"] = key_marker
            if id_marker is not None:
                params[id_name] = id_marker
        call = {"list multipart uploads": "list_multipart_uploads", "list versions": "list_object_versions"}[op]
        try:
            return await getattr(await self._control(), call)(**params)
        except Exception as exc:
            raise translate(exc, op, self._url(prefix)) from exc

    async def list_uploads(self, prefix: str, key_marker: str | None = None,
                           upload_marker: str | None = None) -> tuple[list[OpenUpload], tuple[str, str] | None]:
        """ListMultipartUploads, one page (control plane: botocore)."""
        params: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        resp = await self._list_after(prefix, "list multipart uploads", params, key_marker,
                                      "UploadIdMarker", upload_marker)
        found = [OpenUpload(u["Key"], u["UploadId"], u["Initiated"].timestamp() if u.get("Initiated") else None)
                 for u in resp.get("Uploads", ())]
        more = resp.get("IsTruncated") and resp.get("NextKeyMarker")
        return found, ((resp["NextKeyMarker"], resp.get("NextUploadIdMarker") or "") if more else None)

    async def _delete_objects(self, delete: dict[str, Any]) -> Any:
        """DeleteObjects. It must carry a checksum (botocore sends CRC32); a server that refuses
        that header (s3proxy: 501) gets it once more with Content-MD5 (_drop_refused_checksums),
        and every later one so."""
        client = await self._control()
        try:
            return await client.delete_objects(Bucket=self.bucket, Delete=delete)
        except Exception as exc:
            if not isinstance(self._write_error(exc, "delete", ""), ChecksumRefused):
                raise
        self._checksums_refused = True
        return await client.delete_objects(Bucket=self.bucket, Delete=delete)

    async def delete_many(self, keys: Sequence[str]) -> list[tuple[str, str]]:
        failed: list[tuple[str, str]] = []
        for i in range(0, len(keys), 1000):
            batch = keys[i:i + 1000]
            try:
                resp = await self._delete_objects({"Objects": [{"Key": k} for k in batch], "Quiet": True})
            except Exception as exc:
                err = translate(exc, "delete", self._url())
                failed.extend((k, str(err)) for k in batch)
                continue
            for e in resp.get("Errors", ()):
                failed.append((e.get("Key", ""), f"{e.get('Code')}: {e.get('Message')}"))
        return failed

    # ---------------------------------------------------------------- versions (control plane: botocore)

    async def list_versions_page(self, prefix: str, key_marker: str | None, version_marker: str | None,
                                 limit: int) -> VersionPage:
        """ListObjectVersions: versions and delete markers merged in S3's order (key, newest first)."""
        params: dict[str, Any] = {"Bucket": self.bucket, "MaxKeys": limit}
        if prefix:
            params["Prefix"] = prefix
        resp = await self._list_after(prefix, "list versions", params, key_marker, "VersionIdMarker", version_marker)
        rows: list[tuple[str, int, ObjectVersion]] = []
        for i, v in enumerate(resp.get("Versions", ())):
            etag = v.get("ETag")
            rows.append((v["Key"], i, ObjectVersion(v["Key"], str(v.get("VersionId") or "null"), int(v.get("Size") or 0),
                                                    v["LastModified"].timestamp(), etag.strip('"') if etag else None,
                                                    bool(v.get("IsLatest")))))
        for i, m in enumerate(resp.get("DeleteMarkers", ())):
            rows.append((m["Key"], i, ObjectVersion(m["Key"], str(m.get("VersionId") or "null"), None,
                                                    m["LastModified"].timestamp(), None, bool(m.get("IsLatest")), True)))
        # the two lists come apart: per key, the latest first, then newest first by time, S3's own
        # order kept within each list (LastModified has whole seconds: between a version and a delete
        # marker of the same second the order is unknown, and the version is taken as the newer)
        rows.sort(key=lambda r: (r[0].encode("utf-8", "surrogatepass"), not r[2].latest, -(r[2].mtime or 0.0),
                                 r[2].delete_marker, r[1]))
        entries = [r[2] for r in rows]
        if not resp.get("IsTruncated"):
            return VersionPage(entries)
        return VersionPage(entries, resp.get("NextKeyMarker"), resp.get("NextVersionIdMarker"))

    async def head_version(self, key: str, version_id: str) -> ObjectVersion:
        try:
            resp = await (await self._control()).head_object(Bucket=self.bucket, Key=key, VersionId=version_id,
                                                             **self._read_params())
        except Exception as exc:
            raise translate(exc, "head", self._url(key), key) from exc
        etag = resp.get("ETag")
        return ObjectVersion(key, version_id, int(resp["ContentLength"]), resp["LastModified"].timestamp(),
                             etag.strip('"') if etag else None, False)

    async def _read_version(self, key: str, version_id: str, start: int | None = None,
                            end: int | None = None, if_match: str | None = None) -> bytes:
        if start is not None and (end is None or end <= start):
            return b""
        return await self._get_object({"Bucket": self.bucket, "Key": key, "VersionId": version_id}, key, start, end,
                                      if_match)

    async def delete_versions(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str, str]]:
        failed: list[tuple[str, str, str]] = []
        for i in range(0, len(pairs), 1000):
            batch = pairs[i:i + 1000]
            try:
                resp = await self._delete_objects({"Objects": [{"Key": k, "VersionId": v} for k, v in batch],
                                                   "Quiet": True})
            except Exception as exc:
                err = translate(exc, "delete", self._url())
                failed.extend((k, v, str(err)) for k, v in batch)
                continue
            for e in resp.get("Errors", ()):
                failed.append((e.get("Key", ""), e.get("VersionId", ""), f"{e.get('Code')}: {e.get('Message')}"))
        return failed

    # ---------------------------------------------------------------- server-side copy

    def can_copy_from(self, src: Store) -> bool:
        """Same endpoint and credentials (`src` as unwrapped by any wrapper)."""
        return (isinstance(src, S3Store) and src.identity is not None
                and src.identity == self.identity)

    async def copy_from(self, src: Store, src_key: str, dst_key: str, size: int,
                        mtime: float | None = None, *, props: ObjectProps | None = None,
                        replace: bool = False, if_match: str | None = None) -> None:
        """CopyObject up to the copy threshold (it keeps metadata and tags by itself; `replace`
        sends the REPLACE directives with `props`), UploadPartCopy above, whose
        CreateMultipartUpload carries the source's properties (one HEAD, tags only if any).
        Held to `if_match` (stores/conditions.py), every request names the version it copies
        (x-amz-copy-source-if-match): a source overwritten meanwhile answers 412, the upload in
        parts is aborted and SourceChanged (naming the source) is raised."""
        from ...errors import SourceChanged

        assert isinstance(src, S3Store)
        try:
            if NO_CLOBBER.get():
                await self._no_clobber(dst_key, lambda: self._copy_from(src, src_key, dst_key, size, props, replace,
                                                                        if_match), op="copy", ambiguous=True)
            else:
                await self._copy_from(src, src_key, dst_key, size, props, replace, if_match)
        except SourceChanged as exc:
            raise SourceChanged(exc.message, op="copy", url=src._url(src_key), key=src_key) from None

    async def _copy_from(self, src: "S3Store", src_key: str, dst_key: str, size: int,
                         props: ObjectProps | None, replace: bool, if_match: str | None) -> None:
        from . import props as s3props
        from ..conditions import quoted

        etag = quoted(if_match)
        condition = {"CopySourceIfMatch": etag} if etag else {}
        source = {"Bucket": src.bucket, "Key": src_key}
        # an SSE-C source is read with its key (--sse-c-copy-source-key), sent as the copy source's
        read_source = s3props.customer_key_params(src._read_key, copy_source=True)
        if size <= self._copy_threshold:
            extra = s3props.headers(props, write_only=not replace) | \
                s3props.customer_key_headers(src._read_key, copy_source=True)
            kwargs = s3props.params(props, write_only=not replace) | read_source
            if replace:
                extra = extra | {"x-amz-metadata-directive": "REPLACE", "x-amz-tagging-directive": "REPLACE"}
                kwargs |= {"MetadataDirective": "REPLACE", "TaggingDirective": "REPLACE"}
            extra = extra | self._if_none_match()  # --no-clobber (stores/conditions.py)
            if await self._on_wire(lambda wire: wire.copy(src.bucket, src_key, dst_key,
                                                          self._url(dst_key), extra,
                                                          self.checksum_algorithm, if_match)) is not _NO_WIRE:
                return
            try:
                resp = await (await self._control()).copy_object(
                    Bucket=self.bucket, Key=dst_key, CopySource=source, **kwargs, **condition,
                    **self._put_checksum(), **self._if_none_match(param=True))
            except Exception as exc:
                raise translate(exc, "copy", self._url(dst_key), dst_key) from exc
            result = resp.get("CopyObjectResult") or {}
            written.note_fields(result, result.get("ETag"))  # for --verify (stores/written.py)
            return
        part = part_size_for(size, self._copy_part_size)
        if not replace:
            props = await self._source_props_for_copy(src, src_key, props)
        algorithm = self.checksum_algorithm
        if algorithm is None and not self._checksums_refused:
            # CopyObject keeps the source's checksum algorithm (recomputed by the server); a copy in
            # parts created without one would get the server's default (CRC64NVME) or none
            found = await src.object_checksum(src_key)
            algorithm = found.algorithm if found is not None else None
        upload = await self.start_multipart(dst_key, size, part, checksum=algorithm is not None, props=props,
                                            algorithm=algorithm)
        opened = COPY_UPLOAD_OPENED.get()
        if opened is not None and upload.upload_id is not None:
            opened(upload.upload_id)  # the transfer's record of it, before any part is copied

        async def one(number: int, start: int, end: int) -> None:
            try:
                with part_request():  # ends, rather than being cut off, when another part fails
                    resp = await (await self._control()).upload_part_copy(
                    Bucket=self.bucket, Key=dst_key, UploadId=upload.upload_id, PartNumber=number,
                        CopySource=source, CopySourceRange=f"bytes={start}-{end - 1}",
                        **s3props.sse_c_params(props), **read_source, **condition)
            except Exception as exc:
                raise translate(exc, "upload part copy", self._url(dst_key), dst_key) from exc
            result = resp["CopyPartResult"]
            upload.parts[number] = {"PartNumber": number, "ETag": result["ETag"]} | {
                f: result[f] for f in _CHECKSUM_FIELDS if result.get(f)}  # the completion names them

        await upload_in_parts(upload, size, part, self._copy_concurrency, one)  # --copy-concurrency


_HEAD_BOUND: list[Any] = []


def _head_bound_session() -> Any:
    """aiobotocore's HTTP session with a deadline on the answer's head, as the lean path's client
    has (http/client.py HeadTimeout): aiohttp's read timeout is a limit on silence that every
    byte of a head trickling in resets. A request without a body must have its head whole within
    the read timeout (--request-timeout) of being sent, else it fails as a read timeout (retried).
    Requests with a body are left to the silence timeout and --request-deadline here: aiohttp
    does not tell when their body was taken."""
    if _HEAD_BOUND:
        return _HEAD_BOUND[0]
    from aiobotocore.httpsession import AIOHTTPSession

    class _Bounded:
        """An aiohttp session whose request() of a bodyless request returns (with the head) in time."""

        def __init__(self, session: Any, deadline: float | None) -> None:
            self.session, self.deadline = session, deadline

        async def request(self, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("data") or not self.deadline:
                return await self.session.request(*args, **kwargs)
            async with asyncio.timeout(self.deadline):  # aiobotocore turns it into ReadTimeoutError
                return await self.session.request(*args, **kwargs)

    class HeadBoundSession(AIOHTTPSession):
        async def _get_session(self, proxy_url: Any) -> Any:
            return _Bounded(await super()._get_session(proxy_url), self._timeout.sock_read)

    _HEAD_BOUND.append(HeadBoundSession)
    return HeadBoundSession


_LOADERS: dict[Any, Any] = {}


def _shared_loader(data_path: str | None) -> Any:
    """One botocore data loader per process (and AWS_DATA_PATH): it caches the parsed S3 model and
    endpoint rules (JSON parsing is most of what creating a client costs), and forked workers
    inherit it warm."""
    loader = _LOADERS.get(data_path)
    if loader is None:
        from botocore.loaders import create_loader

        loader = _LOADERS[data_path] = create_loader(data_path)
    return loader


def _refuse_redirects(client: Any) -> None:
    """aiohttp follows a 3xx Location to any host by default, taking the listing or the object to
    wherever the server points. botocore handles S3's own region redirects from the 3xx answer
    itself, so the HTTP layer must hand that answer back instead of following it."""
    http = getattr(getattr(client, "_endpoint", None), "http_session", None)
    get_session = getattr(http, "_get_session", None)
    if http is None or get_session is None:
        return

    async def session_without_redirects(*args: Any, **kwargs: Any) -> Any:
        session = await get_session(*args, **kwargs)
        request = session.request
        if getattr(request, "_s3bulk_no_redirects", False):
            return session

        def no_redirects(method: str, url: Any, **kw: Any) -> Any:
            kw["allow_redirects"] = False
            return request(method, url, **kw)

        setattr(no_redirects, "_s3bulk_no_redirects", True)  # a mark on a function: mypy knows no such attribute
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            session.request = no_redirects
        return session

    http._get_session = session_without_redirects


def _add_request_payer(client: Any, payer: str) -> None:
    """--request-payer on every botocore request (ListObjectsV2, HEAD, GET too, as aws-cli sends it)."""
    def add(request: Any, **kwargs: Any) -> None:
        request.headers["x-amz-request-payer"] = payer

    client.meta.events.register("before-sign.s3", add)


async def _no_credentials() -> None:
    return None


def _static_credentials(creds: Any) -> Callable[[], Awaitable[Any]]:
    async def source() -> Any:
        return creds
    return source


def _aio_credentials(creds: Any) -> Callable[[], Awaitable[Any]]:
    """aiobotocore's credentials (refreshed by it) as sigv4 Credentials."""
    async def source() -> Any:
        from .sigv4 import Credentials

        f = await creds.get_frozen_credentials()
        return Credentials(f.access_key, f.secret_key, f.token)
    return source


def _open_error(exc: BaseException, profile: str | None, url: str) -> S3BulkError:
    """What a failure to open the store is reported as (botocore's exceptions imported only here)."""
    from botocore import exceptions as bexc

    if isinstance(exc, bexc.ProfileNotFound):
        return UsageError(f"AWS profile {profile!r} not found")
    if isinstance(exc, ValueError):  # botocore: invalid endpoint URL and friends
        return UsageError(f"invalid S3 endpoint or option: {short_text(exc)}")
    return translate(exc, "connect", url)


class S3Multipart:
    """An open multipart upload; parts may arrive in any order."""

    def __init__(self, store: S3Store, key: str, upload_id: str, checksum: str | None = "CRC32",
                 props: ObjectProps | None = None) -> None:
        self.store, self.key, self.upload_id = store, key, upload_id
        self.checksum = checksum  # the algorithm every part carries (the upload was created with it), or None
        self.props = props  # SSE-C and requester-pays go on every part and the completion
        self.parts: dict[int, dict[str, Any]] = {}
        self.left_open = False  # aborted, but still listed after every try (abort)

    async def put_part(self, number: int, offset: int, data: bytes) -> None:
        s = self.store
        from . import props as s3props

        extra = s3props.sse_c_headers(self.props)
        payer = self.props.request_payer if self.props is not None else None
        if payer:
            extra["x-amz-request-payer"] = payer

        async def attempt(with_checksum: bool) -> dict[str, Any]:
            algorithm = self.checksum if with_checksum else None
            part = await s._on_wire(lambda wire: wire.upload_part(self.key, self.upload_id, number, data,
                                                                  s._url(self.key), algorithm or False, extra))
            if part is not _NO_WIRE:
                return part
            try:
                resp = await (await s._control()).upload_part(
                    Bucket=s.bucket, Key=self.key, UploadId=self.upload_id, PartNumber=number,
                    Body=bytes(data) if isinstance(data, memoryview) else data, **self._part_params(),
                    **({"ChecksumAlgorithm": algorithm} if algorithm else {}))
            except Exception as exc:
                raise s._write_error(exc, "upload part", self.key) from exc
            part = {"PartNumber": number, "ETag": resp["ETag"]}
            for field in _CHECKSUM_FIELDS:
                if resp.get(field):
                    part[field] = resp[field]
            return part

        if self.checksum is None:
            self.parts[number] = await attempt(False)
        else:
            self.parts[number] = await s._without_checksums_if_refused(attempt)

    async def complete(self) -> None:
        s = self.store
        parts = [self.parts[n] for n in sorted(self.parts)]
        payer = self.props.request_payer if self.props is not None else None

        async def attempt() -> str | None:
            headers = ({"x-amz-request-payer": payer} if payer else {}) | s._if_none_match()
            made = await s._on_wire(lambda wire: wire.complete_multipart(
                self.key, self.upload_id, parts, s._url(self.key), headers))
            if made is not _NO_WIRE:
                return made
            try:
                resp = await (await s._control()).complete_multipart_upload(
                    Bucket=s.bucket, Key=self.key, UploadId=self.upload_id, MultipartUpload={"Parts": parts},
                    **self._payer(), **s._if_none_match(param=True))
            except Exception as exc:
                raise translate(exc, "complete multipart upload", s._url(self.key), self.key) from exc
            written.note_fields(resp)  # for --verify (stores/written.py)
            return resp.get("VersionId")

        s._written(self.key, await s._no_clobber(self.key, attempt, op="complete multipart upload"))

    def _payer(self) -> dict[str, Any]:
        payer = self.props.request_payer if self.props is not None else None
        return {"RequestPayer": payer} if payer else {}

    def _part_params(self) -> dict[str, Any]:
        from . import props as s3props

        return s3props.sse_c_params(self.props) | self._payer()

    async def abort(self) -> None:
        """Aborted until ListParts confirms it is gone (base.abort_confirmed); one still listed
        after that is `left_open`, for the caller to keep recorded."""
        self.left_open = not await abort_confirmed(self.store, self.key, self.upload_id)
