#!/usr/bin/env bash
# Runs staticcheck, installing it from the module proxy on first use.
set -euo pipefail
bin="$(go env GOPATH)/bin/staticcheck"
if [ ! -x "$bin" ]; then
  GOFLAGS=-mod=mod go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
"$bin" ./...
