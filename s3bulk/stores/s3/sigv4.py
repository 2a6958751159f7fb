"""AWS Signature Version 4 for S3 requests, for the lean data path.

botocore signs every request through a chain of event handlers; for a 100-byte GET that
costs more than the transfer. Here one request costs one SHA-256 of the canonical request
and one HMAC: the signing key is derived once per day and region, the date strings once
per second. Credentials still come from botocore's resolver (every source it knows),
refreshed by the caller; this module never sees where they came from.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from hashlib import sha256
from typing import Any, NamedTuple
from urllib.parse import quote

UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class Credentials(NamedTuple):
    access_key: str
    secret_key: str
    token: str | None = None

    def __repr__(self) -> str:  # never print the secret
        return f"Credentials(access_key={self.access_key!r}, secret_key=***, token={'***' if self.token else None})"


_PLAIN_PATH = re.compile(r"[A-Za-z0-9_.~/-]*")  # what quote(safe="/~") leaves as it is
_PLAIN = re.compile(r"[A-Za-z0-9_.~-]*")


def uri_encode(text: str, *, keep_slash: bool) -> str:
    """SigV4 URI encoding: everything but unreserved characters is %XX (UTF-8). A text with nothing
    to encode (most keys) is returned after one regex match, not urllib's layers (~2 us a request)."""
    if (_PLAIN_PATH if keep_slash else _PLAIN).fullmatch(text) is not None:
        return text
    return quote(text, safe="/~" if keep_slash else "~")


def canonical_query(params: dict[str, str]) -> str:
    """Encoded query string, sorted by the encoded names (SigV4's order, botocore's: not the same
    as the names' own order when one holds a character that is encoded); sent and signed as it is."""
    pairs = sorted((uri_encode(k, keep_slash=False), uri_encode(v, keep_slash=False)) for k, v in params.items())
    return "&".join(f"{k}={v}" for k, v in pairs)


_OWN = frozenset(("x-amz-date", "x-amz-content-sha256"))
_HOST, _AS_IS, _TRIMMED = 0, 1, 2  # how a signed header's value goes into the canonical request
# the header names of a request, in the order set -> (each name in SigV4's order with how its value
# is written, the signed names joined): a run sends a handful of distinct sets (a PUT's, a GET's),
# so sorting them is done once per set, not once per request (~0.7 us)
_ORDERS: dict[tuple[str, ...], tuple[tuple[tuple[str, int], ...], str]] = {}


def _order(names: tuple[str, ...]) -> tuple[tuple[tuple[str, int], ...], str]:
    hit = _ORDERS.get(names)
    if hit is None:
        ordered = sorted((*names, "host"))
        hit = (tuple((n, _HOST if n == "host" else _AS_IS if n in _OWN else _TRIMMED) for n in ordered),
               ";".join(ordered))
        if len(_ORDERS) > 256:  # only a caller sending ever new header names gets here
            _ORDERS.clear()
        _ORDERS[names] = hit
    return hit


def canonical_request(method: str, host: str, path: str, query: str, headers: dict[str, str],
                      payload_hash: str) -> tuple[str, str]:
    """(the canonical request, the signed header names) of a request whose header names are
    lower-case and whose path and query are what goes on the request line; host and every header
    in `headers` are signed. Apart from Signer.sign so that tests can set it beside botocore's."""
    ordered, signed = _order(tuple(headers))  # every header we set is signed, as botocore does
    # SigV4's Trimall, as botocore does it: whitespace at either end dropped, each run inside one
    # space (servers recompute the signature over the value so; a header sent "a  b" is signed "a b")
    # (the two the signer sets itself hold no whitespace: not split, ~0.2 us a request)
    canon_headers = "".join([f"{n}:{' '.join(headers[n].split())}\n" if how == _TRIMMED else
                             f"{n}:{headers[n]}\n" if how == _AS_IS else f"host:{host}\n" for n, how in ordered])
    return f"{method}\n{path}\n{query}\n{canon_headers}\n{signed}\n{payload_hash}", signed


