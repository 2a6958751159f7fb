"""Defaults the command line and the Python API share, named once so the two cannot drift apart."""

from __future__ import annotations

# list requests in flight over split key ranges: `s3bulk ls -c` and `s3bulk.ls(concurrency=)` alike
LIST_CONCURRENCY = 64
