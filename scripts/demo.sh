#!/usr/bin/env bash
# The main job on an embedded default: start the bundled LocalStack, fill a bucket with a few
# thousand objects, and copy them into ./demo-out with the live progress display.
#   scripts/demo.sh [OBJECTS]      (default 5000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5000}
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
uv sync --frozen -q
bash localstack/start.sh --install
port=$(uv run --frozen python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1
export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
work=$(mktemp -d)
FILESYSTEM_ROOT="$work/localstack" bash localstack/start.sh "$port" >"$work/localstack.log" 2>&1 &
ls_pid=$!
trap 'kill $ls_pid 2>/dev/null; wait $ls_pid 2>/dev/null; rm -rf "$work"' EXIT
echo "starting LocalStack on 127.0.0.1:$port ..."
for _ in $(seq 1 240); do
  curl -fs "$AWS_ENDPOINT_URL/_localstack/health" >/dev/null 2>&1 && break
  sleep 0.5
done
uv run --frozen python - "$n" "$work/src" <<'PY'
import os, sys, botocore.session
n, root = int(sys.argv[1]), sys.argv[2]
botocore.session.get_session().create_client("s3").create_bucket(Bucket="demo")
for i in range(n):
    d = os.path.join(root, f"dir{i % 10}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"object-{i:06d}.bin"), "wb") as f:
        f.write(os.urandom(100 + i % 900))
PY
echo "filling s3://demo with $n objects ..."
uv run --frozen s3bulk copy "$work/src" s3://demo/ --quiet
echo "copying s3://demo to ./demo-out ..."
rm -rf demo-out
uv run --frozen s3bulk copy s3://demo/ ./demo-out --progress
diff -r "$work/src" demo-out >/dev/null && echo "demo-out is byte-identical to what was uploaded"
