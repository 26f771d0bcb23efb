package specs

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// mountedFrom returns where on the host the files at p really come from,
// judged by the mount that holds p rather than by the path string: a bind
// mount (a Docker local volume with o=bind,device=/etc, an engine's own
// bind) shows a subtree of its filesystem under another name. The answer
// is that subtree's path where the same filesystem is mounted at its
// root, or p itself when the mount holding it shows its filesystem from
// the root. A subtree of a filesystem mounted nowhere else has no host
// path to judge, and is an error.
func mountedFrom(p string) (string, error) {
	mounts, err := mountinfo.GetMounts(nil)
	if err != nil {
		return "", fmt.Errorf("mountinfo: %w", err)
	}
	var holder *mountinfo.Info
	for _, m := range mounts {
		if under(p, m.Mountpoint) && (holder == nil || len(m.Mountpoint) >= len(holder.Mountpoint)) {
			holder = m
		}
	}
	if holder == nil || holder.Root == "/" {
		return p, nil
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, holder.Mountpoint), "/")
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
		return p, nil
	}
	return filepath.Join(best.Mountpoint, strings.TrimPrefix(holder.Root, best.Root), rel), nil
}
