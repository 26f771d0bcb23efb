#!/usr/bin/env bash
# Builds crictl from the Go module proxy into a fixed directory that tests
# and CI reuse (about 2 minutes cold). Usage: hack/install-crictl.sh [DIR]
# DIR defaults to $BULKHEAD_CRICTL or /var/tmp/bulkhead-crictl.
set -euo pipefail
version="${CRICTL_VERSION:-v1.37.0}"
base="${1:-${BULKHEAD_CRICTL:-/var/tmp/bulkhead-crictl}}"
dir="$base/$version"
mkdir -p "$base"
# Test packages run in parallel and may all ask for the build at once: one
# builds, the others wait for it.
exec 9>"$base/.lock"
flock 9
if [ -x "$dir/crictl" ]; then
	echo "$dir"
	exit 0
fi
mkdir -p "$dir.tmp"
GOBIN="$dir.tmp" go install "sigs.k8s.io/cri-tools/cmd/crictl@$version" >&2
rm -rf "$dir"
mv "$dir.tmp" "$dir"
echo "$dir"
