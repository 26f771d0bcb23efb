package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// bundleDir is the caller's bundle directory, opened once before its
// config.json is read. The caller may rename it, or put a symlink to
// another directory (the host's /) at its path, at any moment; everything
// create reads or judges relative to the bundle goes through this
// descriptor, so it is the very directory whose config.json was judged.
type bundleDir struct {
	fd   int
	path string // as the caller named it, for messages and the record
}

func openBundleDir(path string) (*bundleDir, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	return &bundleDir{fd: fd, path: path}, nil
}

// at is a path that reaches name from the opened directory: relative
// names are resolved from it, absolute ones stay as they are.
func (b *bundleDir) at(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join("/proc/self/fd", strconv.Itoa(b.fd), name)
}

// real is the opened directory's real path now, from its descriptor.
func (b *bundleDir) real() (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(b.fd))
	if err != nil {
		return "", fmt.Errorf("bundle %s: %w", b.path, err)
	}
	return p, nil
}

func (b *bundleDir) close() {
	if b != nil && b.fd >= 0 {
		unix.Close(b.fd)
		b.fd = -1
	}
}
