#!/usr/bin/env bash
# Builds containerd 2.x (containerd, ctr, containerd-shim-runc-v2) from the Go
# module proxy into a fixed directory, so tests and CI reuse one build
# (about 2.5 minutes cold). Usage: hack/install-containerd2.sh [DIR]
# DIR defaults to $BULKHEAD_CONTAINERD2 or /var/tmp/bulkhead-containerd2.
# The version is pinned; a build of another version goes into its own
# subdirectory, so a cache never mixes versions.
set -euo pipefail
version="${CONTAINERD2_VERSION:-v2.4.2}"
base="${1:-${BULKHEAD_CONTAINERD2:-/var/tmp/bulkhead-containerd2}}"
dir="$base/$version"
mkdir -p "$base"
# Test packages run in parallel and may all ask for the build at once: one
# builds, the others wait for it.
exec 9>"$base/.lock"
flock 9
if [ -x "$dir/containerd" ] && [ -x "$dir/ctr" ] && [ -x "$dir/containerd-shim-runc-v2" ]; then
	echo "$dir"
	exit 0
fi
mkdir -p "$dir.tmp"
# no_btrfs: the btrfs snapshotter needs libbtrfs headers; tests use overlayfs.
# go install takes one package path per argument (no brace expansion in Go).
GOBIN="$dir.tmp" GOFLAGS="${GOFLAGS:-} -tags=no_btrfs" go install \
	"github.com/containerd/containerd/v2/cmd/containerd@$version" \
	"github.com/containerd/containerd/v2/cmd/ctr@$version" \
	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$version" >&2
rm -rf "$dir"
mv "$dir.tmp" "$dir"
echo "$dir"
