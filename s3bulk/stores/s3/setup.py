"""What the lean S3 data path needs before its first request: credentials and the bucket's address,
had without importing aiobotocore/aiohttp or parsing botocore's S3 model when that can be avoided.

Why: a copy of one small object spent most of its ~0.8 s in imports (aiobotocore -> aiohttp,
botocore.client) and in building an S3 client (the S3 model and endpoint rules, a few MB of JSON)
whose only use on the lean path was one presigned URL. Here:

- Credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY from the environment are read as botocore's
  EnvProvider reads them (it is first in botocore's chain unless a profile is given explicitly),
  and a plain profile's static keys as its file providers read them (profile_credentials);
  anything else goes to botocore's own credential chain (a sync session, no S3 model), so every
  source it knows (SSO, assume-role, web identity, credential_process, containers, instance
  metadata) keeps working.
- The address: the first run resolves it through botocore (store.py presigns a URL) and stores the
  result here, in memory (forked workers inherit it) and in $XDG_CACHE_HOME/s3bulk/endpoints.json.
  The entry's key is a hash of everything botocore's answer depends on: the bucket, the S3 options,
  every AWS_* environment variable except secrets, the identity (inode, size, mtime, ctime) of the
  AWS config and credentials files and of ~/.aws/models, and of the installed botocore and
  aiobotocore. Change any of them and the entry is simply not found. A wrong address cannot go
  unnoticed either: a region redirect hands the store to botocore for the rest of the run.
  The file holds addresses and regions only, never credentials.
- The settings of a side (settle, S3Settings in config/urls.py): the endpoint URL (--endpoint-url,
  AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's services section or endpoint_url), the
  region, the profile's `s3` section (addressing style...), FIPS/dual-stack, the CA bundle, the
  proxies: resolved once where a run starts, through botocore's own config chain, and kept in the
  same file under the same kind of key (the proxies, read from HTTP(S)_PROXY/NO_PROXY, are not
  kept: reading them costs nothing). Every S3 client, lean or botocore, is then built from them
  (pin, client_config, proxy_for), whatever the environment of the process it runs in.
- Without botocore at all where its answer is plain: the settings of a process with no AWS config
  or credentials file and no profile named (a Lambda function, a container, CI with keys in the
  environment) come from the environment variables botocore would read (settings_from_environment);
  the address of a bucket on an endpoint given as a URL, or on AWS in a commercial region, is
  written as botocore writes it (plain_address). Anything else (a config file, FIPS, dual-stack,
  accelerate, virtual-host addressing on a custom endpoint, bucket names with dots or capitals,
  other partitions) still goes to botocore. tests/test_s3_setup_plain.py holds both to botocore's
  own answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ...config.urls import S3Options, S3Settings
from .sigv4 import Credentials

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes at less compiling (quick_dataclass.py says why)
    from ...quick_dataclass import dataclass

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


def cache_key(bucket: str, opts: S3Options, environ: dict[str, str] | None = None, kind: str = "address") -> str:
    """Everything botocore's choice of address for `bucket` depends on, hashed (`kind`
    "settings": the settings of a side, bucket "")."""
    env = os.environ if environ is None else environ
    home = os.path.expanduser("~")
    config = env.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config")
    creds = env.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.join(home, ".aws", "credentials")
    models = os.path.join(home, ".aws", "models")
    parts = {
        "format": _FORMAT,
        "kind": kind,
        "bucket": bucket,
        "options": [opts.endpoint_url, opts.profile, opts.region, opts.no_sign_request, opts.path_style,
                    asdict(opts.settled) if opts.settled is not None else None],
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
    _store(key, asdict(resolved))


def _store(key: str, value: dict[str, Any]) -> None:
    """Write one entry into the cache file (best effort)."""
    path = _cache_path()
    entries = _read_file()
    entries.pop(key, None)
    entries[key] = value
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


# ------------------------------------------------------------------ the settings of a side

_SETTINGS_MEMO: dict[str, dict[str, Any]] = {}


def settle(opts: S3Options) -> S3Options:
    """`opts` with `settled` filled in from this process's options, environment and AWS config
    file (unchanged when it is already: what a run's driver resolved is never resolved again
    elsewhere). The one place a side's settings are resolved; raises UsageError for a profile
    that does not exist or a config file botocore cannot read."""
    if opts.settled is not None:
        return opts
    from dataclasses import replace

    return replace(opts, settled=resolve_settings(opts))


def resolve_settings(opts: S3Options) -> S3Settings:
    """The settings `opts` stand for here (settle). What comes from botocore's config chain is
    kept (memory and the cache file, keyed as addresses are: cache_key), so a run whose settings
    are known needs no botocore at all; the proxies are read from the environment every time."""
    plain = settings_from_environment(opts)
    if plain is not None:
        settings = _settings_from(plain, opts)
        assert settings is not None
        return settings
    key = cache_key("", opts, kind="settings")
    found: Any = _SETTINGS_MEMO.get(key)
    if found is None:
        raw = _read_file().get(key)
        found = raw.get("settings") if isinstance(raw, dict) else None
    settings = _settings_from(found, opts) if isinstance(found, dict) else None
    if settings is None:  # not known yet (or a damaged entry): ask botocore
        found = _from_botocore(opts)
        _store(key, {"settings": found})
        settings = _settings_from(found, opts)
        assert settings is not None
    _SETTINGS_MEMO[key] = found
    return settings


def _env_boolean(value: str) -> bool:
    """botocore.utils.ensure_boolean of an environment variable's value."""
    return value.lower() == "true"


