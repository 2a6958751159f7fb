"""From a memory budget (`--max-memory`) to engine settings that stay under it.

What a run holds, per process: the interpreter and libraries (BASE: measured ~45 MiB for local disk
and list/get servers, ~90 MiB once botocore's S3 models are loaded), plus object bodies in flight
(bounded by the byte budget; a part can exist twice while a response is joined, hence the factor
2), plus per-transfer overhead (connection buffers, tasks: a few tens of KiB each). Small budgets
run everything in one process: a pool would pay BASE once per worker.
"""

from __future__ import annotations

import os
from dataclasses import replace

from ..errors import UsageError
from .plan import MiB, TransferOptions

BASE_LOCAL = 48 * MiB
BASE_S3 = 96 * MiB
PER_TRANSFER = 64 * 1024
# what each transfer a worker adds while requests are slow (engine/run/inflight.py) costs: its connection
# and task. Measured: 512 transfers of 100 B objects in flight took 5 MiB more RSS than 64 (~11 KiB
# each; connections share one receive buffer, http/client.py); bodies are the byte budget's, not this
PER_GROWN_TRANSFER = 16 * 1024
MIN_PART = 5 * MiB


def fit_to_memory(options: TransferOptions, max_rss: int, src: str, dst: str) -> TransferOptions:
    """Options for a run from src to dst (as the user gave them) that must stay under `max_rss` bytes
    of RSS in all (--max-memory); UsageError if it cannot. Of that, the bodies' share becomes
    `max_bytes_in_flight` (the workers' byte budgets, ByteBudget in engine/transfer/one_object.py)."""
    uses_s3 = any(x.lower().startswith("s3://") for x in (src, dst))
    base = BASE_S3 if uses_s3 else BASE_LOCAL
    cores = os.cpu_count() or 1
    # the coordinator (its own process when there is a pool) plus each worker pays `base`
    workers = options.resolved_workers()
    while workers > 1 and max_rss < (workers + 1) * base + workers * 48 * MiB:
        workers -= 1
    workers = min(workers, cores)
    spare = max_rss - (base if workers == 1 else (workers + 1) * base)
    per_worker = spare // workers
    # bodies may exist twice while a response is joined; keep a quarter for allocator slack
    bytes_in_flight = per_worker * 3 // 8
    if bytes_in_flight < MIN_PART:
        need = (base if workers == 1 else (workers + 1) * base) + MIN_PART * 8 // 3 + MiB
        raise UsageError(f"--max-memory {max_rss // MiB} MiB cannot hold one {MIN_PART // MiB} MiB part in flight "
                         f"besides the {base // MiB} MiB the program itself needs; give at least {need // MiB + 1} MiB")
    part = max(MIN_PART, min(options.part_size, bytes_in_flight // 2))
    part_concurrency = max(1, min(options.part_concurrency, bytes_in_flight // part))
    concurrency = max(1, min(options.concurrency, per_worker // 4 // PER_TRANSFER))
    ceiling = max(concurrency, min(options.concurrency_ceiling(), per_worker // 4 // PER_GROWN_TRANSFER))
    return replace(options, workers=workers, concurrency=concurrency, max_concurrency=ceiling, part_size=part,
                   multipart_threshold=min(options.multipart_threshold, part),
                   part_concurrency=part_concurrency, max_bytes_in_flight=bytes_in_flight * workers,
                   # a page of 1,000 keys is ~0.5 MiB listed and parsed; with one page held, transfers
                   # starve at each page's end (128 MiB, 20,000 objects at 50 ms a request: 1,900 objects/s, 2,800 with two)
                   pages_ahead=1 if per_worker < 16 * MiB else options.pages_ahead, flush_writes=True,
                   copy_part_size=max(MIN_PART, min(options.copy_part_size, 5 * 1024 * MiB)))


def lambda_budget() -> int | None:
    """The function's memory size in a Lambda environment, in bytes."""
    value = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
    return int(value) * MiB if value and value.isdigit() else None
