package specs

import (
	"os"
	"path/filepath"
	"strings"
)

// engineDirOf is the directory laid out as an engine's state that holds
// the file at real (engineStatePath), or home where the file is at the
// engine's home itself.
func engineDirOf(real, home string) string {
	if _, root := engineStatePath(canonicalRun(real)); root != "" {
		return root
	}
	return home
}

// sameDir tells whether two paths name one directory, links resolved.
func sameDir(a, b string) bool {
	ra, err := filepath.EvalSymlinks(a)
	if err != nil {
		return false
	}
	rb, err := filepath.EvalSymlinks(b)
	return err == nil && ra == rb
}

// dockerTask tells whether this container is the task dockerd made for
// the Docker container whose file is at real: a task in dockerd's
// containerd namespace, moby, of the containerd dockerd uses. dockerd
// runs one of its own with its root below the data root that holds the
// file (<data-root>/containerd/daemon), unless it is told to use the
// host's, whose root is /var/lib/containerd: a task of any other
// containerd on the host, whose clients choose the id, is not dockerd's.
// A client of the containerd dockerd shares reaches Docker's running
// containers through containerd's API already (a namespace carries no
// access control).
func (c *Context) dockerTask(real string) bool {
	ns, root, ok := c.containerdTask()
	if !ok || ns != "moby" {
		return false
	}
	own := filepath.Join(engineDirOf(real, "/var/lib/docker"), "containerd", "daemon")
	if _, err := os.Lstat(own); err == nil {
		return sameDir(root, own)
	}
	return sameDir(root, "/var/lib/containerd")
}

// criContainerdOf tells whether the CRI plugin's file at real is the one
// of the containerd that made this task: in its root (the bundle's work
// link names it) or in its state (where the bundle is).
func (c *Context) criContainerdOf(real string) bool {
	if strings.HasPrefix(grantPath(real), "/run/containerd/") {
		state := filepath.Dir(filepath.Dir(filepath.Dir(c.Bundle)))
		return sameDir(engineDirOf(real, "/run/containerd"), state)
	}
	_, root, ok := c.containerdTask()
	return ok && sameDir(engineDirOf(real, "/var/lib/containerd"), root)
}
