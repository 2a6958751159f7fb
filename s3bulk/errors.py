"""The errors s3bulk raises, translated from backend libraries at each adapter's boundary.

    S3BulkError                  anything s3bulk reports
    ├── UsageError               bad URL or option: nothing was attempted (exit 2)
    │   └── StreamTooLong        a stream needed more than 10,000 parts of the part size chosen
    ├── TooManyDeletes           --max-delete / --max-delete-size: nothing deleted (exit 4)
    ├── Interrupted              SIGINT or SIGTERM stopped a pipe (exit 128 + the signal)
    ├── StreamFailed             reading the input stream or writing the output stream failed
    └── StoreError               an operation on a store failed (op, url, key)
        ├── NotFound             bucket, key, file or directory missing
        │   ├── BucketMissing    the bucket itself is gone: every object would fail (the run stops)
        │   └── NothingListed    SRC names no key and no prefix holding anything (an S3 prefix)
        ├── AccessDenied         credentials missing, wrong, or not allowed
        ├── ConnectFailed        endpoint unreachable or connection refused
        ├── Throttled            the store asks us to slow down (retryable)
        ├── Transient            5xx, timeouts, dropped connections (retryable)
        ├── Corrupt              body length or checksum does not match
        │   └── ChecksumMismatch the parts read do not give the object's checksum
        ├── UnsafeKey            the key would land outside the destination
        ├── Unsupported          the store lacks the capability asked of it (a bug in the caller)
        ├── SourceChanged        the source is no longer the version being read (restarted once)
        │   └── SourceFileChanged    a local file changed while it was read
        ├── DestinationExists    --no-clobber: DST holds the key already (skipped, not failed)
        ├── MalformedListing     a list/get server's /list answer is not the contract's JSON
        ├── ListingBroken        a listing breaks S3's promises (order, progress, tokens)
        ├── ChecksumRefused      a write refused for its checksum header (sent without from then on)
        ├── PartsHalted          a part asked for after another part of its upload failed
        ├── BackupFailed         --backup-dir: DST's object could not be backed up, so it stays
        ├── NotStored            a HEAD after a write does not find what was written
        └── WriteFailed          the destination refused the write (disk full, not a directory, ...)
            └── DestinationUnusable   refused for every object alike: disk full, read-only
                                      filesystem, quota (the run stops instead of failing each one)

Not failures but the way out of a step, so outside S3BulkError (nothing reports them as errors):

    Exception
    ├── Exit                     a command is over with this exit code (cli/quick.py, without typer)
    ├── Stopped                  a graceful stop came while an object was in flight (redone on resume)
    ├── LandingRefused           a rename into place refused: the process is stopping at once
    └── CapabilityAbsent         s3bulk.testing: a store lacks what a case tests (the case is skipped)
    ValueError
    └── MalformedXml             an XML answer is not the well-formed answer it should be

Private control flow stays beside its one user (serve's `_Refused`, the lean S3 path's
`UseBotocore`). Every class keeps plain-string arguments so that instances pickle: failures cross
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


class NothingListed(NotFound):
    """SRC names no key, and nothing is listed under it as a prefix (an S3 prefix: not a missing
    bucket, nor a local directory). `mv --resume` or `rm --resume` run again after it completed
    meets exactly this, and takes it for done."""


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


class StreamTooLong(UsageError):
    """The stream needed more than 10,000 parts of the part size chosen before it started."""


class Interrupted(S3BulkError):
    """SIGINT or SIGTERM stopped a pipe; an upload in progress was aborted first."""

    exit_code = 130

    def __init__(self, message: str, signum: int = 2) -> None:  # 2: SIGINT (no `signal` import at start-up)
        super().__init__(message)
        self.signum = signum
        self.exit_code = 128 + signum


class StreamFailed(S3BulkError):
    """Reading the input stream or writing the output stream failed (not a closed reader)."""


class ChecksumMismatch(Corrupt):
    """The parts read of an object do not give the checksum it carries (full-object or composite),
    or one part does not match its own (composite)."""


class Unsupported(StoreError):
    """The store does not have this capability (its `features` say so): a bug in the caller."""


class SourceChanged(StoreError):
    """The source is no longer the version this copy reads (412 to If-Match, or a changed ETag).

    Not retried as such: engine/transfer/one_object.py starts the object over once from its new version
    (a "restarted" event), and a second change fails the object with `final_message`. Nothing
    lands under the final name from two versions."""

    retryable = False
    final_message = "source changed during the copy"

    def final(self) -> "SourceChanged":
        """The failure reported when the object changed again after its restart: one line."""
        return type(self)(self.final_message, op=self.op, url=self.url, key=self.key)


class SourceFileChanged(SourceChanged):
    """A local file changed (size, mtime or ctime) while it was read for an upload."""

    final_message = "source file changed during the upload"


class DestinationExists(StoreError):
    """--no-clobber: DST already holds the key (412 to If-None-Match: *, a file in the way of a
    no-replace rename, or a HEAD before the write). Not a failure: the object is skipped and
    counted (engine/run/worker.py)."""

    retryable = False


class MalformedListing(StoreError):
    """The server's /list answer is not the contract's JSON: retrying will not help."""


class ListingBroken(StoreError):
    """The server's listing breaks S3's promises (order, progress, tokens): not retried."""


class ChecksumRefused(StoreError):
    """A write sent with a checksum header was refused for carrying it (s3proxy answers any
    x-amz-checksum-* with 501 NotImplemented): the store sends its writes without from then on."""


class PartsHalted(StoreError):
    """A part asked to be sent after another part of its upload failed: the upload is being
    aborted, so no request of it starts any more."""


class BackupFailed(StoreError):
    """copy / mv --backup-dir: the object DST holds could not be backed up, so it was not
    overwritten (and mv's source was not deleted): a failure of that object."""


class NotStored(StoreError):
    """The destination answered the write, but a HEAD after it does not find what was written."""


# ---------------------------------------------------------------- the way out of a step, not failures


class Exit(Exception):
    """The command is over with this exit code (main() maps it, as typer.Exit on typer's path)."""

    def __init__(self, exit_code: int = 0) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code


class Stopped(Exception):
    """A graceful stop was requested while this object was in flight; it is redone on resume."""


class LandingRefused(Exception):
    """A rename into place refused because the process is stopping at once: the object was not
    copied (its temporary file is removed), and it is not a failure either."""


class BodyRefused(Exception):
    """A body longer than the request asked to read whole, refused at its first bytes (the lean
    GET that finds one object reads it only when small): control flow, never shown to a user."""


class CapabilityAbsent(Exception):
    """The store declares it lacks what a case tests, and the case checked that it really does
    (a method of a capability it does not declare is absent or raises Unsupported). Not a
    failure: a pytest runner skips the case with this message."""


class MalformedXml(ValueError):
    """The answer is not the well-formed XML of the answer it should be."""
