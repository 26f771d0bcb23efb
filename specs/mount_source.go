package specs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// MountSource is where the files at a path really come from, judged by
// the mount that shows them rather than by the path string: a bind mount
// (a Docker local volume with o=bind,device=/etc, an engine's own bind)
// shows a subtree of its filesystem under another name.
type MountSource struct {
	// From is the host path the files are judged as.
	From string
	// Holder is the mount the path is on; Home the mount From is on
	// (Holder when From is the path itself). Either is nil when the
	// mount table has none.
	Holder, Home *mountinfo.Info
}

// mountedFrom is the MountSource of p, opened at fd (-1: opened here as
// the backend opens it, following links). The mount is the one the
// descriptor is on, by its id: a mount tucked under another at the same
// place (propagated there later) is not the one the path shows.
func mountedFrom(p string, fd int) (MountSource, error) {
	if fd < 0 {
		var err error
		if fd, err = unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
			return MountSource{}, fmt.Errorf("open %s: %w", p, err)
		}
		defer unix.Close(fd)
	}
	id, err := fdMountID(fd)
	if err != nil {
		return MountSource{}, err
	}
	mounts, err := mountinfo.GetMounts(nil)
	if err != nil {
		return MountSource{}, fmt.Errorf("mountinfo: %w", err)
	}
	src := mountedFromIn(p, id, mounts)
	if src.Holder == nil {
		return MountSource{}, fmt.Errorf("the mount of %s (id %d) is not in the mount table: it changed while it was read", p, id)
	}
	return src, nil
}

// fdMountID is the id of the mount the descriptor is on, as the kernel
// gives it in /proc/self/fdinfo.
func fdMountID(fd int) (int, error) {
	f, err := os.Open("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "mnt_id:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("fdinfo of descriptor %d names no mount", fd)
}

// mountedFromIn is the MountSource of p, on the mount of id, in the mount
// table mounts. A holder that shows a subtree of its filesystem is judged
// as that subtree's path where the same filesystem is mounted from a root
// at or above the holder's; one that shows its filesystem from the root,
// as the filesystem's home (homeFirst): a bind of /dev/shm's or another
// container's root at a volume, a second sysfs or devtmpfs (the kernel's
// one instance of it), the root filesystem's device mounted again. p
// itself is the answer when the holder is that home, or when no other
// mount of a subtree's filesystem covers it (a btrfs subvolume mounted
// alone).
func mountedFromIn(p string, id int, mounts []*mountinfo.Info) MountSource {
	var holder *mountinfo.Info
	for _, m := range mounts {
		if m.ID == id && under(p, m.Mountpoint) {
			holder = m
		}
	}
	if holder == nil {
		return MountSource{From: p}
	}
	own := MountSource{From: p, Holder: holder, Home: holder}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, holder.Mountpoint), "/")
	if holder.Root == "/" {
		home := holder
		for _, m := range mounts {
			if m.Major == holder.Major && m.Minor == holder.Minor && m.Root == "/" && homeFirst(m, home) {
				home = m
			}
		}
		if home == holder {
			return own
		}
		return MountSource{From: filepath.Join(home.Mountpoint, rel), Holder: holder, Home: home}
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
		return own
	}
	return MountSource{From: filepath.Join(best.Mountpoint, strings.TrimPrefix(holder.Root, best.Root), rel), Holder: holder, Home: best}
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
