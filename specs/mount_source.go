package specs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// MountSource is where the files at a path really come from, judged by
// the mounts that show them rather than by the path string: a bind mount
// (a Docker local volume with o=bind,device=/etc, an engine's own bind,
// the kubelet's subPath bind) shows a subtree of its filesystem under
// another name.
type MountSource struct {
	// Holder is the mount the path is on; nil when the mount table has
	// none.
	Holder *mountinfo.Info
	// Places are the other mounts that show the source's files, and
	// where: every mount of the same filesystem whose root holds them or
	// lies below them (a directory of the source bound elsewhere, engine
	// state moved to a data disk below a bind root), but bulkhead's own
	// pins (isOwnPin). None when the holder is the only one.
	Places []Place
	// Mounts is the mount table the source was judged in.
	Mounts []*mountinfo.Info
}

// Place is where a mount shows the files of a source: the source itself
// at Path, or, where Inner is set, the part of it at Inner (a path below
// the source) at Path.
type Place struct {
	Path  string
	Mount *mountinfo.Info
	Inner string
}

// mountedFrom is the MountSource of p, opened at fd (-1: opened here as
// the backend opens it, following links). The mount is the one the
// descriptor is on, by its id: a mount tucked under another at the same
// place (propagated there later) is not the one the path shows. A source
// that does not exist yet (an engine's file made just before it starts
// the container) is judged by the deepest mount its path is below, and
// again by its descriptor when it is pinned.
func mountedFrom(p string, fd int) (MountSource, error) {
	id := -1
	if fd < 0 {
		var err error
		fd, err = unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ENOENT):
		case err != nil:
			return MountSource{}, fmt.Errorf("open %s: %w", p, err)
		default:
			defer unix.Close(fd)
		}
	}
	if fd >= 0 {
		var err error
		if id, err = fdMountID(fd); err != nil {
			return MountSource{}, err
		}
	}
	mounts, err := mountinfo.GetMounts(nil)
	if err != nil {
		return MountSource{}, fmt.Errorf("mountinfo: %w", err)
	}
	src := mountedFromIn(p, id, mounts)
	src.Mounts = mounts
	if src.Holder == nil {
		return MountSource{}, fmt.Errorf("the mount of %s (id %d) is not in the mount table: it changed while it was read", p, id)
	}
	src.Places = slices.DeleteFunc(src.Places, func(pl Place) bool { return isOwnPin(pl.Path, pl.Mount) })
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

// mountedFromIn is the MountSource of p, on the mount of id (-1: the
// deepest mount p is below), in the mount table mounts: every other mount that shows the files is a place
// they are also at, a bind of /dev/shm's or another pod's secrets
// at a volume or a subPath, a second sysfs or devtmpfs (the kernel's one
// instance of it), the root disk mounted again, /etc bound below a bind
// root. Which of them came first does not matter (mount ids are reused):
// the source is judged at each.
func mountedFromIn(p string, id int, mounts []*mountinfo.Info) MountSource {
	var src MountSource
	for _, m := range mounts {
		switch {
		case id >= 0 && m.ID == id && under(p, m.Mountpoint):
			src.Holder = m
		case id < 0 && under(p, m.Mountpoint) && (src.Holder == nil || len(m.Mountpoint) >= len(src.Holder.Mountpoint)):
			src.Holder = m
		}
	}
	if src.Holder == nil {
		return src
	}
	h := src.Holder
	// The files' path in their filesystem.
	inFS := filepath.Join(h.Root, strings.TrimPrefix(strings.TrimPrefix(p, h.Mountpoint), "/"))
	for _, m := range mounts {
		if m == h || m.Major != h.Major || m.Minor != h.Minor {
			continue
		}
		switch {
		case under(inFS, m.Root):
			src.Places = append(src.Places, Place{Path: filepath.Join(m.Mountpoint, strings.TrimPrefix(inFS, m.Root)), Mount: m})
		case under(m.Root, inFS):
			src.Places = append(src.Places, Place{Path: m.Mountpoint, Mount: m, Inner: filepath.Join(p, strings.TrimPrefix(m.Root, inFS))})
		}
	}
	return src
}

// inStateDir tells whether p is in one of the engines' state directories.
func inStateDir(p string) bool {
	p = judgedPath(p)
	for _, d := range stateDirs {
		if under(p, d) {
			return true
		}
	}
	return false
}
