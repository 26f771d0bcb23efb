package main

import (
	"fmt"
	"strings"

	"github.com/containerd/containerd/api/types"

	"bulkhead.dev/bulkhead/specs"
)

// rootfsMountTypes are the rootfs mounts the shim makes for a client:
// containerd's overlayfs snapshots, binds and a tmpfs. The root rule
// judges what they show once they are mounted; what a mount does while it
// is made comes first: a client's ext4 mount of a file with containerd's
// loop option attached a loop device and replayed the journal of a
// filesystem image the host had mounted, as root, before any rule ran.
var rootfsMountTypes = map[string]bool{"overlay": true, "bind": true, "rbind": true, "tmpfs": true}

// rootfsFlags are the mount flags containerd reads from a rootfs mount's
// options that only narrow or time what the mount does.
var rootfsFlags = map[string]bool{
	"bind": true, "rbind": true, "ro": true, "rw": true, "nosuid": true, "nodev": true, "noexec": true,
	"noatime": true, "relatime": true, "strictatime": true, "nodiratime": true, "sync": true, "dirsync": true,
	"async": true, "atime": true, "diratime": true, "norelatime": true, "nostrictatime": true, "defaults": true,
}

// rootfsData are the filesystem options, by type, of the mounts
// containerd's snapshotters and a tmpfs give, up to '='.
var rootfsData = map[string]map[string]bool{
	"overlay": {"lowerdir": true, "upperdir": true, "workdir": true, "index": true, "userxattr": true, "redirect_dir": true, "metacopy": true, "xino": true, "volatile": true},
	"tmpfs":   {"size": true, "mode": true, "nr_inodes": true, "uid": true, "gid": true},
}

// rootfsMountsRefusal judges a task's rootfs mounts before the shim makes
// them, as root in the host's mount namespace, at <bundle>/rootfs. One
// mount, as containerd's snapshotters give: a second is mounted on the
// first, and where the first is a bind of a host directory on a shared
// mount (systemd makes / shared) it propagated onto that directory of
// the host, the client's files over the host's /usr/bin for the length of
// a create; a target inside the rootfs did the same. Its options are
// flags that only narrow it or its filesystem's own settings: any other
// is refused (remount acts on the mount already there, a propagation
// flag joins or splits peer groups, loop and X-containerd.* make
// containerd act as root). An overlay's layers are judged before the
// kernel touches them (specs.TaskOverlayRefusal).
func rootfsMountsRefusal(bundle, id string, mounts []*types.Mount) error {
	if len(mounts) > 1 {
		return fmt.Errorf("bulkhead: a rootfs of %d mounts is refused: each is mounted on the one before as root on the host, where a shared one propagates; give one, as containerd's snapshotters do", len(mounts))
	}
	for _, m := range mounts {
		if !rootfsMountTypes[m.Type] {
			return fmt.Errorf("bulkhead: rootfs mount of type %q (%s) is refused: only overlay, bind and tmpfs rootfs mounts are made (containerd's overlayfs snapshotter)", m.Type, m.Source)
		}
		if m.Target != "" {
			return fmt.Errorf("bulkhead: rootfs mount target %q is refused: the rootfs mount goes at the rootfs itself, as containerd's snapshotters give it", m.Target)
		}
		for _, o := range m.Options {
			key, _, _ := strings.Cut(o, "=")
			if o == "loop" || strings.HasPrefix(o, "X-containerd.") {
				return fmt.Errorf("bulkhead: rootfs mount option %q of %s is refused: containerd acts on it as root before any rule judges the mount", o, m.Source)
			}
			if !rootfsFlags[o] && !rootfsData[m.Type][key] {
				return fmt.Errorf("bulkhead: rootfs mount option %q of %s (%s) is refused: it is no flag that only narrows the mount nor an option of containerd's snapshot mounts; remove it", o, m.Source, m.Type)
			}
		}
		if m.Type == "overlay" {
			if why := specs.TaskOverlayRefusal(bundle, id, m.Options); why != "" {
				return fmt.Errorf("bulkhead: rootfs overlay is refused before it is mounted: %s", why)
			}
		}
	}
	return nil
}
