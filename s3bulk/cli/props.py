"""The object-property options of copy, sync and mv (aws-cli's names), declared once for typer;
their group, PropsOptions, is in groups.py. Their values are checked and turned into one WriteProps by
config/property_options.py (no typer there: the Lambda handler takes the same options)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..config.property_options import ACLS, STORAGE_CLASSES, customer_keys, write_props
from .groups import PropsOptions  # the group, typer-free

__all__ = ["ACLS", "STORAGE_CLASSES", "PropsOptions", "customer_keys", "write_props"]

O = typer.Option
_P = "Object properties (as aws-cli)"
ContentType = Annotated[Optional[str], O("--content-type", metavar="TYPE", help="Content-Type of every object written (default: guessed from the name on upload, the source's on an S3-to-S3 copy)", rich_help_panel=_P)]
NoGuess = Annotated[bool, O("--no-guess-mime-type", help="do not guess Content-Type from file names", rich_help_panel=_P)]
Metadata = Annotated[Optional[str], O("--metadata", metavar="K=V,...", help="user metadata (x-amz-meta-*) as k=v,k2=v2 or a JSON object; replaces the source's", rich_help_panel=_P)]
CacheControl = Annotated[Optional[str], O("--cache-control", metavar="VALUE", help="Cache-Control of every object written (e.g. max-age=3600), kept by S3 and sent back with each GET", rich_help_panel=_P)]
ContentDisposition = Annotated[Optional[str], O("--content-disposition", metavar="VALUE", help="Content-Disposition of every object written (e.g. 'attachment; filename=a.pdf')", rich_help_panel=_P)]
ContentEncoding = Annotated[Optional[str], O("--content-encoding", metavar="VALUE", help="Content-Encoding of every object written (e.g. gzip for bytes already compressed: nothing is compressed here)", rich_help_panel=_P)]
ContentLanguage = Annotated[Optional[str], O("--content-language", metavar="VALUE", help="Content-Language of every object written (e.g. en-US)", rich_help_panel=_P)]
Expires = Annotated[Optional[str], O("--expires", metavar="TIME", help="Expires header: ISO 8601 (2030-01-01T00:00:00Z) or an HTTP date", rich_help_panel=_P)]
StorageClass = Annotated[Optional[str], O("--storage-class", metavar="CLASS", help="STANDARD, STANDARD_IA, INTELLIGENT_TIERING, GLACIER_IR, ...", rich_help_panel=_P)]
Acl = Annotated[Optional[str], O("--acl", metavar="ACL", help="canned ACL: private, public-read, bucket-owner-full-control, ...", rich_help_panel=_P)]
Tagging = Annotated[Optional[str], O("--tagging", metavar="K=V&K2=V2", help="tags, URL-encoded as S3 takes them; replaces the source's", rich_help_panel=_P)]
Sse = Annotated[Optional[str], O("--sse", metavar="AES256|aws:kms", help="server-side encryption", rich_help_panel=_P)]
SseKmsKeyId = Annotated[Optional[str], O("--sse-kms-key-id", metavar="KEY", help="KMS key for --sse aws:kms", rich_help_panel=_P)]
SseC = Annotated[Optional[str], O("--sse-c", metavar="AES256", help="S3 objects are encrypted with a key of your own (--sse-c-key), sent with each request that writes or reads them", rich_help_panel=_P)]
SseCKey = Annotated[Optional[str], O("--sse-c-key", metavar="KEY", help="the 32-byte key for --sse-c, or fileb://PATH", rich_help_panel=_P)]
SseCCopySource = Annotated[Optional[str], O("--sse-c-copy-source", metavar="AES256", help="S3 SRC: its objects are encrypted with a key of your own (--sse-c-copy-source-key), sent to read them", rich_help_panel=_P)]
SseCCopySourceKey = Annotated[Optional[str], O("--sse-c-copy-source-key", metavar="KEY", help="the 32-byte key SRC's objects were encrypted with, or fileb://PATH (on a download --sse-c-key does the same, as in aws-cli)", rich_help_panel=_P)]
RequestPayer = Annotated[Optional[str], O("--request-payer", metavar="requester", help="accept requester-pays charges (sent on every S3 request, reads too)", rich_help_panel=_P)]
CopyProps = Annotated[str, O("--copy-props", metavar="MODE", help="S3-to-S3: what is carried from the source: none, metadata-directive (system and user metadata), default (also tags and storage class)", rich_help_panel=_P)]
MetadataDirective = Annotated[Optional[str], O("--metadata-directive", metavar="COPY|REPLACE", help="S3-to-S3: REPLACE writes only the metadata given here, not the source's", rich_help_panel=_P)]
PreserveXattrs = Annotated[bool, O("--preserve-xattrs", help="local disk: keep Content-Type and user metadata in user.* extended attributes on download, restore them on upload", rich_help_panel=_P)]


