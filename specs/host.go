package specs

import (
	"os"
	"path/filepath"
	"strings"
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
	return mountedFrom(p, fd)
}