def settings_from_environment(opts: S3Options, environ: dict[str, str] | None = None) -> dict[str, Any] | None:
    """What _from_botocore returns, read from the environment variables botocore's chain reads,
    when nothing else can have a say: no AWS config file, no credentials file (botocore merges its
    profiles into the config) and no profile named. None: ask botocore."""
    env = os.environ if environ is None else environ
    if opts.profile is not None or "AWS_PROFILE" in env or "AWS_DEFAULT_PROFILE" in env:
        return None
    for var, default in (("AWS_CONFIG_FILE", "~/.aws/config"), ("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials")):
        path = env.get(var, default)
        if not path or "$" in path or os.path.lexists(os.path.expanduser(path)):
            return None  # a file botocore would read (or a path it would expand first)
    endpoint = opts.endpoint_url
    if endpoint is None and not _env_boolean(env.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "")):
        endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None
    if endpoint is not None and not str(endpoint).startswith(("http://", "https://")):
        from ...errors import UsageError

        raise UsageError(f"invalid S3 endpoint URL {endpoint!r}: expected http://HOST[:PORT] or https://...")
    # the `s3` section: with no file, only the variables botocore lets override its keys
    s3: dict[str, Any] = {}
    for key, var, boolean in (("use_arn_region", "AWS_S3_USE_ARN_REGION", True),
                              ("us_east_1_regional_endpoint", "AWS_S3_US_EAST_1_REGIONAL_ENDPOINT", False),
                              ("s3_disable_multiregion_access_points", "AWS_S3_DISABLE_MULTIREGION_ACCESS_POINTS",
                               True)):
        if var in env:
            s3[key] = _env_boolean(env[var]) if boolean else env[var]
    if opts.path_style:
        s3["addressing_style"] = "path"
    ca_bundle = env.get("AWS_CA_BUNDLE") or None
    return {"endpoint_url": endpoint or None,
            "region": str(opts.region or env.get("AWS_DEFAULT_REGION") or "us-east-1"), "s3": s3,
            "use_fips_endpoint": _env_boolean(env.get("AWS_USE_FIPS_ENDPOINT", "")),
            "use_dualstack_endpoint": _env_boolean(env.get("AWS_USE_DUALSTACK_ENDPOINT", "")),
            "ca_bundle": os.path.abspath(os.path.expanduser(ca_bundle)) if ca_bundle else None,
            "proxies_config": {}}


_AWS_REGION = re.compile(r"(us|eu|ap|sa|ca|me|af|il|mx)-(?!gov-|iso)[a-z]+-\d{1,2}")
_VIRTUAL_BUCKET = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
_PATH_BUCKET = re.compile(r"[A-Za-z0-9._-]{1,255}")
_BOTOCORE_REGION = re.compile(r"^(?![0-9]+$)(?!-)[a-zA-Z0-9-]{,63}(?<!-)$")  # botocore.utils.validate_region_name


