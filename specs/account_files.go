package specs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	securejoin "github.com/cyphar/filepath-securejoin"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// accountFiles are the files runc's init opens in the container at create
// and at every exec (libcontainer/user's GetExecUserPath), as root with
// every capability and no seccomp filter yet, before it takes the
// container's user.
var accountFiles = []string{"/etc/passwd", "/etc/group"}

// AccountFilesWritable is why the job could choose what runc's init
// opens as root: an account file, or a link on the way to it, lies where
// the job writes (a link into /tmp, a workspace, /proc/self/fd), or the
// file is no regular file. A FIFO the job made there held every exec's
// root init open in the container for as long as it liked, and released
// the caller's command after the exec had failed. "" when each lies on
// read-only storage, or is absent there.
func AccountFilesWritable(c *Context, s *rspec.Spec) string {
	v := viewOf(c, s)
	if v == nil {
		return ""
	}
	rootReadOnly := s.Root != nil && s.Root.Readonly
	for _, name := range accountFiles {
		t := &linkTrail{VFS: runningTree{v}}
		resolved, err := resolveIn(t, name)
		for _, link := range t.links {
			if w := v.writableBy(link, rootReadOnly); w != "" {
				return fmt.Sprintf("%s leads through the link %s on %s", name, shown(link), w)
			}
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Sprintf("%s cannot be resolved in the container: %v", name, err)
		}
		if w := v.writableBy(resolved, rootReadOnly); w != "" {
			return fmt.Sprintf("%s leads to %s on %s", name, shown(resolved), w)
		}
		h, ok := v.hostPath(resolved)
		if !ok {
			continue
		}
		fi, err := os.Lstat(h)
		if err == nil && !fi.Mode().IsRegular() {
			return fmt.Sprintf("%s is no regular file but %s", name, kindOf(fi.Mode()))
		}
	}
	return ""
}

// linkTrail is a tree that records every link a resolution follows.
type linkTrail struct {
	securejoin.VFS
	links []string
}

func (t *linkTrail) Readlink(p string) (string, error) {
	t.links = append(t.links, p)
	return t.VFS.Readlink(p)
}

// kindOf names the kind of a file that is no regular file.
func kindOf(m fs.FileMode) string {
	switch m.Type() {
	case fs.ModeDir:
		return "a directory"
	case fs.ModeNamedPipe:
		return "a FIFO"
	case fs.ModeSocket:
		return "a socket"
	case fs.ModeDevice, fs.ModeDevice | fs.ModeCharDevice:
		return "a device"
	}
	return "a " + m.Type().String()
}
