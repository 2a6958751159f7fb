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
from typing import NamedTuple
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


def canonical_request(method: str, host: str, path: str, query: str, headers: dict[str, str],
                      payload_hash: str) -> tuple[str, str]:
    """(the canonical request, the signed header names) of a request whose header names are
    lower-case and whose path and query are what goes on the request line; host and every header
    in `headers` are signed. Apart from Signer.sign so that tests can set it beside botocore's."""
    names = [*headers, "host"]  # every header we set is signed, as botocore does
    names.sort()
    # SigV4's Trimall, as botocore does it: whitespace at either end dropped, each run inside one
    # space (servers recompute the signature over the value so; a header sent "a  b" is signed "a b")
    # (the two the signer sets itself hold no whitespace: not split, ~0.2 us a request)
    canon_headers = "".join([f"{n}:{host if n == 'host' else headers[n] if n in _OWN else ' '.join(headers[n].split())}\n"
                             for n in names])
    signed = ";".join(names)
    return f"{method}\n{path}\n{query}\n{canon_headers}\n{signed}\n{payload_hash}", signed


def string_to_sign(amz_date: str, scope: str, request: str) -> str:
    return f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(request.encode()).hexdigest()}"


class Signer:
    """Signs requests for one region and service with whatever credentials it is given."""

    __slots__ = ("region", "service", "_key_cache", "_second", "_amz_date", "_scope_date")

    def __init__(self, region: str, service: str = "s3") -> None:
        self.region = region
        self.service = service
        self._key_cache: tuple[str, str, bytes] | None = None  # (date, secret, key)
        self._second = -1
        self._amz_date = ""
        self._scope_date = ""

    def _dates(self) -> tuple[str, str]:
        now = int(time.time())
        if now != self._second:
            self._second = now
            self._amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
            self._scope_date = self._amz_date[:8]
        return self._amz_date, self._scope_date

    def _signing_key(self, date: str, secret: str) -> bytes:
        cached = self._key_cache
        if cached is not None and cached[0] == date and cached[1] == secret:
            return cached[2]
        key = hmac.digest(("AWS4" + secret).encode(), date.encode(), "sha256")
        for part in (self.region, self.service, "aws4_request"):
            key = hmac.digest(key, part.encode(), "sha256")
        self._key_cache = (date, secret, key)
        return key

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
        scope = f"{date}/{self.region}/{self.service}/aws4_request"
        to_sign = string_to_sign(amz_date, scope, request)
        signature = hmac.digest(self._signing_key(date, creds.secret_key), to_sign.encode(), "sha256").hex()
        headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={creds.access_key}/{scope}, "
                                    f"SignedHeaders={signed}, Signature={signature}")
        return headers
