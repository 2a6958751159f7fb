"""S3's error answers and botocore's exceptions mapped onto s3bulk's error tree (s3bulk/errors.py).

One table for both data paths: the lean wire protocol (wire.py) and botocore (store.py) call
`error_for` with what the server said; `translate` does the same for botocore's and aiohttp's
exceptions. It sits below both so that neither imports the other for it.
"""

from __future__ import annotations

import asyncio

from ...errors import AccessDenied, BucketMissing, ConnectFailed, Corrupt, NotFound, StoreError, Throttled, Transient

_DENIED = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
           "InvalidToken", "TokenRefreshRequired", "AllAccessDisabled", "AccountProblem",
           "403", "Forbidden", "InvalidClientTokenId", "UnrecognizedClientException", "XAdminUserNotFound"}
# what the server says of the credentials themselves, in words that point at the real cause
SIGNATURE_MISMATCH = (
    "the server computed a different signature than s3bulk sent (SignatureDoesNotMatch): what s3bulk signed "
    "may differ from what the server checked (a signing bug, a proxy that rewrites requests, a clock skew) "
    "or the secret key is wrong; S3BULK_DATA_PATH=botocore signs with botocore and tells a signing bug "
    "from wrong keys")
_UNKNOWN_KEY = "the access key is unknown to the server (check AWS_ACCESS_KEY_ID, --profile and --endpoint-url)"
_WHY = {
    "SignatureDoesNotMatch": SIGNATURE_MISMATCH,
    # versitygw answers an unknown key with XAdminUserNotFound (404), AWS and MinIO with InvalidAccessKeyId
    "InvalidAccessKeyId": f"{_UNKNOWN_KEY} (InvalidAccessKeyId)",
    "XAdminUserNotFound": f"{_UNKNOWN_KEY} (XAdminUserNotFound)",
    "InvalidClientTokenId": "the access key or session token is unknown to the server (InvalidClientTokenId)",
    "UnrecognizedClientException": "the access key or session token is unknown to the server "
                                   "(UnrecognizedClientException)",
    "InvalidToken": "the session token is malformed or not valid (InvalidToken)",
    "ExpiredToken": "credentials expired (ExpiredToken): refresh the session token or profile",
    "TokenRefreshRequired": "credentials expired (TokenRefreshRequired): refresh the session token or profile",
    "AllAccessDisabled": "all access to this bucket or object is disabled (AllAccessDisabled)",
    "AccountProblem": "the account has a problem that stops this request (AccountProblem)",
    # a 403 from AWS and versitygw: read as "access denied" before, which hid the clock
    "RequestTimeTooSkewed": "this machine's clock differs from the server's by more than S3 allows, "
                            "15 minutes (RequestTimeTooSkewed): set the clock (NTP)",
}
NO_CREDENTIALS = ("no AWS credentials found (set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, use --profile, "
                   "or --no-sign-request for public buckets)")
_MISSING = {"NoSuchBucket", "NoSuchKey", "404", "NotFound", "NoSuchUpload"}
_THROTTLED = {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded",
              "TooManyRequests", "503", "RequestThrottled"}


def error_for(status: int | None, code: str, msg: str, op: str, url: str, key: str = "",
              fallback: str = "") -> StoreError:
    """The s3bulk error for an S3 error answer; both data paths (botocore and wire.py) use it."""
    if status in (301, 302, 303, 307, 308) or code in ("PermanentRedirect", "TemporaryRedirect", "Redirect"):
        return StoreError(f"the endpoint redirects this request elsewhere ({code or status}); s3bulk does not "
                          "follow redirects to another host: check --endpoint-url and --region",
                          op=op, url=url, key=key)
    if status == 412 or code == "PreconditionFailed":  # only our If-Match asks (stores/conditions.py)
        from ...errors import SourceChanged

        return SourceChanged("the source object changed while it was read (412 to If-Match: its ETag is not "
                             "the one this copy reads)", op=op, url=url, key=key)
    why = _WHY.get(code)
    if why is not None:  # before the status: versitygw's unknown key is a 404, not a missing bucket
        return AccessDenied(why, op=op, url=url, key=key)
    if code == "NoSuchBucket" or (op == "check bucket" and (code in ("404", "NotFound") or
                                                          (not code and status == 404))):
        return BucketMissing("bucket does not exist", op=op, url=url, key=key)
    if code in _MISSING or status == 404:
        return NotFound("no such key" if key else "not found", op=op, url=url, key=key)
    if code == "InvalidObjectState":  # (403) an archived object: engine/transfer/archived.py skips these
        return StoreError("the object is archived (GLACIER, DEEP_ARCHIVE or an archive tier) and not "
                          "restored: restore it first (InvalidObjectState)", op=op, url=url, key=key)
    if code in _DENIED or status == 403:
        if code in ("", "403", "Forbidden"):
            # a HEAD answer has no body: nothing says which (the bucket check asks again with a GET)
            return AccessDenied(f"access denied ({code or status}, no reason given: wrong credentials, "
                                "a clock skew or a policy)", op=op, url=url, key=key)
        return AccessDenied(f"access denied ({code})", op=op, url=url, key=key)
    if code in _THROTTLED or status in (429, 503):
        return Throttled(f"throttled by the server ({code or status})", op=op, url=url, key=key)
    if status == 501 or code == "NotImplemented":
        # the server does not do this request at all: asking again cannot help (the callers that have
        # another way, such as writes without checksum headers, look for it before this)
        what = f"{msg} (501 NotImplemented)" if msg else "501 NotImplemented"
        return StoreError(f"the server does not implement this request: {what}", op=op, url=url, key=key)
    if status is not None and status >= 500:
        return Transient(f"server error {status} {code} {msg}".strip(), op=op, url=url, key=key)
    if code in ("RequestTimeout", "InternalError", "BadDigest", "IncompleteBody",
                "XAmzContentSHA256Mismatch"):
        return Transient(f"{code}: {msg}" if msg else code, op=op, url=url, key=key)
    if status == 400 and op == "head" and code in ("", "400", "BadRequest"):
        # all S3 says (a HEAD answer has no body) when the object is encrypted with a customer key
        # that was not given
        return StoreError("HTTP 400 (S3's answer to a HEAD of an object encrypted with a customer key, "
                          "SSE-C, when the key is not given: --sse-c-copy-source-key)", op=op, url=url, key=key)
    text = f"{code}: {msg}" if msg else code or fallback or f"HTTP {status}"
    return StoreError(text, op=op, url=url, key=key)


