package specs

import (
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
}

func (c *Context) resolve(p string) (string, error) {
	if c.Host != nil && c.Host.Resolve != nil {
		return c.Host.Resolve(p)
	}
	return resolveHost(p)
}

func (c *Context) findChannel(p string) (string, error) {
	if c.Host != nil && c.Host.FindChannel != nil {
		return c.Host.FindChannel(p)
	}
	return findChannel(p)
}

func (c *Context) dirInfo(p string) (unix.Stat_t, error) {
	if c.Host != nil && c.Host.DirInfo != nil {
		return c.Host.DirInfo(p)
	}
	var st unix.Stat_t
	return st, unix.Lstat(p, &st)
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
