#!/usr/bin/env bash
# Builds the initramfs of the cgroup v2 guest: busybox-static, runc with
# the shared libraries it links, the kernel's overlay module and
# hack/v2guest-init.sh as /init, then, as a second gzip'd cpio appended to
# the first (the kernel unpacks both), the binaries under test.
# Usage: hack/v2guest-initramfs.sh KERNEL_DIR OUT BIN_DIR [TEST_BINARY...]
# KERNEL_DIR is what hack/install-v2guest.sh printed; BIN_DIR holds
# bulkhead, bulkhead-probe and bulkhead-seccomp-exec; each TEST_BINARY (a `go test -c` binary named
# NAME.test) is run by the guest's init. Every dynamically linked binary
# gets the libraries ldd names for it.
set -euo pipefail
kdir="$1" out="$2" bin="$3"
shift 3
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
base="$work/base" extra="$work/extra"
mkdir -p "$base"/{bin,sbin,etc,proc,sys,dev,tmp,lib/modules/guest,usr/bin,usr/sbin} "$extra"/guest/{bin,tests}
cp /bin/busybox "$base/bin/busybox"
for a in $(/bin/busybox --list); do
	[ "$a" = busybox ] || ln -sf busybox "$base/bin/$a"
done
cp "$here/v2guest-init.sh" "$base/init"
chmod 0755 "$base/init"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$base/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$base/etc/group"
# overlay backs bulkhead's workspaces; it has no module dependencies.
find "$kdir/lib/modules" -name overlay.ko -exec cp {} "$base/lib/modules/guest/" \;
[ -e "$base/lib/modules/guest/overlay.ko" ] || { echo "v2guest-initramfs: no overlay.ko under $kdir" >&2; exit 1; }

libs() { # copies the libraries ldd names for $1 into root $2
	# A static binary has none: ldd fails and grep finds nothing.
	{ ldd "$1" 2>/dev/null || true; } | { grep -o '/[^ ]*' || true; } | while read -r l; do
		mkdir -p "$2$(dirname "$l")"
		cp -L "$l" "$2$l"
	done
}
cp "$(command -v runc)" "$base/usr/sbin/runc"
libs "$(command -v runc)" "$base"
if command -v runsc >/dev/null 2>&1; then
	cp "$(command -v runsc)" "$base/usr/sbin/runsc"
fi
for f in bulkhead bulkhead-probe bulkhead-seccomp-exec; do
	cp "$bin/$f" "$extra/guest/bin/$f"
	libs "$bin/$f" "$extra"
done
ln -sf bulkhead "$extra/guest/bin/bulkhead-runsc"
for t in "$@"; do
	cp "$t" "$extra/guest/tests/"
	libs "$t" "$extra"
done
(cd "$base" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$out"
(cd "$extra" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >>"$out"
