"""Turn what the user typed ("s3://b/p", "/local/dir", "http://host:port/") into a Location.

A Location is a picklable description of a store plus a key prefix; workers open
their own clients from it after they start, so nothing live crosses a process.
"""

from __future__ import annotations

import os
import re
from dataclasses import field, replace
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from ..errors import UsageError

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ..quick_dataclass import dataclass

_BUCKET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")


@dataclass(frozen=True, slots=True)
class S3Settings:
    """Every non-secret setting that decides where one S3 side's requests go and how, resolved once
    from the options, the environment and the AWS config file (stores/s3/setup.py: settle). A run's
    plan carries them to every worker process, Dask task and Lambda call, which then use exactly
    these and none of their own environment: the endpoint is part of the address of the data, and
    a worker that read its own could read or write elsewhere than the driver checked. Credentials
    are not here: each worker resolves its own (environment, profile, instance role)."""

    endpoint_url: str | None   # None: AWS's own endpoint for the region (nothing configured elsewhere counts)
    region: str                # "us-east-1" where none is configured: what botocore uses for S3 then
    s3: tuple[tuple[str, object], ...] = ()  # the profile's `s3` section (addressing_style, ...), --path-style in it
    use_fips_endpoint: bool = False
    use_dualstack_endpoint: bool = False
    ca_bundle: str | None = None   # AWS_CA_BUNDLE or the profile's ca_bundle, as an absolute path
    # HTTP(S)_PROXY as {scheme: proxy URL} without any user:password (a secret: a worker adds its own,
    # from its environment, when it names the same proxy), and NO_PROXY as it was
    proxies: tuple[tuple[str, str], ...] = ()
    no_proxy: str | None = None
    proxies_config: tuple[tuple[str, object], ...] = ()  # proxy_ca_bundle, proxy_client_cert, ... of the profile
    no_sign_request: bool = False

    @property
    def addressing_style(self) -> str | None:
        style = dict(self.s3).get("addressing_style")
        return None if style is None else str(style)

    def describe_endpoint(self) -> str:
        """The endpoint for messages: its URL, or AWS's for the region."""
        return self.endpoint_url or f"AWS S3 ({self.region})"


@dataclass(frozen=True, slots=True)
class S3Options:
    """How to reach one S3 side. None means: let botocore's usual chain decide (env, config files),
    once, where the run starts (`settled`, filled in by stores/s3/setup.py settle)."""

    endpoint_url: str | None = None
    profile: str | None = None
    region: str | None = None
    no_sign_request: bool = False
    path_style: bool = False
    # SSE-C: the customer key this side's objects are encrypted with (32 raw bytes), sent on every
    # read (GET, HEAD) and as the copy source's key on a server-side copy from here. It says how to
    # read the objects, not where they are: left out of comparisons, the address cache and reprs.
    sse_c_key: bytes | None = field(default=None, compare=False)
    settled: S3Settings | None = None  # what the options above resolved to (None: not resolved yet)

    def __repr__(self) -> str:  # never anything secret in here, but keep reprs short
        return (f"S3Options(endpoint_url={self.endpoint_url!r}, profile={self.profile!r}, "
                f"region={self.region!r}, no_sign_request={self.no_sign_request}, path_style={self.path_style})")


@dataclass(frozen=True, slots=True)
class Location:
    """A store and a prefix within it.

    kind:   "s3", "local", "http" or "memory" (stores/memory.py, for tests: in-process only)
    root:   what the keys live under: the S3 bucket's name, the local root directory (absolute),
            the list/get server's base URL, or the memory bucket's name in the process's registry
    prefix: the key prefix ("" for all); keys are always "/"-separated
    """

    kind: str
    root: str
    prefix: str
    raw: str
    s3: S3Options = S3Options()

    # What kind of place this is, asked by what the engine decides before any store is open (the
    # planner's checks, the journal's and hints' identity): the engine names no kind of store.
    @property
    def is_s3(self) -> bool:
        """An S3 bucket (with this side's S3 options), not a memory bucket."""
        return self.kind == "s3"

    @property
    def is_bucket(self) -> bool:
        """A bucket of keys (S3, or the in-memory store's): what keeps versions and multipart
        uploads, unlike a directory or a list/get server."""
        return self.kind in ("s3", "memory")

    @property
    def is_local(self) -> bool:
        """A directory (or a file) on this machine."""
        return self.kind == "local"

    @property
    def writable(self) -> bool:
        """Whether objects can be written (or deleted) here: all but a list/get server."""
        return self.kind != "http"

    @property
    def lists_in_order(self) -> bool:
        """Whether keys are listed in order after a key (by key range): all but a list/get server,
        which pages by token only."""
        return self.kind != "http"

    @property
    def remote(self) -> bool:
        """Whether its store is reached by requests over the network (S3, a list/get server), not
        this machine's files or the process's memory."""
        return self.kind in ("s3", "http")

    @property
    def served_here(self) -> bool:
        """Whether its server (an S3 endpoint, a list/get server) listens on this machine's loopback
        (localhost, 127.x, ::1): it then spends its CPU on the cores this run's workers use."""
        if self.kind == "s3":
            settled = self.s3.settled
            url = settled.endpoint_url if settled is not None else self.s3.endpoint_url
        elif self.kind == "http":
            url = self.root
        else:
            return False
        if not url:
            return False
        from urllib.parse import urlsplit

        host = urlsplit(url).hostname or ""
        return host in ("localhost", "::1") or host.startswith("127.")

    def same_store(self, other: "Location") -> bool:
        """Whether both are in one store: this machine's files, or one bucket (server, memory
        bucket) reached with the same S3 options. Prefixes are not compared."""
        if self.kind != other.kind:
            return False
        return self.is_local or (self.root == other.root and self.s3 == other.s3)

    @property
    def bucket(self) -> str:
        """The bucket's name (S3 and memory locations only: a directory or a URL is no bucket)."""
        if self.kind not in ("s3", "memory"):
            raise AttributeError(f"a {self.kind} location has no bucket (its root is {self.root!r})")
        return self.root

    def url_for(self, key: str) -> str:
        """A user-facing address of one key, for messages."""
        if self.kind == "s3":
            return f"s3://{self.root}/{key}"
        if self.kind == "local":
            return os.path.join(self.root, key) if key else self.root
        if self.kind == "memory":
            return f"memory://{self.root}/{key}"
        return f"{self.root.rstrip('/')}/get/{key}"

    def with_prefix(self, prefix: str) -> "Location":
        return replace(self, prefix=prefix)

    @property
    def display(self) -> str:
        return self.url_for(self.prefix)


