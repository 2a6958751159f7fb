"""The Content-Type an upload gets from its name, one rule for the S3 store's PUTs and the engine's
object properties (engine/transfer/object_props.py), which may not import the S3 adapter."""

from __future__ import annotations


def content_type_for(key: str) -> str | None:
    """The Content-Type an upload gets from its name, as aws-cli guesses it (`mimetypes`):
    `.html` text/html, `.png` image/png, ...; None (S3's binary/octet-stream) when unknown."""
    import mimetypes

    kind, encoding = mimetypes.guess_type(key, strict=False)
    return kind if kind and not encoding else ("application/gzip" if encoding == "gzip" else kind)
