#!/usr/bin/env bash
# Fetches what the cgroup v2 guest tests boot: QEMU (installed with apt) and
# Debian's cloud kernel with its modules, extracted into a fixed directory
# and never installed (installing it would pull a newer systemd onto the
# host and change its boot). Usage: hack/install-v2guest.sh [DIR]
# DIR defaults to $BULKHEAD_V2GUEST or /var/tmp/bulkhead-v2guest; prints
# the directory holding boot/vmlinuz-* and lib/modules/*.
# The kernel package is the one linux-image-cloud-amd64 depends on, unless
# V2GUEST_KERNEL names one; each kernel gets its own subdirectory.
set -euo pipefail
base="${1:-${BULKHEAD_V2GUEST:-/var/tmp/bulkhead-v2guest}}"
mkdir -p "$base"
# Test packages run in parallel and may all ask at once: one fetches, the
# others wait for it.
exec 9>"$base/.lock"
flock 9
export DEBIAN_FRONTEND=noninteractive
if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends qemu-system-x86 >/dev/null
fi
pkg="${V2GUEST_KERNEL:-}"
if [ -z "$pkg" ]; then
	pkg="$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')"
	if [ -z "$pkg" ]; then
		apt-get update -qq
		pkg="$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')"
	fi
fi
[ -n "$pkg" ] || { echo "install-v2guest: no linux-image-*-cloud-amd64 package found" >&2; exit 1; }
dir="$base/$pkg"
if ls "$dir"/boot/vmlinuz-* >/dev/null 2>&1 && [ -d "$dir/lib/modules" ]; then
	echo "$dir"
	exit 0
fi
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp/deb"
# Stale package lists name a version the mirror no longer has: refresh once.
(cd "$dir.tmp/deb" && { apt-get download "$pkg" >&2 || { apt-get update -qq && apt-get download "$pkg" >&2; }; })
dpkg-deb -x "$dir.tmp"/deb/*.deb "$dir.tmp"
rm -rf "$dir.tmp/deb" "$dir"
mv "$dir.tmp" "$dir"
echo "$dir"
