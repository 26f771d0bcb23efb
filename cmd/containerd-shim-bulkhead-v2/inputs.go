package main

import (
	"fmt"
	"strings"

	"github.com/containerd/containerd/api/types"
)

// rootfsMountTypes are the rootfs mounts the shim makes for a client:
// containerd's overlayfs snapshots, binds and a tmpfs. The root rule
// judges what they show once they are mounted; what a mount does while it
// is made comes first: a client's ext4 mount of a file with containerd's
// loop option attached a loop device and replayed the journal of a
// filesystem image the host had mounted, as root, before any rule ran.
var rootfsMountTypes = map[string]bool{"overlay": true, "bind": true, "rbind": true, "tmpfs": true}

// rootfsMountsRefusal judges a task's rootfs mounts before the shim
// makes them: their types, and no option of containerd's own handling
// (loop, X-containerd.*), which do more than the kernel's mount.
func rootfsMountsRefusal(mounts []*types.Mount) error {
	for _, m := range mounts {
		if !rootfsMountTypes[m.Type] {
			return fmt.Errorf("bulkhead: rootfs mount of type %q (%s) is refused: only overlay, bind and tmpfs rootfs mounts are made (containerd's overlayfs snapshotter)", m.Type, m.Source)
		}
		for _, o := range m.Options {
			if o == "loop" || strings.HasPrefix(o, "X-containerd.") {
				return fmt.Errorf("bulkhead: rootfs mount option %q of %s is refused: containerd acts on it as root before any rule judges the mount", o, m.Source)
			}
		}
	}
	return nil
}
