package specs

import (
	"os"
	"path/filepath"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// kernelFSGuard wraps a tree so that, once a link has been followed, a
// lookup under /proc or /sys is refused: those hold links that resolve
// per process (/proc/1/cwd is runc's working directory while it mounts,
// / once the container runs) or lead deeper than they read
// (/sys/dev/char/*), so where a path goes after one is not known before
// runc walks it. A destination named under /proc or /sys directly is
// judged by its name (mountPlaceProblem).
type kernelFSGuard struct {
	securejoin.VFS
	linked bool
}

// kernelFSLinkError is the refusal of kernelFSGuard.
type kernelFSLinkError string

func (e kernelFSLinkError) Error() string {
	return "a link leads into " + string(e) + ", whose links resolve per process: where it ends is not known before runc walks it"
}

func (g *kernelFSGuard) Lstat(p string) (os.FileInfo, error) {
	if c := filepath.Clean("/" + p); g.linked && (under(c, "/proc") || under(c, "/sys")) {
		return nil, kernelFSLinkError(c)
	}
	return g.VFS.Lstat(p)
}

func (g *kernelFSGuard) Readlink(p string) (string, error) {
	g.linked = true
	return g.VFS.Readlink(p)
}

// hostTree is a tree the host sees at a directory (a running container's
// /proc/<pid>/root), read as a securejoin.VFS over the container's paths.
type hostTree string

func (root hostTree) Lstat(p string) (os.FileInfo, error) {
	return os.Lstat(string(root) + filepath.Clean("/"+p))
}

func (root hostTree) Readlink(p string) (string, error) {
	return os.Readlink(string(root) + filepath.Clean("/"+p))
}

// PlaceIn is where p lies in the running container whose tree the host
// sees at root, as runc placed a mount there: every link followed inside
// it, none into /proc or /sys (kernelFSGuard).
func PlaceIn(root, p string) (string, error) {
	return securejoin.SecureJoinVFS("/", p, &kernelFSGuard{VFS: hostTree(root)})
}
