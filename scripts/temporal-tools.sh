#!/usr/bin/env bash
# Builds the Temporal server and its SQL schema tool that cmd/prodbench runs
# as processes of their own, from the tools module tools/temporal (pinned to
# the go.temporal.io/server version of the product's go.mod). A cold build
# takes about ten minutes on two cores, so the binaries are kept in
# GOPATH/bin with a stamp of the module files and the Go version, and rebuilt
# only when those change (as .ci/run does for versitygw). Prints the two
# paths, one per line: server, then schema tool.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
bin="$(go env GOPATH)/bin"
stamp=$(cat tools/temporal/go.mod tools/temporal/go.sum <(go version) | sha256sum | cut -d' ' -f1)
mkdir -p "$bin"
build() { # name package
  local out="$bin/$1"
  if [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then return; fi
  echo "building $1 (tools/temporal, $2)" >&2
  (cd tools/temporal && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out.tmp" "$2")
  mv "$out.tmp" "$out"
  echo "$stamp" >"$out.stamp"
}
build temporal-server go.temporal.io/server/cmd/server
build temporal-sql-tool go.temporal.io/server/cmd/tools/sql
echo "$bin/temporal-server"
echo "$bin/temporal-sql-tool"