def string_to_sign(amz_date: str, scope: str, request: str) -> str:
    return f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{sha256(request.encode()).hexdigest()}"


def _hmac_pads(key: bytes) -> tuple[Any, Any]:
    """HMAC-SHA256 under `key` as two SHA-256 states that have taken the padded key (RFC 2104):
    a request's signature is then two copies and three updates (~1 us) where hmac.digest sets
    the key up again on every call (~2 us)."""
    padded = key.ljust(64, b"\0")  # a derived signing key is 32 bytes: never longer than the block
    return (sha256(padded.translate(_IPAD)), sha256(padded.translate(_OPAD)))


_IPAD = bytes(b ^ 0x36 for b in range(256))
_OPAD = bytes(b ^ 0x5C for b in range(256))


class Signer:
    """Signs requests for one region and service with whatever credentials it is given. What does
    not change from one request to the next is kept: the date strings (per second), the signing
    key, its HMAC states and the scope (per day, secret and region), the credential's part of the
    Authorization header (per scope and access key). Each is keyed by what it is made from, so a
    new day, region or credential makes it again."""

    __slots__ = ("region", "service", "_key_cache", "_second", "_amz_date", "_scope_date",
                 "_credential")

    def __init__(self, region: str, service: str = "s3") -> None:
        self.region = region
        self.service = service
        # (date, secret, region, key, its HMAC states, the scope)
        self._key_cache: tuple[str, str, str, bytes, Any, Any, str] | None = None
        self._second = -1
        self._amz_date = ""
        self._scope_date = ""
        self._credential = ("", "", "")  # (scope, access key, "AWS4-HMAC-SHA256 Credential=.../scope, SignedHeaders=")

    def _dates(self) -> tuple[str, str]:
        now = int(time.time())
        if now != self._second:
            self._second = now
            self._amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
            self._scope_date = self._amz_date[:8]
        return self._amz_date, self._scope_date

    def _signing_key(self, date: str, secret: str) -> bytes:
        return self._keyed(date, secret)[3]

    def _keyed(self, date: str, secret: str) -> tuple[str, str, str, bytes, Any, Any, str]:
        cached = self._key_cache
        if cached is not None and cached[0] == date and cached[1] == secret and cached[2] == self.region:
            return cached
        key = hmac.digest(("AWS4" + secret).encode(), date.encode(), "sha256")
        for part in (self.region, self.service, "aws4_request"):
            key = hmac.digest(key, part.encode(), "sha256")
        inner, outer = _hmac_pads(key)
        scope = f"{date}/{self.region}/{self.service}/aws4_request"
        self._key_cache = cached = (date, secret, self.region, key, inner, outer, scope)
        return cached

    def sign(self, creds: Credentials, method: str, host: str, path: str, query: str,
             headers: dict[str, str], payload_hash: str = UNSIGNED_PAYLOAD) -> dict[str, str]:
        """Add the SigV4 headers to `headers` (names lower-case) and return it.

        `path` and `query` must be exactly what goes on the request line (already encoded).
        Signed: host and every header in `headers` (S3 requires at least host and the x-amz-* ones;
        Content-Length, added by the HTTP client, is not)."""
        amz_date, date = self._dates()
        headers["x-amz-date"] = amz_date
        headers["x-amz-content-sha256"] = payload_hash
        if creds.token:
            headers["x-amz-security-token"] = creds.token
        request, signed = canonical_request(method, host, path, query, headers, payload_hash)
        keyed = self._keyed(date, creds.secret_key)
        scope = keyed[6]
        inner = keyed[4].copy()
        inner.update(string_to_sign(amz_date, scope, request).encode())
        outer = keyed[5].copy()
        outer.update(inner.digest())
        credential = self._credential
        if credential[0] != scope or credential[1] != creds.access_key:
            credential = self._credential = (scope, creds.access_key,
                                             f"AWS4-HMAC-SHA256 Credential={creds.access_key}/{scope}, SignedHeaders=")
        headers["authorization"] = f"{credential[2]}{signed}, Signature={outer.hexdigest()}"
        return headers