def plain_address(bucket: str, settings: S3Settings) -> Resolved | None:
    """The bucket's address as botocore writes it (store.py _resolve), where its rules come down to
    a line: an endpoint given as a URL, path-style (the endpoint, then /BUCKET/KEY); AWS in a
    commercial region, a bucket that is a DNS name without dots (https://BUCKET.s3.amazonaws.com/KEY,
    requests signed for the region). None for anything else: botocore resolves it."""
    s3 = dict(settings.s3)
    style = s3.pop("addressing_style", None)
    if s3 or settings.use_fips_endpoint or settings.use_dualstack_endpoint or style not in (None, "auto", "path"):
        return None  # accelerate, regional us-east-1, FIPS, dual-stack, virtual hosts...: botocore's rules
    endpoint = settings.endpoint_url
    if endpoint is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(endpoint)
        try:
            parts.port  # noqa: B018 (a port that is no number: botocore says so)
        except ValueError:
            return None
        if (parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment
                or not _PATH_BUCKET.fullmatch(bucket) or "@" in parts.netloc
                or not _BOTOCORE_REGION.match(settings.region)):
            return None  # botocore refuses a region that is no host label (InvalidRegionError)
        return Resolved(endpoint_url=endpoint, region=settings.region,
                        object_url=f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}/{bucket}/k",
                        signing_region=None, ca_bundle=settings.ca_bundle)
    region = settings.region
    if style == "path" or not _AWS_REGION.fullmatch(region) or not _VIRTUAL_BUCKET.fullmatch(bucket) \
            or "--" in bucket or bucket.startswith("xn--") or bucket.endswith("-s3alias"):
        return None
    return Resolved(endpoint_url="https://s3.amazonaws.com" if region == "us-east-1"
                    else f"https://s3.{region}.amazonaws.com", region=region,
                    object_url=f"https://{bucket}.s3.amazonaws.com/k", signing_region=None,
                    ca_bundle=settings.ca_bundle)


def _settings_from(found: dict[str, Any], opts: S3Options) -> S3Settings | None:
    proxies, no_proxy = _env_proxies()
    try:
        return S3Settings(endpoint_url=found["endpoint_url"], region=str(found["region"]),
                          s3=tuple(sorted(dict(found["s3"]).items())),
                          use_fips_endpoint=bool(found["use_fips_endpoint"]),
                          use_dualstack_endpoint=bool(found["use_dualstack_endpoint"]),
                          ca_bundle=found["ca_bundle"], proxies=proxies, no_proxy=no_proxy,
                          proxies_config=tuple(sorted(dict(found["proxies_config"]).items())),
                          no_sign_request=opts.no_sign_request)
    except (KeyError, TypeError, ValueError):
        return None


def _from_botocore(opts: S3Options) -> dict[str, Any]:
    """What botocore's own chain makes of the options, environment and config file: the same
    lookups a client would do (session.create_client), without building one."""
    import botocore.exceptions
    import botocore.session

    from ...errors import S3BulkError, UsageError

    try:
        session = botocore.session.Session(profile=opts.profile)
        endpoint = opts.endpoint_url
        if endpoint is None and not session.get_config_variable("ignore_configured_endpoint_urls"):
            # the chain botocore puts in every client's config store: AWS_ENDPOINT_URL_S3,
            # AWS_ENDPOINT_URL, the profile's services section, the profile's endpoint_url
            from botocore.configprovider import ConfiguredEndpointProvider

            endpoint = ConfiguredEndpointProvider(full_config=session.full_config,
                                                  scoped_config=session.get_scoped_config(),
                                                  client_name="s3").provide()
        region = opts.region or session.get_config_variable("region") or "us-east-1"
        s3 = dict(session.get_config_variable("s3") or {})
        if opts.path_style:
            s3["addressing_style"] = "path"
        ca_bundle = session.get_config_variable("ca_bundle")
        proxies_config = dict(session.get_config_variable("proxies_config") or {})
        fips = bool(session.get_config_variable("use_fips_endpoint"))
        dualstack = bool(session.get_config_variable("use_dualstack_endpoint"))
    except botocore.exceptions.ProfileNotFound:
        raise UsageError(f"AWS profile {opts.profile or os.environ.get('AWS_PROFILE')!r} not found") from None
    except botocore.exceptions.BotoCoreError as exc:
        # the files on this machine, not the command line: the run cannot start (exit 3, as before
        # the settings were resolved here)
        raise S3BulkError(f"invalid AWS configuration: {exc}") from None
    if endpoint is not None and not str(endpoint).startswith(("http://", "https://")):
        raise UsageError(f"invalid S3 endpoint URL {endpoint!r}: expected http://HOST[:PORT] or https://...")
    return {"endpoint_url": endpoint or None, "region": str(region), "s3": _plain(s3),
            "use_fips_endpoint": fips, "use_dualstack_endpoint": dualstack,
            "ca_bundle": os.path.abspath(os.path.expanduser(ca_bundle)) if ca_bundle else None,
            "proxies_config": _plain(proxies_config)}


