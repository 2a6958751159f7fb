"""S3 (and any S3-compatible endpoint) through aiobotocore.

botocore gives us the whole credential chain (env, config and credentials files,
profiles, SSO, assume-role, instance metadata), endpoint settings
(AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3, config files), retries in standard mode,
and default request checksums. Its exceptions are translated into
s3bulk.errors here and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import unquote
from typing import Any, Sequence

from ..errors import (AccessDenied, ConnectFailed, Corrupt, NotFound, StoreError, Throttled,
                      Transient, UsageError)
from ..model import ObjectInfo, Page, WorkUnit
from ..urls import Location
from .base import Store, part_size_for, upload_in_parts

COPY_OBJECT_LIMIT = 5 * 1024**3  # CopyObject refuses sources above 5 GiB

_DENIED = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
           "InvalidToken", "TokenRefreshRequired", "AllAccessDisabled", "AccountProblem",
           "403", "Forbidden", "InvalidClientTokenId", "UnrecognizedClientException"}
_MISSING = {"NoSuchBucket", "NoSuchKey", "404", "NotFound", "NoSuchUpload"}
_THROTTLED = {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded",
              "TooManyRequests", "503", "RequestThrottled"}


def translate(exc: BaseException, op: str, url: str, key: str = "") -> StoreError:
    """Map a botocore/aiohttp exception onto the s3bulk error tree (never leaks credentials)."""
    from botocore import exceptions as bexc

    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, bexc.ClientError):
        err = exc.response.get("Error", {}) or {}
        code = str(err.get("Code", "") or "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        msg = str(err.get("Message", "") or "").strip()
        if code == "NoSuchBucket" or (code in ("404", "NotFound") and op == "check bucket"):
            return NotFound("bucket does not exist", op=op, url=url, key=key)
        if code in _MISSING or status == 404:
            return NotFound("no such key" if key else "not found", op=op, url=url, key=key)
        if code in _DENIED or status == 403:
            if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidClientTokenId"):
                why = "credentials rejected (wrong access key or secret)"
            elif code in ("ExpiredToken", "TokenRefreshRequired"):
                why = "credentials expired"
            else:
                why = "access denied"
            return AccessDenied(f"{why} ({code})", op=op, url=url, key=key)
        if code in _THROTTLED:
            return Throttled(f"throttled by the server ({code})", op=op, url=url, key=key)
        if status is not None and status >= 500:
            return Transient(f"server error {status} {code} {msg}".strip(), op=op, url=url, key=key)
        text = f"{code}: {msg}" if msg else code or str(exc)
        return StoreError(text, op=op, url=url, key=key)
    if isinstance(exc, bexc.NoCredentialsError):
        return AccessDenied("no AWS credentials found (set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                            "use --profile, or --no-sign-request for public buckets)", op=op, url=url, key=key)
    if isinstance(exc, bexc.ProfileNotFound):
        return AccessDenied(str(exc), op=op, url=url, key=key)
    if isinstance(exc, (bexc.PartialCredentialsError, bexc.CredentialRetrievalError,
                        bexc.SSOError if hasattr(bexc, "SSOError") else bexc.NoCredentialsError)):
        return AccessDenied(f"could not load credentials: {exc}", op=op, url=url, key=key)
    if isinstance(exc, (bexc.EndpointConnectionError, bexc.ConnectionClosedError)):
        return ConnectFailed(f"cannot connect to the endpoint ({_short(exc)})", op=op, url=url, key=key)
    if isinstance(exc, (bexc.ReadTimeoutError, bexc.ConnectTimeoutError)):
        return Transient(f"timed out ({_short(exc)})", op=op, url=url, key=key)
    if isinstance(exc, bexc.IncompleteReadError) or type(exc).__name__ in (
            "ResponseStreamingError", "FlexibleChecksumError"):
        return Corrupt(f"body did not arrive whole: {_short(exc)}", op=op, url=url, key=key)
    if isinstance(exc, bexc.ParamValidationError):
        return StoreError(f"invalid request: {_short(exc)}", op=op, url=url, key=key)
    if isinstance(exc, bexc.InvalidEndpointConfigurationError if hasattr(
            bexc, "InvalidEndpointConfigurationError") else ()):
        return StoreError(str(exc), op=op, url=url, key=key)
    if isinstance(exc, bexc.BotoCoreError):
        return StoreError(_short(exc), op=op, url=url, key=key)
    if isinstance(exc, (ConnectionError, OSError, asyncio.TimeoutError)):
        return ConnectFailed(f"connection failed ({_short(exc)})", op=op, url=url, key=key)
    return Transient(f"{type(exc).__name__}: {_short(exc)}", op=op, url=url, key=key)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]


class S3Store:
    """One bucket on one endpoint, with one aiobotocore client per event loop."""

    ordered = True

    def __init__(self, location: Location, *, max_connections: int = 64,
                 copy_threshold: int = COPY_OBJECT_LIMIT, copy_part_size: int = 512 * 1024**2,
                 copy_concurrency: int = 8) -> None:
        self.location = location
        self.bucket = location.bucket
        self._max_connections = max_connections
        self._copy_threshold = copy_threshold
        self._copy_part_size = copy_part_size
        self._copy_concurrency = copy_concurrency
        self._stack = contextlib.AsyncExitStack()
        self._client: Any = None
        self.identity: tuple[str, str] | None = None  # (endpoint, access key id): who we are, for copy

    async def open(self) -> "S3Store":
        from aiobotocore.config import AioConfig
        from aiobotocore.session import AioSession
        from botocore import UNSIGNED
        from botocore import exceptions as bexc

        opts = self.location.s3
        try:
            session = AioSession(profile=opts.profile)
            kwargs: dict[str, Any] = dict(
                max_pool_connections=self._max_connections,
                retries={"mode": "standard", "max_attempts": 5},
                connect_timeout=10,
                read_timeout=60,
                tcp_keepalive=True,
            )
            if opts.no_sign_request:
                kwargs["signature_version"] = UNSIGNED
            if opts.path_style:
                kwargs["s3"] = {"addressing_style": "path"}
            config = AioConfig(**kwargs)
            self._client = await self._stack.enter_async_context(session.create_client(
                "s3", endpoint_url=opts.endpoint_url, region_name=opts.region, config=config))
            # List keys as they are. botocore would ask for url-encoded keys on every listing, but some
            # servers (LocalStack) then compare StartAfter and continuation tokens against the *encoded*
            # keys, whose order is not the key order: a listing resumed after "ü" starts over. We ask
            # for encoding only when a page cannot be parsed (keys with XML-invalid characters).
            from botocore.handlers import set_list_objects_encoding_type_url

            self._client.meta.events.unregister("before-parameter-build.s3.ListObjectsV2",
                                                set_list_objects_encoding_type_url)
            access = ""
            if not opts.no_sign_request:
                creds = await session.get_credentials()
                if creds is not None:
                    access = (await creds.get_frozen_credentials()).access_key
            self.identity = (self._client.meta.endpoint_url, access)
        except bexc.ProfileNotFound as exc:
            await self._stack.aclose()
            raise UsageError(f"AWS profile {opts.profile!r} not found") from exc
        except ValueError as exc:  # botocore: invalid endpoint URL and friends
            await self._stack.aclose()
            raise UsageError(f"invalid S3 endpoint or option: {_short(exc)}") from exc
        except Exception as exc:
            await self._stack.aclose()
            raise translate(exc, "connect", f"s3://{self.bucket}") from exc
        return self

    async def close(self) -> None:
        await self._stack.aclose()

    def _url(self, key: str = "") -> str:
        return f"s3://{self.bucket}/{key}"

    # ---------------------------------------------------------------- listing

    async def list_page(self, prefix: str, unit: WorkUnit, limit: int) -> Page:
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
                resp = await self._client.list_objects_v2(**params)
            except Exception as exc:
                # a key the XML cannot carry makes the page unparseable (or some servers fail with a
                # 5xx): ask once more with url-encoded keys
                if type(exc).__name__ not in ("ResponseParserError", "ParseError") and \
                        not isinstance(translate(exc, "list", ""), Transient):
                    raise
                encoded = True
                resp = await self._client.list_objects_v2(EncodingType="url", **params)
        except Exception as exc:
            raise translate(exc, "list", self._url(prefix)) from exc
        entries = []
        until = unit.until
        for c in resp.get("Contents", ()):
            key = unquote(c["Key"]) if encoded else c["Key"]
            if until is not None and key > until:
                return Page(entries)
            etag = c.get("ETag")
            entries.append(ObjectInfo(key, c["Size"], c["LastModified"].timestamp(),
                                      etag.strip('"') if etag else None))
        if not resp.get("IsTruncated"):
            return Page(entries)
        if entries:
            return Page(entries, next_after=entries[-1].key)
        return Page(entries, next_token=resp.get("NextContinuationToken"))

    # ---------------------------------------------------------------- reading

    async def head(self, key: str) -> ObjectInfo:
        try:
            resp = await self._client.head_object(Bucket=self.bucket, Key=key)
        except Exception as exc:
            raise translate(exc, "head", self._url(key), key) from exc
        etag = resp.get("ETag")
        return ObjectInfo(key, resp["ContentLength"], resp["LastModified"].timestamp(),
                          etag.strip('"') if etag else None)

    async def read(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if start is not None:
            if end <= start:
                return b""
            params["Range"] = f"bytes={start}-{end - 1}"
        try:
            resp = await self._client.get_object(**params)
            async with resp["Body"] as body:
                data = await body.read()
        except Exception as exc:
            raise translate(exc, "get", self._url(key), key) from exc
        want = resp.get("ContentLength")
        if want is not None and len(data) != want:
            raise Corrupt(f"got {len(data)} bytes, expected {want}", op="get", url=self._url(key), key=key)
        if start is not None and len(data) != end - start:
            raise Corrupt(f"range returned {len(data)} bytes, expected {end - start}",
                          op="get", url=self._url(key), key=key)
        return data

    async def read_first(self, key: str, limit: int) -> tuple[bytes, int]:
        info = await self.head(key)
        size = info.size or 0
        return await self.read(key, 0, min(size, limit)), size

    # ---------------------------------------------------------------- writing

    async def prepare(self) -> None:
        try:
            await self._client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            raise translate(exc, "check bucket", self._url()) from exc

    async def put(self, key: str, data: bytes, mtime: float | None = None) -> None:
        try:
            await self._client.put_object(Bucket=self.bucket, Key=key, Body=data)
        except Exception as exc:
            raise translate(exc, "put", self._url(key), key) from exc

    async def start_multipart(self, key: str, size: int, part_size: int, mtime: float | None = None, *,
                              checksum: bool = True) -> "S3Multipart":
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if checksum:
            # CRC32 on every part, as botocore computes it by default; the upload must say so up
            # front or servers refuse the part checksums at completion.
            params["ChecksumAlgorithm"] = "CRC32"
        try:
            resp = await self._client.create_multipart_upload(**params)
        except Exception as exc:
            raise translate(exc, "create multipart upload", self._url(key), key) from exc
        return S3Multipart(self, key, resp["UploadId"])

    async def delete_many(self, keys: Sequence[str]) -> list[tuple[str, str]]:
        failed: list[tuple[str, str]] = []
        for i in range(0, len(keys), 1000):
            batch = keys[i:i + 1000]
            try:
                resp = await self._client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True})
            except Exception as exc:
                err = translate(exc, "delete", self._url())
                failed.extend((k, str(err)) for k in batch)
                continue
            for e in resp.get("Errors", ()):
                failed.append((e.get("Key", ""), f"{e.get('Code')}: {e.get('Message')}"))
        return failed

    # ---------------------------------------------------------------- server-side copy

    def can_copy_from(self, src: Store) -> bool:
        return (isinstance(src, S3Store) and src.identity is not None
                and src.identity == self.identity)

    async def copy_from(self, src: Store, src_key: str, dst_key: str, size: int,
                        mtime: float | None = None) -> None:
        assert isinstance(src, S3Store)
        source = {"Bucket": src.bucket, "Key": src_key}
        if size <= self._copy_threshold:
            try:
                await self._client.copy_object(Bucket=self.bucket, Key=dst_key, CopySource=source)
            except Exception as exc:
                raise translate(exc, "copy", self._url(dst_key), dst_key) from exc
            return
        part = part_size_for(size, self._copy_part_size)
        upload = await self.start_multipart(dst_key, size, part, checksum=False)

        async def one(number: int, start: int, end: int) -> None:
            try:
                resp = await self._client.upload_part_copy(
                    Bucket=self.bucket, Key=dst_key, UploadId=upload.upload_id, PartNumber=number,
                    CopySource=source, CopySourceRange=f"bytes={start}-{end - 1}")
            except Exception as exc:
                raise translate(exc, "upload part copy", self._url(dst_key), dst_key) from exc
            upload.parts[number] = {"PartNumber": number, "ETag": resp["CopyPartResult"]["ETag"]}

        await upload_in_parts(upload, size, part, self._copy_concurrency, one)


class S3Multipart:
    """An open multipart upload; parts may arrive in any order."""

    def __init__(self, store: S3Store, key: str, upload_id: str) -> None:
        self.store, self.key, self.upload_id = store, key, upload_id
        self.parts: dict[int, dict[str, Any]] = {}

    async def put_part(self, number: int, offset: int, data: bytes) -> None:
        s = self.store
        try:
            resp = await s._client.upload_part(Bucket=s.bucket, Key=self.key, UploadId=self.upload_id,
                                               PartNumber=number, Body=data)
        except Exception as exc:
            raise translate(exc, "upload part", s._url(self.key), self.key) from exc
        part = {"PartNumber": number, "ETag": resp["ETag"]}
        for field in ("ChecksumCRC32", "ChecksumCRC32C", "ChecksumCRC64NVME", "ChecksumSHA1", "ChecksumSHA256"):
            if resp.get(field):
                part[field] = resp[field]
        self.parts[number] = part

    async def complete(self) -> None:
        s = self.store
        parts = [self.parts[n] for n in sorted(self.parts)]
        try:
            await s._client.complete_multipart_upload(
                Bucket=s.bucket, Key=self.key, UploadId=self.upload_id, MultipartUpload={"Parts": parts})
        except Exception as exc:
            raise translate(exc, "complete multipart upload", s._url(self.key), self.key) from exc

    async def abort(self) -> None:
        s = self.store
        try:
            await s._client.abort_multipart_upload(Bucket=s.bucket, Key=self.key, UploadId=self.upload_id)
        except Exception:
            pass  # best effort: a lifecycle rule or a later run cleans what is left
