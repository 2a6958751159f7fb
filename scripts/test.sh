#!/usr/bin/env bash
# The test suite, from a fresh machine: installs uv, the project, LocalStack (own venv), starts one
# LocalStack on a free loopback port (unless S3BULK_TEST_ENDPOINT points at one already running),
# then runs pytest in two processes that share it (pytest-xdist, a file per process at a time:
# most tests wait on servers, processes and timeouts, so two at once nearly halve the wall time).
# Pass pytest arguments through: ./scripts/test.sh -k safety; -n 0 runs in one process.
# ./scripts/test.sh --unit [PYTEST ARGS]: types, layers, then only the tests marked `unit` (no server:
# the in-memory store, local files, parsers, the engine's decisions; well under a minute, one
# process), with no docs build and no LocalStack: the quick loop while changing code.
set -euo pipefail
cd "$(dirname "$0")/.."
unit=""
if [ "${1:-}" = "--unit" ]; then
  unit=1
  shift
fi
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
# bytecode now, once: some machines set PYTHONDONTWRITEBYTECODE, and then every process the tests
# start (CLI runs, spawned workers) would compile botocore from source again (~2 s of CPU each)
# --extra dask: tests/test_cluster.py needs distributed; --group docs: mkdocs, to build the docs site
uv sync --frozen -q --compile-bytecode --extra dask --group docs
uv run --frozen --extra dask python -m compileall -q s3bulk tests >/dev/null
# types first (a few seconds; [tool.mypy] in pyproject.toml): an error fails the run before any test
uv run --frozen --extra dask mypy
# the layers ([tool.importlinter] in pyproject.toml): cli -> api -> cluster -> engine -> stores ->
# config -> model -> errors -> http, imports inside functions included (tests/test_layers.py adds
# that no two modules import each other, directly or round a longer cycle)
uv run --frozen --extra dask lint-imports --no-cache >/dev/null || uv run --frozen --extra dask lint-imports --no-cache
if [ -n "$unit" ]; then  # tests/conftest.py fails a unit test that asks for LocalStack: none is started
  exec env -u S3BULK_TEST_ENDPOINT uv run --frozen --extra dask python -m pytest -m unit -n 0 "$@"
fi
# the docs next (a few seconds): the command pages must match the CLI's help (scripts/cli_docs.py
# writes them; --check names a page that drifted), and the site must build with no warning at all
# (a broken link or anchor, a page left out of the nav); it builds offline, into a scratch directory
uv run --frozen --extra dask --group docs python scripts/cli_docs.py --check
site=$(mktemp -d -t s3bulk-site-XXXXXX)
NO_MKDOCS_2_WARNING=1 uv run --frozen --extra dask --group docs mkdocs build --strict -q -d "$site"
rm -rf "$site"
bash localstack/start.sh --install

started=""
if [ -z "${S3BULK_TEST_ENDPOINT:-}" ]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  state=$(mktemp -d -t s3bulk-localstack-XXXXXX)
  FILESYSTEM_ROOT="$state" setsid bash localstack/start.sh "$port" >"$state.log" 2>&1 &
  started=$!
  trap 'kill -TERM -- -"$started" 2>/dev/null; sleep 1; kill -KILL -- -"$started" 2>/dev/null; rm -rf "$state" "$state.log"' EXIT
  export S3BULK_TEST_ENDPOINT="http://127.0.0.1:$port"
  # started by localstack/start.sh: tests/test_user_meets.py checks this one listens on loopback
  # only, rather than starting a second LocalStack (~30 s) to check
  export S3BULK_TEST_ENDPOINT_STARTED=start.sh
  for _ in $(seq 600); do  # up to 5 minutes on a busy machine
    if python3 - "$S3BULK_TEST_ENDPOINT" <<'PY' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/_localstack/health", timeout=2) as r:
    services = json.load(r).get("services", {})
    sys.exit(any(services.get(name) not in ("running", "available") for name in ("s3", "sqs")))
PY
    then
      break
    fi
    if ! kill -0 "$started" 2>/dev/null; then
      echo "LocalStack did not start; its log:" >&2
      tail -50 "$state.log" >&2
      exit 1
    fi
    sleep 0.5
  done
fi
uv run --frozen --extra dask python -m pytest -n 2 --dist loadfile "$@"
