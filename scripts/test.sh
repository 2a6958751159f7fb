#!/usr/bin/env bash
# The test suite, from a fresh machine: installs uv, the project, LocalStack (own venv), then runs
# pytest. The tests start LocalStack on a free loopback port themselves (or use
# S3BULK_TEST_ENDPOINT if it points at one already running).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
uv sync --frozen -q
bash localstack/start.sh --install
exec uv run --frozen python -m pytest "$@"