def translate(exc: BaseException, op: str, url: str, key: str = "") -> StoreError:
    """Map a botocore/aiohttp exception onto the s3bulk error tree (never leaks credentials)."""
    from botocore import exceptions as bexc

    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, bexc.ClientError):
        err = exc.response.get("Error", {}) or {}
        meta = exc.response.get("ResponseMetadata", {}) or {}
        status = meta.get("HTTPStatusCode")
        mapped = error_for(status, str(err.get("Code", "") or ""), str(err.get("Message", "") or "").strip(),
                           op, url, key, fallback=str(exc))
        if status in (429, 503):  # the wait the server asks for, as on the lean path (stores/resilient.py honours it)
            from ...http.client import retry_after

            mapped.retry_after = retry_after({k.lower(): v for k, v in (meta.get("HTTPHeaders") or {}).items()})
        return mapped
    if isinstance(exc, bexc.NoCredentialsError):
        return AccessDenied(NO_CREDENTIALS, op=op, url=url, key=key)
    if isinstance(exc, bexc.ProfileNotFound):
        return AccessDenied(str(exc), op=op, url=url, key=key)
    if isinstance(exc, (bexc.PartialCredentialsError, bexc.CredentialRetrievalError,
                        bexc.SSOError if hasattr(bexc, "SSOError") else bexc.NoCredentialsError)):
        return AccessDenied(f"could not load credentials: {exc}", op=op, url=url, key=key)
    if isinstance(exc, (bexc.EndpointConnectionError, bexc.ConnectionClosedError)):
        return ConnectFailed(f"cannot connect to the endpoint ({short_text(exc)})", op=op, url=url, key=key)
    if isinstance(exc, (bexc.ReadTimeoutError, bexc.ConnectTimeoutError)):
        return Transient(f"timed out ({short_text(exc)})", op=op, url=url, key=key)
    if type(exc).__name__ == "FlexibleChecksumError":  # ChecksumMode=ENABLED: botocore checked the body
        return Corrupt(f"the body does not match the server's checksum ({short_text(exc)})", op=op, url=url, key=key)
    if isinstance(exc, bexc.IncompleteReadError) or type(exc).__name__ in (
            "ResponseStreamingError", "FlexibleChecksumError"):
        return Corrupt(f"body did not arrive whole: {short_text(exc)}", op=op, url=url, key=key)
    if isinstance(exc, bexc.ParamValidationError):
        return StoreError(f"invalid request: {short_text(exc)}", op=op, url=url, key=key)
    if isinstance(exc, bexc.InvalidEndpointConfigurationError if hasattr(
            bexc, "InvalidEndpointConfigurationError") else ()):
        return StoreError(str(exc), op=op, url=url, key=key)
    if isinstance(exc, bexc.HTTPClientError):
        # aiohttp could not read the answer as HTTP (a bad status line or chunk size, two
        # Content-Lengths, bytes left over from the answer before): another attempt, on another
        # connection, may read a good one, as on the lean path (ProtocolError -> Transient)
        return Transient(f"the answer was not valid HTTP ({short_text(exc)})", op=op, url=url, key=key)
    if isinstance(exc, bexc.BotoCoreError):
        return StoreError(short_text(exc), op=op, url=url, key=key)
    if isinstance(exc, (ConnectionError, OSError, asyncio.TimeoutError)):
        return ConnectFailed(f"connection failed ({short_text(exc)})", op=op, url=url, key=key)
    return Transient(f"{type(exc).__name__}: {short_text(exc)}", op=op, url=url, key=key)


def not_implemented(exc: BaseException) -> bool:
    """A botocore error that says the server does not do this request at all (501 NotImplemented)."""
    response = getattr(exc, "response", None) or {}
    code = str((response.get("Error") or {}).get("Code") or "")
    return code == "NotImplemented" or (response.get("ResponseMetadata") or {}).get("HTTPStatusCode") == 501


def short_text(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]