def parse_location(text: str, s3: S3Options | None = None) -> Location:
    """Parse a SRC or DST argument, or raise UsageError with a one-line reason."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("empty location: give an s3://bucket/prefix URL or a local path")
    if "\x00" in text:
        raise UsageError("location contains a NUL character")
    if text.startswith("s3://") or text.startswith("S3://"):
        rest = text[5:]
        bucket, _, prefix = rest.partition("/")
        if not bucket:
            raise UsageError(f"malformed S3 URL {text!r}: no bucket name (expected s3://BUCKET/PREFIX)")
        if not _BUCKET.match(bucket):
            raise UsageError(f"malformed S3 URL {text!r}: {bucket!r} is not a valid bucket name")
        return Location("s3", bucket, prefix, text, s3 or S3Options())
    if text.startswith("memory://"):
        name, _, prefix = text[9:].partition("/")
        if not name:
            raise UsageError(f"malformed memory URL {text!r}: no bucket name (expected memory://NAME/PREFIX)")
        return Location("memory", name, prefix, text)
    if text.startswith("file://"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise UsageError(f"malformed file URL {text!r}: only file:///path on this machine is supported")
        return _local(unquote(parts.path), text)
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", text)
    if m:
        scheme = m.group(1).lower()
        if scheme in ("http", "https"):
            parts = urlsplit(text)
            if not parts.hostname:
                raise UsageError(f"malformed URL {text!r}: no host")
            try:
                parts.port
            except ValueError:
                raise UsageError(f"malformed URL {text!r}: bad port") from None
            base = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
            return Location("http", base, "", text)
        raise UsageError(f"unsupported URL scheme {scheme!r} in {text!r} (use s3://, http(s):// or a local path)")
    if re.match(r"^[A-Za-z0-9+.-]+:/", text) and not os.path.exists(text):
        raise UsageError(f"malformed URL {text!r} (did you mean {text.split(':', 1)[0]}://...?)")
    return _local(text, text)


def _local(path: str, raw: str) -> Location:
    if not path:
        raise UsageError(f"malformed local path {raw!r}")
    return Location("local", os.path.abspath(os.path.expanduser(path)), "", raw)


def pipe_target(text: str, s3: S3Options | None = None, *, writing: bool) -> tuple[Location, str]:
    """The store and the one key a pipe (`copy - DST`, `copy SRC -`, `cat URL`) reads or writes:
    an S3 key, a local file (its directory is the store), or a list/get server's
    http://HOST:PORT/get/NAME. A prefix, a directory or a bare server is a UsageError."""
    loc = parse_location(text, s3)
    if loc.kind in ("s3", "memory"):
        if not loc.prefix or loc.prefix.endswith("/"):
            if writing:
                raise UsageError(f"{text} names a prefix; stdin has no name, so give the object's full key")
            raise UsageError(f"{text} names a prefix, not one object: give the full key of one object")
        return loc, loc.prefix
    if loc.kind == "local":
        if os.path.isdir(loc.root) or text.endswith(("/", os.sep)):
            raise UsageError(f"{text} is a directory: give a file name"
                             + ("; stdin has no name of its own" if writing else ""))
        return Location("local", os.path.dirname(loc.root), "", text), os.path.basename(loc.root)
    if writing:
        raise UsageError(f"{text} cannot be written to (a list/get server is read-only)")
    base, sep, name = loc.root.partition("/get/")
    if not sep or not name:
        raise UsageError(f"{text} names no file: give http://HOST:PORT/get/NAME")
    return Location("http", base, "", text), unquote(name)
