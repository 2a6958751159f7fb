"""The errors s3bulk raises, translated from backend libraries at each adapter's boundary.

    S3BulkError                  anything s3bulk reports
    ├── UsageError               bad URL or option: nothing was attempted (exit 2)
    └── StoreError               an operation on a store failed (op, url, key)
        ├── NotFound             bucket, key, file or directory missing
        │   └── BucketMissing    the bucket itself is gone: every object would fail (the run stops)
        ├── AccessDenied         credentials missing, wrong, or not allowed
        ├── ConnectFailed        endpoint unreachable or connection refused
        ├── Throttled            the store asks us to slow down (retryable)
        ├── Transient            5xx, timeouts, dropped connections (retryable)
        ├── Corrupt              body length or checksum does not match
        ├── UnsafeKey            the key would land outside the destination
        └── WriteFailed          the destination refused the write (disk full, not a directory, ...)
            └── DestinationUnusable   refused for every object alike: disk full, read-only
                                      filesystem, quota (the run stops instead of failing each one)

Every class keeps plain-string arguments so that instances pickle: failures cross
process boundaries as data. Messages never contain credentials. Whether a failure is retried is
decided by its class (`retryable`), never by its message.

Transport failures of the lean HTTP client (http/client.py) are mapped here once, by type, for
every store that uses it (from_transport):

    ConnectTimeout, ConnectError    -> ConnectFailed
    ProxyError (407/403 to CONNECT) -> AccessDenied (final); other ProxyError -> ConnectFailed
    TLSError (certificate rejected) -> StoreError (final: retrying will not make it trusted)
    TLSError (handshake failed)     -> ConnectFailed
    ReadTimeout, WriteTimeout       -> Transient
    DroppedBeforeAnswer             -> Transient
    DroppedMidAnswer                -> Corrupt (the answer did not arrive whole)
    ProtocolError                   -> Transient
"""

from __future__ import annotations


class S3BulkError(Exception):
    """Base of everything s3bulk raises on purpose."""

    exit_code = 3

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # keep pickling to the one plain-string argument
        return (type(self), (self.message,))


class UsageError(S3BulkError):
    """The command line or the Python call cannot be carried out as given."""

    exit_code = 2


class TooManyDeletes(S3BulkError):
    """--max-delete or --max-delete-size: the run would delete more than allowed, so it deleted
    nothing (its own exit code: neither a usage error nor a failure a retry could fix)."""

    exit_code = 4


class StoreError(S3BulkError):
    """An operation on a store failed; carries what was attempted and where, and the seconds the
    server asked us to wait before trying again (Retry-After), if it did."""

    retryable = False

    def __init__(self, message: str, *, op: str = "", url: str = "", key: str = "",
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.op = op
        self.url = url
        self.key = key
        self.retry_after = retry_after

    def __reduce__(self):
        return (_rebuild_store_error, (type(self), self.message, self.op, self.url, self.key, self.retry_after))

    def __str__(self) -> str:
        where = self.url or ""
        head = f"{self.op} {where}".strip()
        return f"{head}: {self.message}" if head else self.message


def _rebuild_store_error(cls, message: str, op: str, url: str, key: str,
                         retry_after: float | None = None) -> StoreError:
    return cls(message, op=op, url=url, key=key, retry_after=retry_after)


class NotFound(StoreError):
    """The bucket, key, file or directory does not exist."""


class BucketMissing(NotFound):
    """The bucket does not exist (any more): every object of the run would fail the same way."""


class AccessDenied(StoreError):
    """Credentials are missing or wrong, or do not allow the operation."""


class ConnectFailed(StoreError):
    """The endpoint could not be reached."""

    retryable = True


class Throttled(StoreError):
    """The store asked us to slow down (503 SlowDown and friends)."""

    retryable = True


class Transient(StoreError):
    """A failure that may pass: 5xx, timeout, dropped connection."""

    retryable = True


class Corrupt(StoreError):
    """What arrived does not match what was promised (length, checksum)."""

    retryable = True


class UnsafeKey(StoreError):
    """The key would be written outside the destination, or cannot be a local path."""


class WriteFailed(StoreError):
    """The destination refused a write: disk full, permission, a file where a directory is needed."""


class DestinationUnusable(WriteFailed):
    """The destination refuses writes as a whole (no space, read-only filesystem, quota exceeded):
    the run stops taking work rather than fail every remaining object with the same message."""


#: failures that make every further object fail the same way: the run stops at the first
RUN_STOPPERS = (DestinationUnusable, BucketMissing)


def from_transport(exc: Exception, *, op: str, url: str, key: str = "") -> StoreError:
    """The s3bulk error for a failure of the lean HTTP client, chosen by its type (table above)."""
    from .http import client as h

    text = str(exc)
    if isinstance(exc, h.TLSError):
        if exc.certificate:
            return StoreError(f"{text} (the endpoint's certificate is not trusted: set AWS_CA_BUNDLE or "
                              "ca_bundle in the profile to the CA that signed it)", op=op, url=url, key=key)
        return ConnectFailed(text, op=op, url=url, key=key)
    if isinstance(exc, h.ProxyError) and exc.status in (403, 407):
        return AccessDenied(f"{text}: check the credentials in the proxy URL", op=op, url=url, key=key)
    if isinstance(exc, h.ConnectError):  # ConnectTimeout and other ProxyErrors included
        return ConnectFailed(f"cannot connect to the endpoint ({text})", op=op, url=url, key=key)
    if isinstance(exc, h.DroppedMidAnswer):
        return Corrupt(f"answer did not arrive whole: {text}", op=op, url=url, key=key)
    if isinstance(exc, h.Timeout):
        return Transient(f"timed out: {text}", op=op, url=url, key=key)
    if isinstance(exc, h.ProtocolError):
        return Transient(f"malformed answer: {text}", op=op, url=url, key=key)
    return Transient(text, op=op, url=url, key=key)  # DroppedBeforeAnswer and any other transport failure
