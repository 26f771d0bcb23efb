package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/containerd/containerd/api/types"
	"golang.org/x/sys/unix"
)

// stdioRefusal judges a task's or an exec's stdio as a client gave it.
// runc's task service runs a binary:// stream's program as root in the
// host's namespaces, appends to a file:// stream's path as root, and
// opens a plain path as root whatever it is and hands it to the job as
// its stdin or stdout: a client ran any command on the host, and the job
// read a root-only file and appended to another. Each stream must be
// none, or the path of a FIFO that is there already, as ctr, CRI and
// nerdctl's FIFOs are. A client that can write the FIFO's directory could
// still put another file there after this check; a client of the API
// alone cannot.
func stdioRefusal(stdin, stdout, stderr string) error {
	for _, s := range []struct{ name, path string }{{"stdin", stdin}, {"stdout", stdout}, {"stderr", stderr}} {
		if s.path == "" {
			continue
		}
		if u, err := url.Parse(s.path); err != nil || u.Scheme != "" {
			return fmt.Errorf("bulkhead: %s %q is refused: a stream URI is run or opened by the shim as root on the host; give the path of a FIFO", s.name, s.path)
		}
		var st unix.Stat_t
		if err := unix.Lstat(s.path, &st); err != nil {
			return fmt.Errorf("bulkhead: %s %q is refused: %v; give the path of a FIFO the client made", s.name, s.path, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return fmt.Errorf("bulkhead: %s %q is refused: it is not a FIFO, and the shim would open it as root and hand it to the job; give the path of a FIFO", s.name, s.path)
		}
	}
	return nil
}

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
