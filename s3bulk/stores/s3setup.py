"""What the lean S3 data path needs before its first request: credentials and the bucket's address,
had without importing aiobotocore/aiohttp or parsing botocore's S3 model when that can be avoided.

Why: a copy of one small object spent most of its ~0.8 s in imports (aiobotocore -> aiohttp,
botocore.client) and in building an S3 client (the S3 model and endpoint rules, a few MB of JSON)
whose only use on the lean path was one presigned URL. Here:

- Credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY from the environment are read as botocore's
  EnvProvider reads them (it is first in botocore's chain unless a profile is given explicitly);
  anything else goes to botocore's own credential chain (a sync session, no S3 model), so every
  source it knows keeps working.
- The address: the first run resolves it through botocore (s3.py presigns a URL) and stores the
  result here, in memory (forked workers inherit it) and in $XDG_CACHE_HOME/s3bulk/endpoints.json.
  The entry's key is a hash of everything botocore's answer depends on: the bucket, the S3 options,
  every AWS_* environment variable except secrets, the identity (inode, size, mtime, ctime) of the
  AWS config and credentials files and of ~/.aws/models, and of the installed botocore and
  aiobotocore. Change any of them and the entry is simply not found. A wrong address cannot go
  unnoticed either: a region redirect hands the store to botocore for the rest of the run.
  The file holds addresses and regions only, never credentials.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any, Awaitable, Callable

from ..urls import S3Options
from .sigv4 import Credentials

CredentialSource = Callable[[], Awaitable[Credentials | None]]

_FORMAT = 1
_MAX_ENTRIES = 64
# environment variables whose values are secret or change with every credential refresh: they never
# decide an address, so they are left out of the key (and nothing of them is ever written)
_SECRET_WORDS = ("SECRET", "TOKEN", "PASSWORD", "ACCESS_KEY_ID", "CREDENTIAL_EXPIRATION", "ACCOUNT_ID")


@dataclass(frozen=True, slots=True)
class Resolved:
    """Where botocore sends this bucket's requests, as the lean path needs it."""

    endpoint_url: str          # the client's endpoint (identity for server-side copies)
    region: str | None         # the client's region
    object_url: str            # the address of key "k": scheme://host[:port]/[bucket/]k
    signing_region: str | None  # the region requests are signed for (None: unsigned)
    ca_bundle: str | None      # AWS_CA_BUNDLE / ca_bundle of the profile

    def wire_url(self) -> str:
        """The URL S3Wire is built from: it reads the signing region from a presigned URL's scope
        (the credential part of the scope is a placeholder: no key id is ever stored)."""
        if self.signing_region is None:
            return self.object_url
        return f"{self.object_url}?X-Amz-Credential=-%2F-%2F{self.signing_region}%2Fs3%2Faws4_request"


_MEMO: dict[str, Resolved] = {}


def _file_id(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _package_id(name: str) -> Any:
    """The installed package, by its __init__'s identity: an upgrade rewrites it (no import needed)."""
    from importlib.util import find_spec

    try:
        spec = find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None)
    return (origin, _file_id(origin)) if origin else None


def cache_key(bucket: str, opts: S3Options, environ: dict[str, str] | None = None) -> str:
    """Everything botocore's choice of address for `bucket` depends on, hashed."""
    env = os.environ if environ is None else environ
    home = os.path.expanduser("~")
    config = env.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config")
    creds = env.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.join(home, ".aws", "credentials")
    models = os.path.join(home, ".aws", "models")
    parts = {
        "format": _FORMAT,
        "bucket": bucket,
        "options": [opts.endpoint_url, opts.profile, opts.region, opts.no_sign_request, opts.path_style],
        "env": sorted((k, v) for k, v in env.items()
                      if k.startswith("AWS_") and not any(w in k for w in _SECRET_WORDS)),
        "files": [os.path.expanduser(config), _file_id(os.path.expanduser(config)),
                  os.path.expanduser(creds), _file_id(os.path.expanduser(creds)),
                  _file_id(models), _file_id(os.path.join(models, "s3"))],
        "packages": [_package_id("botocore"), _package_id("aiobotocore")],
        "python": sys.version_info[:2],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _cache_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "s3bulk", "endpoints.json")


def _read_file() -> dict[str, Any]:
    try:
        with open(_cache_path(), "rb") as f:
            data = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("entries"), dict):
        return {}
    return data["entries"]


def lookup(key: str) -> Resolved | None:
    """The address resolved earlier under this key, from memory or the cache file; None if unknown."""
    hit = _MEMO.get(key)
    if hit is not None:
        return hit
    raw = _read_file().get(key)
    if not isinstance(raw, dict):
        return None
    try:
        hit = Resolved(**{k: raw[k] for k in Resolved.__slots__})
    except (KeyError, TypeError):
        return None
    _MEMO[key] = hit
    return hit


def remember(key: str, resolved: Resolved) -> None:
    """Keep `resolved` for this process and the next runs (best effort: a read-only or missing
    cache directory, as on Lambda, only means the next run resolves again)."""
    _MEMO[key] = resolved
    path = _cache_path()
    entries = _read_file()
    entries.pop(key, None)
    entries[key] = asdict(resolved)
    while len(entries) > _MAX_ENTRIES:
        entries.pop(next(iter(entries)))  # oldest first: dicts keep insertion order
    import threading

    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"  # one per writer: processes and threads
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"format": _FORMAT, "entries": entries}, f)
        os.replace(tmp, path)  # readers see the old file or the new one, never half of one
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def forget(key: str) -> None:
    """Drop an entry that turned out not to fit (the store then resolves through botocore)."""
    _MEMO.pop(key, None)


# ------------------------------------------------------------------ credentials


def env_credentials(opts: S3Options, environ: dict[str, str] | None = None) -> Credentials | None:
    """Static credentials from the environment when botocore's chain would return exactly those:
    no explicit profile (which makes botocore skip the environment), both keys set, and no
    AWS_CREDENTIAL_EXPIRATION (botocore then refreshes them). None: ask botocore."""
    env = os.environ if environ is None else environ
    if opts.profile is not None:
        return None
    access, secret = env.get("AWS_ACCESS_KEY_ID", ""), env.get("AWS_SECRET_ACCESS_KEY", "")
    if not access or not secret or env.get("AWS_CREDENTIAL_EXPIRATION", ""):
        return None
    token = env.get("AWS_SECURITY_TOKEN", "") or env.get("AWS_SESSION_TOKEN", "") or None
    return Credentials(access, secret, token)


class BotocoreCredentials:
    """botocore's whole credential chain (profiles, SSO, assume-role, web identity, process,
    container and instance metadata) through a plain botocore session: no S3 model, no aiohttp.
    Its resolving and refreshing may block on the network (STS, IMDS), so both run in a thread."""

    def __init__(self, profile: str | None) -> None:
        import botocore.session

        self.session = botocore.session.Session(profile=profile)
        self._creds: Any = None

    async def resolve(self) -> bool:
        """Look the credentials up; False when the chain has none."""
        import asyncio

        self._creds = await asyncio.to_thread(self.session.get_credentials)
        return self._creds is not None

    async def frozen(self) -> Credentials | None:
        import asyncio

        c = self._creds
        if c is None:
            return None
        if hasattr(c, "refresh_needed"):  # RefreshableCredentials: a refresh is a blocking call
            f = await asyncio.to_thread(c.get_frozen_credentials)
        else:
            f = c.get_frozen_credentials()
        return Credentials(f.access_key, f.secret_key, f.token)
