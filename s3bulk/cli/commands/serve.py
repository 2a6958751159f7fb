"""`s3bulk serve DIR`: serve files over the plain list/get contract (GET /list, GET /get/NAME)."""

from __future__ import annotations

import os
from typing import Optional

import typer

from ...errors import UsageError
from ...config.sizes import parse_size


def serve(
    directory: Optional[str] = typer.Argument(None, metavar="DIR", help="serve the files under this directory"),
    synthetic: Optional[int] = typer.Option(None, metavar="N", help="serve N generated files instead (no disk)", min=0),
    size: str = typer.Option("100", metavar="SIZE", help="size of each synthetic file"),
    host: str = typer.Option("127.0.0.1", metavar="ADDRESS", help="address to listen on"),
    port: int = typer.Option(8000, metavar="PORT", help="port (0 = any free port; the URL is printed)", min=0, max=65535),
    processes: int = typer.Option(0, metavar="N", help="server processes sharing the port (0 = one per core)", min=0),
    page_size: int = typer.Option(1000, metavar="N", help="names per /list page", min=1),
) -> None:
    """Serve a directory (or synthetic files) over the plain list/get contract: GET /list, GET /get/NAME.

    For tests, benchmarks and trusted networks: no authentication and no TLS, so whoever reaches
    the port can read every file served. HTTP/1.1 with keep-alive and pipelining; a request head
    over 64 KiB or 100 fields gets 431, a target over 16 KiB 414, a malformed request 400.
    """
    from ...serve.server import DirectoryCatalog, SyntheticCatalog, main_announce
    from ...serve.server import serve as run_server

    if (directory is None) == (synthetic is None):
        raise UsageError("give a DIRECTORY or --synthetic N (not both)")
    if directory is not None:
        if not os.path.isdir(directory):
            raise UsageError(f"{directory!r} is not a directory")
        catalog: DirectoryCatalog | SyntheticCatalog = DirectoryCatalog(directory)
    else:
        catalog = SyntheticCatalog(synthetic or 0, parse_size(size, "--size"))
    try:
        run_server(catalog, host=host, port=port, processes=processes, page_size=page_size,
                   announce=main_announce)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


EXAMPLES = (
    ("Serve a directory on port 8000",
     "s3bulk serve ./data/ --port 8000"),
    ("Serve it on every address, on any free port (the URL is printed)",
     "s3bulk serve ./data/ --host 0.0.0.0 --port 0"),
    ("Serve 100,000 generated files of 1 KiB each, from memory",
     "s3bulk serve --synthetic 100000 --size 1KiB"),
    ("Copy what a server serves to a bucket (from another shell)",
     "s3bulk copy http://127.0.0.1:8000/ s3://bucket/data/"),
)
