package specs

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// mountedFrom returns where on the host the files at p really come from,
// and the mount that holds p (nil when none does), judged by that mount
// rather than by the path string: a bind mount (a Docker local volume
// with o=bind,device=/etc, an engine's own bind) shows a subtree of its
// filesystem under another name.
func mountedFrom(p string) (string, *mountinfo.Info, error) {
	mounts, err := mountinfo.GetMounts(nil)
	if err != nil {
		return "", nil, fmt.Errorf("mountinfo: %w", err)
	}
	from, holder := mountedFromIn(p, mounts)
	return from, holder, nil
}

// mountedFromIn is mountedFrom in the mount table mounts. The answer is
// the subtree's path where the same filesystem is mounted from a root at
// or above the holder's. A holder that shows its filesystem from the root
// is judged by the filesystem's home (homeFirst): a bind of /dev/shm's or
// another container's root at a volume, a second sysfs or devtmpfs (the
// kernel's one instance of it), the root filesystem's device mounted
// again. p itself is the answer when the holder is that home, or when no
// other mount of a subtree's filesystem covers it (a btrfs subvolume
// mounted alone).
func mountedFromIn(p string, mounts []*mountinfo.Info) (string, *mountinfo.Info) {
	var holder *mountinfo.Info
	for _, m := range mounts {
		if under(p, m.Mountpoint) && (holder == nil || len(m.Mountpoint) >= len(holder.Mountpoint)) {
			holder = m
		}
	}
	if holder == nil {
		return p, nil
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, holder.Mountpoint), "/")
	if holder.Root == "/" {
		first := holder
		for _, m := range mounts {
			if m.Major == holder.Major && m.Minor == holder.Minor && m.Root == "/" && homeFirst(m, first) {
				first = m
			}
		}
		if first == holder {
			return p, holder
		}
		return filepath.Join(first.Mountpoint, rel), holder
	}
	// The same filesystem mounted from a root at or above the holder's.
	var best *mountinfo.Info
	for _, m := range mounts {
		if m.Major != holder.Major || m.Minor != holder.Minor || !under(holder.Root, m.Root) || m == holder {
			continue
		}
		if best == nil || len(m.Root) < len(best.Root) {
			best = m
		}
	}
	if best == nil {
		return p, holder
	}
	return filepath.Join(best.Mountpoint, strings.TrimPrefix(holder.Root, best.Root), rel), holder
}

// homeFirst orders two mounts of one filesystem's root by which is its
// home on the host: one outside the engines' state directories before one
// inside (a volume's or a container's mount is an engine's view of a
// filesystem, not where it lives), then the one mounted first (the lower
// mount id; the kernel reuses a freed id, so this is the tie-break).
func homeFirst(a, b *mountinfo.Info) bool {
	if ia, ib := inStateDir(a.Mountpoint), inStateDir(b.Mountpoint); ia != ib {
		return ib
	}
	return a.ID < b.ID
}

func inStateDir(p string) bool {
	for _, d := range stateDirs {
		if under(p, d) {
			return true
		}
	}
	return false
}
