package specs

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// MaxSpecFile bounds what bulkhead reads of a config.json, an exec
// --process or an update --resources file: root reads them, outside any
// cgroup, from wherever the caller points.
const MaxSpecFile = 8 << 20

// ReadRegular reads the regular file at path, at most MaxSpecFile bytes.
// A FIFO, a device (/dev/zero) or a socket is refused before anything is
// read from it: it would block bulkhead or feed it without end. With
// follow false a symlink as the last component is refused too, so a
// bundle's config.json cannot make root read a file the bundle's author
// cannot (and echo its first bytes in a JSON error).
func ReadRegular(path string, follow bool) ([]byte, error) {
	return readRegular(path, path, follow)
}

// readRegular is ReadRegular naming the file name in errors: the path a
// person gave, where path reaches it through a descriptor.
func readRegular(path, name string, follow bool) ([]byte, error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(path, flags, 0)
	if errors.Is(err, unix.ELOOP) && !follow {
		return nil, fmt.Errorf("%s is a symlink; bulkhead reads only a regular file there", name)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s); bulkhead reads only a regular file there", name, st.Mode().Type())
	}
	if st.Size() > MaxSpecFile {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d bulkhead reads", name, st.Size(), MaxSpecFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSpecFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSpecFile {
		return nil, fmt.Errorf("%s: more than the %d bytes bulkhead reads", name, MaxSpecFile)
	}
	return data, nil
}