def _plain(section: dict[str, Any]) -> dict[str, Any]:
    """A config section as JSON keeps it (strings, numbers, booleans; anything else as a string)."""
    return {str(k): v if isinstance(v, (str, int, float, bool)) or v is None else str(v) for k, v in section.items()}


def _env_proxies() -> tuple[tuple[tuple[str, str], ...], str | None]:
    """HTTP(S)_PROXY (either case, as urllib and botocore read them) without credentials, and NO_PROXY."""
    if sys.platform.startswith("linux") and not any(name[-6:].lower() == "_proxy" for name in os.environ):
        return (), None  # what getproxies() finds then, without importing urllib.request (http.client, email...)
    from urllib.request import getproxies

    found = getproxies()
    proxies = tuple((scheme, _without_credentials(_with_scheme(found[scheme])))
                    for scheme in ("http", "https") if found.get(scheme))
    return proxies, found.get("no") or None


def _with_scheme(proxy: str) -> str:
    if proxy.startswith(("http:", "https:")):
        return proxy
    return "http:" + proxy if proxy.startswith("//") else "http://" + proxy


def _without_credentials(proxy: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(proxy)
    if "@" not in parts.netloc:
        return proxy
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _with_local_credentials(proxy: str, scheme: str) -> str:
    """The proxy with the user:password this process's own environment gives the same proxy (the
    settings never carry them); as it is otherwise."""
    from urllib.request import getproxies

    mine = getproxies().get(scheme)
    if mine:
        mine = _with_scheme(mine)
        if "@" in mine and _without_credentials(mine) == proxy:
            return mine
    return proxy


def proxies_for(settings: S3Settings, url: str) -> dict[str, str]:
    """{scheme: proxy URL} for requests to `url`, as botocore.utils.get_environ_proxies gives them,
    but from the settings, not from this process's environment: none when NO_PROXY matches."""
    if not settings.proxies:
        return {}
    import urllib.request  # only now: it imports http.client, email, ...
    from urllib.parse import urlsplit

    if settings.no_proxy:
        try:  # urllib's matching, as botocore's proxy_bypass does it with NO_PROXY in the environment
            bypass: Any = getattr(urllib.request, "proxy_bypass_environment")
            if bypass(urlsplit(url).netloc, {"no": settings.no_proxy}):
                return {}
        except (TypeError, ValueError):
            pass
    return {scheme: _with_local_credentials(proxy, scheme) for scheme, proxy in settings.proxies}


def proxy_for(settings: S3Settings, url: str) -> str | None:
    """The proxy for `url` (proxies_for), or None."""
    from urllib.parse import urlsplit

    return proxies_for(settings, url).get(urlsplit(url).scheme)


def client_endpoint(settings: S3Settings) -> str:
    """The endpoint a client is made for, for matching NO_PROXY against it: the settings' URL, or
    AWS's for the region (as botocore makes it without FIPS or dual-stack)."""
    if settings.endpoint_url:
        return settings.endpoint_url
    return "https://s3.amazonaws.com" if settings.region == "us-east-1" else f"https://s3.{settings.region}.amazonaws.com"


def pin(session: Any, settings: S3Settings) -> None:
    """Make a botocore (or aiobotocore) session answer every address setting from `settings`, not
    from this process's environment or config file. What create_client gets explicitly (endpoint,
    region) would win anyway; the `s3` section must be replaced whole (a client's own s3 config is
    merged into the file's, so keys only this process's file has would leak in)."""
    store = session.get_component("config_store")
    for name, value in (("region", settings.region), ("ca_bundle", settings.ca_bundle),
                        ("s3", dict(settings.s3)), ("proxies_config", dict(settings.proxies_config)),
                        ("use_fips_endpoint", settings.use_fips_endpoint),
                        ("use_dualstack_endpoint", settings.use_dualstack_endpoint),
                        ("ignore_configured_endpoint_urls", True)):
        store.set_config_variable(name, value)


def client_args(settings: S3Settings) -> dict[str, Any]:
    """create_client's keyword arguments for `settings` (with a session pinned to them: pin)."""
    return {"endpoint_url": settings.endpoint_url, "region_name": settings.region, "verify": settings.ca_bundle}


def config_args(settings: S3Settings) -> dict[str, Any]:
    """A botocore Config's keyword arguments for `settings`: proxies chosen from them, never from
    this process's environment (an explicit dict, even empty, keeps botocore from reading it)."""
    out: dict[str, Any] = {"s3": dict(settings.s3), "proxies": proxies_for(settings, client_endpoint(settings)),
                           "proxies_config": dict(settings.proxies_config) or None,
                           "use_fips_endpoint": settings.use_fips_endpoint,
                           "use_dualstack_endpoint": settings.use_dualstack_endpoint,
                           "ignore_configured_endpoint_urls": True}
    if settings.no_sign_request:
        from botocore import UNSIGNED

        out["signature_version"] = UNSIGNED
    return out


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


# keys a profile may hold and still be plain static keys to botocore's chain: any other (role_arn,
# source_profile, credential_source, credential_process, sso_*, web_identity_token_file, login_*...)
# makes another provider answer first, or instead
_STATIC_PROFILE_KEYS = frozenset({
    "aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_security_token", "aws_account_id",
    "region", "output", "s3", "endpoint_url", "services", "ca_bundle", "max_attempts", "retry_mode",
    "parameter_validation", "tcp_keepalive", "use_fips_endpoint", "use_dualstack_endpoint",
    "ignore_configured_endpoint_urls", "s3_use_arn_region", "s3_us_east_1_regional_endpoint",
    "cli_pager", "cli_binary_format", "cli_timestamp_format", "cli_auto_prompt", "cli_history"})
_PROFILE_TOKENS = ("aws_security_token", "aws_session_token")  # botocore's order


def profile_credentials(opts: S3Options, environ: dict[str, str] | None = None) -> Credentials | None:
    """Static keys of a plain profile in the AWS credentials or config file, when botocore's chain
    would return exactly those (its shared-credentials-file or config-file provider): no keys or
    web identity in the environment, the profile holds nothing but keys and settings. Read with
    botocore's own file parser (botocore.configloader, without the session and the rest of the
    chain). None: ask botocore (roles, SSO, credential_process, a missing profile...)."""
    env = os.environ if environ is None else environ
    if any(env.get(v) for v in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                                 "AWS_SECURITY_TOKEN", "AWS_CREDENTIAL_EXPIRATION", "AWS_WEB_IDENTITY_TOKEN_FILE",
                                 "AWS_ROLE_ARN")):
        return None
    named = [env[v] for v in ("AWS_DEFAULT_PROFILE", "AWS_PROFILE") if v in env]
    if opts.profile is None and len(set(named)) > 1:
        return None
    profile = opts.profile if opts.profile is not None else (named[0] if named else "default")
    paths = []
    for var, default in (("AWS_CONFIG_FILE", "~/.aws/config"), ("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials")):
        path = env.get(var, default)
        if not path or "$" in path:
            return None
        paths.append(os.path.expanduser(path))
    config_file, creds_file = paths
    if not os.path.isfile(creds_file) and not os.path.isfile(config_file):
        return None
    import botocore.configloader
    import botocore.exceptions

    try:
        config = botocore.configloader.load_config(config_file) if os.path.isfile(config_file) else {}
        creds = botocore.configloader.raw_config_parse(creds_file) if os.path.isfile(creds_file) else {}
    except botocore.exceptions.BotoCoreError:
        return None  # botocore says what is wrong with the file
    in_config = dict(config.get("profiles", {}).get(profile) or {})
    in_creds = dict(creds.get(profile) or {})
    if set(in_config) - _STATIC_PROFILE_KEYS or set(in_creds) - _STATIC_PROFILE_KEYS:
        return None
    for section in (in_creds, in_config):  # the credentials file's provider comes first in the chain
        if "aws_access_key_id" in section:
            if "aws_secret_access_key" not in section:
                return None  # botocore names the missing key
            token = next((section[t] for t in _PROFILE_TOKENS if t in section), None)
            return Credentials(section["aws_access_key_id"], section["aws_secret_access_key"], token or None)
    return None


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
