package specs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Host is what the rules read from the host's filesystem. Nil fields, and
// a nil *Host in Context, read the real host; tests give fixtures.
type Host struct {
	// Resolve follows a path's symlinks on the host.
	Resolve func(path string) (string, error)
	// FindChannel returns the first socket or FIFO at or below path, or "".
	FindChannel func(path string) (string, error)
	// DockerMountID returns the overlay2 layer dockerd recorded for a
	// container under its data root.
	DockerMountID func(dataRoot, id string) (string, error)
	// MountedFrom returns where the files at a path, opened at fd (-1:
	// not opened), come from.
	MountedFrom func(path string, fd int) (MountSource, error)
	// DirInfo returns the attributes of a directory, not following a
	// symlink.
	DirInfo func(path string) (unix.Stat_t, error)
	// OneMount tells whether every path is on one mount (oneMount).
	OneMount func(paths ...string) bool
	// EngineTask tells whether this container is the task the engine
	// ("docker", "containerd") that made the per-container file at a
	// path made for it (engineTask).
	EngineTask func(engine, path string) bool
}

func (c *Context) resolve(p string) (string, error) {
	if c.Host != nil && c.Host.Resolve != nil {
		return c.Host.Resolve(p)
	}
	return resolveHost(p)
}

// findChannel returns the first socket or FIFO (a channel to whatever
// process on the host holds its other end) at or below p on p's own
// mount (a plain bind does not carry submounts), or "". A source that
// does not exist yet has none. p itself is not followed if it is a
// symlink; the tree is walked from the descriptor (findChannelAt).
func (c *Context) findChannel(p string) (string, error) {
	if c.Host != nil && c.Host.FindChannel != nil {
		return c.Host.FindChannel(p)
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC})
	if errors.Is(err, unix.ENOENT) {
		return "", nil // not there yet: nothing in it
	}
	if err != nil {
		return "", &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	return c.findChannelAt(fd, p)
}

// findChannelAt is findChannelAt, walking each tree once per container: a
// create judges a bind source or a rootfs when planned and again opened
// (the pin), and a walk costs some 2.5 us an entry, tens of milliseconds
// for an image's tree. A tree changed between the two is judged as one
// changed just after the second: at create, and no later.
func (c *Context) findChannelAt(fd int, name string) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	key := devIno{st.Dev, st.Ino}
	if w, ok := c.walked[key]; ok {
		if !w.found {
			return "", nil
		}
		return name + w.rel, nil
	}
	found, err := findChannelAt(fd, name)
	if err == nil {
		if c.walked == nil {
			c.walked = map[devIno]walk{}
		}
		c.walked[key] = walk{found: found != "", rel: strings.TrimPrefix(found, name)}
	}
	return found, err
}

// walk is what a walk for sockets and FIFOs found: whether any, and
// where below the tree's top ("" for the top itself).
type walk struct {
	found bool
	rel   string
}

// devIno names a file by its device and inode.
type devIno struct{ dev, ino uint64 }

func (c *Context) oneMount(paths ...string) bool {
	if c.Host != nil && c.Host.OneMount != nil {
		return c.Host.OneMount(paths...)
	}
	return oneMount(paths...)
}

func (c *Context) dirInfo(p string) (unix.Stat_t, error) {
	if c.Host != nil && c.Host.DirInfo != nil {
		return c.Host.DirInfo(p)
	}
	var st unix.Stat_t
	return st, unix.Lstat(p, &st)
}

func (c *Context) engineTask(engine, path string) bool {
	if c.Host != nil && c.Host.EngineTask != nil {
		return c.Host.EngineTask(engine, path)
	}
	switch engine {
	case "docker":
		return c.dockerTask(path)
	case "containerd":
		return c.criContainerdOf(path)
	}
	return false
}

func (c *Context) dockerMountID(dataRoot, id string) (string, error) {
	if c.Host != nil && c.Host.DockerMountID != nil {
		return c.Host.DockerMountID(dataRoot, id)
	}
	data, err := os.ReadFile(filepath.Join(dataRoot, "image", "overlay2", "layerdb", "mounts", id, "mount-id"))
	return strings.TrimSpace(string(data)), err
}

func (c *Context) mountedFrom(p string, fd int) (MountSource, error) {
	if c.Host != nil && c.Host.MountedFrom != nil {
		return c.Host.MountedFrom(p, fd)
	}
	// Each source is asked about by more than one rule (what is mounted
	// there, the homes it lies in), once when planned and once opened;
	// the mount table is read once for each. An opened source is known by
	// its file too: a descriptor number is reused once closed.
	key := mountedKey{path: p, fd: fd}
	if fd >= 0 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return MountSource{}, err
		}
		key.dev, key.ino = st.Dev, st.Ino
	}
	if src, ok := c.mounted[key]; ok {
		return src, nil
	}
	src, err := mountedFrom(p, fd)
	if err == nil {
		if c.mounted == nil {
			c.mounted = map[mountedKey]MountSource{}
		}
		c.mounted[key] = src
	}
	return src, err
}

type mountedKey struct {
	path     string
	fd       int
	dev, ino uint64
}
