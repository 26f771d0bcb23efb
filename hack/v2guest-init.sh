#!/bin/sh
# /init of the cgroup v2 guest (busybox sh). Stage 1 runs on the initramfs
# and copies it to a tmpfs: runc's pivot_root fails on an initramfs root.
# Stage 2 mounts cgroup2 as the only cgroup filesystem, runs each test
# binary under /guest/tests and prints everything on the serial console,
# where the host reads it: QEMU's exit status does not carry the guest's.
export PATH=/guest/bin:/usr/sbin:/usr/bin:/sbin:/bin
say() { echo "BULKHEAD-GUEST $*"; }
if [ ! -e /.stage2 ]; then
	mount -t proc proc /proc
	mkdir -p /newroot
	mount -t tmpfs -o mode=0755 tmpfs /newroot
	for d in /*; do
		case "$d" in /proc|/sys|/dev|/newroot) ;; *) cp -a "$d" /newroot/ ;; esac
	done
	mkdir -p /newroot/proc /newroot/sys /newroot/dev
	touch /newroot/.stage2
	umount /proc
	exec switch_root /newroot /init
fi
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /sys/fs/cgroup /tmp /run /var/run /var/lib /var/log
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t cgroup2 cgroup2 /sys/fs/cgroup
for m in /lib/modules/guest/*.ko; do
	[ -e "$m" ] && insmod "$m"
done
ip link set lo up 2>/dev/null
echo "+cpu +memory +pids" > /sys/fs/cgroup/cgroup.subtree_control
say "kernel $(uname -r)"
awk '$3 ~ /cgroup/ { print "BULKHEAD-GUEST mount " $3 " " $2 }' /proc/mounts
say "controllers $(cat /sys/fs/cgroup/cgroup.subtree_control)"
run=""
for a in $(cat /proc/cmdline); do
	case "$a" in bulkhead.run=*) run="${a#bulkhead.run=}" ;; esac
done
cd /tmp
for t in /guest/tests/*.test; do
	[ -e "$t" ] || continue
	# The host orders the binaries by a NN- prefix.
	name="$(basename "$t" .test)"
	name="${name#[0-9][0-9]-}"
	say "begin $name"
	start=$(date +%s)
	BULKHEAD_BIN=/guest/bin "$t" -test.v -test.count=1 -test.timeout=40m ${run:+-test.run="$run"} 2>&1
	rc=$?
	say "end $name status $rc seconds $(( $(date +%s) - start ))"
done
say "done"
sync
poweroff -f
