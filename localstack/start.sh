#!/usr/bin/env bash
# Install (once, cached in localstack/.venv) and start LocalStack's host-mode S3 on loopback only
# (127.0.0.1: nothing else on the network can reach it). Credentials: any, e.g. test/test, us-east-1.
#
#   localstack/start.sh [PORT]     start in the foreground (default port 4566)
#   localstack/start.sh --install  only install
#
# LocalStack needs Python 3.12+; we use pyenv's python3.13 or python3.12 when present.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"

find_python() {
  for v in python3.13 python3.12; do
    if command -v "$v" >/dev/null 2>&1 && "$v" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$v"; return 0
    fi
  done
  for d in "$HOME"/.pyenv/versions/3.13* "$HOME"/.pyenv/versions/3.12*; do
    [ -x "$d/bin/python3" ] && { echo "$d/bin/python3"; return 0; }
  done
  echo "localstack: needs Python 3.12 or newer (none found)" >&2
  return 1
}

install() {
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import localstack.runtime.main' 2>/dev/null; then
    return 0
  fi
  command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
  py=$(find_python)
  uv venv -q --python "$py" "$venv"
  # These pins gave a working set on 2026-03-25; newer releases may need a licence.
  uv pip install -q --compile-bytecode --python "$venv/bin/python" --exclude-newer 2026-03-25 \
    'localstack-core[runtime]==2026.3.0'
}

install
[ "${1:-}" = "--install" ] && exit 0

port=${1:-4566}
# S3, and SQS for `sync --watch-queue` (bucket notifications to a queue); path-style queue URLs
# (http://127.0.0.1:PORT/ACCOUNT/NAME) because nothing here resolves sqs.*.localhost.localstack.cloud
export SERVICES=${SERVICES:-s3,sqs}
export SQS_ENDPOINT_STRATEGY=path
export GATEWAY_LISTEN="127.0.0.1:$port"
# LocalStack's default gateway server (twisted) ignores the host in GATEWAY_LISTEN and listens on
# every interface; hypercorn binds exactly what GATEWAY_LISTEN says (tests/test_user_meets.py checks)
export GATEWAY_SERVER=hypercorn
export LOCALSTACK_HOST="127.0.0.1:$port"
export EAGER_SERVICE_LOADING=1
export SKIP_SSL_CERT_DOWNLOAD=1
export DISABLE_EVENTS=1
export LS_LOG=${LS_LOG:-warn}
export PERSISTENCE=0 DNS_ADDRESS=0
export FILESYSTEM_ROOT="${FILESYSTEM_ROOT:-$here/.state/$port}"
mkdir -p "$FILESYSTEM_ROOT"
exec "$venv/bin/python" -m localstack.runtime.main
