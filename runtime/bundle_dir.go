package runtime

import (
	"errors"
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
	fd int
	// path is the opened directory's own path, links resolved, as it was
	// when opened: what the rules, the record and the audit name.
	path string
}

// openBundleDir opens the bundle at path and names it by its real path.
// The rules judge some bundles by that path (a CRI engine's, whose pod
// annotations count; a Docker task's, whose container files it may
// bind), so it must name the very directory opened. A link of /proc
// (/proc/<pid>/root, cwd, fd/<n>) leads the kernel into another process's
// mount namespace while its text reads as a path of the host's: a user
// who made a namespace of its own could put its config.json at a CRI
// bundle's path there. So no such link is followed, and the real path must
// reach the same directory as the descriptor.
func openBundleDir(path string) (*bundleDir, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("bundle %s: its path goes through a link of /proc (a process's root, cwd or descriptor), into files bulkhead cannot judge by their path, or through too many links; give the bundle's own path", path)
	}
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	b := &bundleDir{fd: fd, path: path}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	var opened, named unix.Stat_t
	if err := unix.Fstat(fd, &opened); err != nil {
		b.close()
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	if err := unix.Stat(real, &named); err != nil || named.Dev != opened.Dev || named.Ino != opened.Ino {
		b.close()
		return nil, fmt.Errorf("bundle %s: its path no longer names the directory opened (it was moved, or a link on the way changed, while bulkhead opened it); give a bundle that stays in place", path)
	}
	b.path = real
	return b, nil
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
