#!/usr/bin/env bash
# Prints the path of a versitygw binary (Versity's S3 gateway: it checks SigV4 signatures, which
# LocalStack does not), building it with `go install` into ~/.cache/s3bulk/bin only when it is not
# there yet (about 5 minutes on 2 cores). tests/versitygw.py calls this; exit status 3 means go is not
# installed (the test then skips).
set -euo pipefail
version="${VERSITYGW_VERSION:-v1.8.0}"
bin_dir="${S3BULK_CACHE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/s3bulk/bin}"
exe="$bin_dir/versitygw"
if [[ -x "$exe" ]]; then
    echo "$exe"
    exit 0
fi
go=$(command -v go || { [[ -x /usr/local/go/bin/go ]] && echo /usr/local/go/bin/go; } || true)
if [[ -z "$go" ]]; then
    echo "go is not installed: cannot build versitygw" >&2
    exit 3
fi
mkdir -p "$bin_dir"
tmp="$(mktemp -d "$bin_dir/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" "$go" install "github.com/versity/versitygw/cmd/versitygw@$version" >&2
mv -f "$tmp/versitygw" "$exe"   # rename is atomic: a concurrent caller sees either nothing or the whole binary
echo "$exe"
