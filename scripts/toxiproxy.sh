#!/usr/bin/env bash
# Prints the path of a toxiproxy server binary (Shopify's TCP proxy with bandwidth/latency/timeout
# "toxics"), building it with `go install` into ~/.cache/s3bulk/bin only when it is not there yet.
# tests/test_slow_links.py calls this; exit status 3 means go is not installed (the test then skips).
set -euo pipefail
version="${TOXIPROXY_VERSION:-latest}"
bin_dir="${S3BULK_CACHE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/s3bulk/bin}"
exe="$bin_dir/toxiproxy-server"
if [[ -x "$exe" ]]; then
    echo "$exe"
    exit 0
fi
if ! command -v go >/dev/null 2>&1; then
    echo "go is not installed: cannot build toxiproxy" >&2
    exit 3
fi
mkdir -p "$bin_dir"
tmp="$(mktemp -d "$bin_dir/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$version" >&2
mv -f "$tmp/server" "$exe"   # rename is atomic: a concurrent caller sees either nothing or the whole binary
echo "$exe"
