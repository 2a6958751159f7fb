#!/usr/bin/env bash
# The test suite, from a fresh machine: installs uv, the project, LocalStack (own venv), then runs
# pytest. The tests start LocalStack on a free loopback port themselves (or use
# S3BULK_TEST_ENDPOINT if it points at one already running).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
# bytecode now, once: some machines set PYTHONDONTWRITEBYTECODE, and then every process the tests
# start (CLI runs, spawned workers) would compile botocore from source again (~2 s of CPU each)
uv sync --frozen -q --compile-bytecode --extra dask  # tests/test_cluster.py needs distributed
uv run --frozen --extra dask python -m compileall -q s3bulk tests >/dev/null
bash localstack/start.sh --install
exec uv run --frozen --extra dask python -m pytest "$@"
