"""The Content-Type an upload gets from its name, one rule for the S3 store's PUTs and the engine's
object properties (engine/transfer/object_props.py), which may not import the S3 adapter."""

from __future__ import annotations

# a name's last suffix (".txt") -> its guess: mimetypes answers from the suffix alone unless it is
# an encoding's (".gz": the suffix before it counts too) or the name holds a scheme ("data:");
# asked once per suffix, not once per upload (~1.5 us, most of it urllib's and posixpath's layers)
_BY_SUFFIX: dict[str, str | None] = {}
_CHAINED: frozenset[str] = frozenset()  # suffixes mimetypes reads the one before of (".gz", ".tgz")


def content_type_for(key: str) -> str | None:
    """The Content-Type an upload gets from its name, as aws-cli guesses it (`mimetypes`):
    `.html` text/html, `.png` image/png, ...; None (S3's binary/octet-stream) when unknown."""
    if ":" in key:
        return _guess(key)  # maybe a scheme ("data:text/html,..." is text/html)
    dot = key.rfind(".")
    slash = key.rfind("/")
    if dot <= slash:
        return None  # no suffix
    # a suffix as posixpath.splitext sees it: not the name's leading dots
    if dot > slash + 1 and key[dot - 1] != ".":
        suffix = key[dot:]
        if suffix in _BY_SUFFIX:
            return _BY_SUFFIX[suffix]
        kind = _guess(key)
        if suffix.lower() not in _CHAINED:
            if len(_BY_SUFFIX) > 4096:  # only a run of ever new suffixes gets here
                _BY_SUFFIX.clear()
            _BY_SUFFIX[suffix] = kind
        return kind
    return _guess(key)


def _guess(key: str) -> str | None:
    global _CHAINED
    import mimetypes

    if not _CHAINED:
        _CHAINED = frozenset(s.lower() for s in (*mimetypes.encodings_map, *mimetypes.suffix_map))
    kind, encoding = mimetypes.guess_type(key, strict=False)
    return kind if kind and not encoding else ("application/gzip" if encoding == "gzip" else kind)
