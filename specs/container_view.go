package specs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// containerView reads the container's tree as runc will lay it out, for
// resolving a path there before any of it exists: the rootfs, and over
// it each mount in the spec's order at the place its destination
// resolves to through what lies beneath it then (the image's links and
// those in the sources of earlier binds alike, as runc follows them). A
// path is read from the last mount whose place holds it, else from the
// rootfs; a path on a mount other than a bind (a fresh tmpfs, the
// runtime's /proc) has no file before the container runs and reads as
// missing.
type containerView struct {
	rootfs, bundle string
	mounts         []viewMount
	// overlaid tells a bind that create turns into a workspace overlay,
	// whose mount points are made in its upper layer, not in the host's
	// source; nil when none is.
	overlaid func(rspec.Mount) bool
}

type viewMount struct {
	place       string // the destination as resolved
	source      string // the host directory of a bind, "" for any other mount
	destination string // as the spec names it
	overlay     bool   // a workspace overlay's: the source is its lower layer
	readOnly    bool   // mounted read-only: the job writes nothing there
}

// newContainerView is the view of s's rootfs alone, nil when the rootfs
// cannot be located.
func newContainerView(c *Context, s *rspec.Spec) *containerView {
	rootfs := rootfsPath(c, s.Root)
	if rootfs == "" {
		return nil
	}
	v := &containerView{rootfs: rootfs, bundle: c.Bundle}
	if p := c.Profile; p != nil && p.Mode == Enforce && p.WorkspaceModeOf() == WorkspaceOverlay {
		v.overlaid = p.IsWorkspace
	}
	return v
}

// viewOf is the view of s's rootfs with all of its mounts.
func viewOf(c *Context, s *rspec.Spec) *containerView {
	v := newContainerView(c, s)
	if v == nil {
		return nil
	}
	for _, m := range s.Mounts {
		v.add(m)
	}
	return v
}

// resolve is the path p names in the container once it runs, every link
// on the way followed inside it; resolving stops where it enters /proc,
// /dev or /sys (resolveIn).
func (v *containerView) resolve(p string) (string, error) {
	return resolveIn(runningTree{v}, p)
}

// place is where runc mounts a destination p: through every link of the
// tree as it stands then, none into /proc or /sys (kernelFSGuard). /dev
// and /tmp are fresh filesystems at that time, read as empty.
func (v *containerView) place(p string) (string, error) {
	return securejoin.SecureJoinVFS("/", p, &kernelFSGuard{VFS: v})
}

// add lays m over the view at the place its destination resolves to
// now, and returns that place. A destination that does not resolve is
// laid at its lexical place. A bind's source is read where the host
// resolves it, as runc opens it there.
func (v *containerView) add(m rspec.Mount) string {
	place, err := v.place(m.Destination)
	if err != nil {
		place = cleanAbs(m.Destination)
	}
	vm := viewMount{place: place, destination: m.Destination, readOnly: mountedReadOnly(m.Options)}
	if isBind(m) {
		vm.overlay = v.overlaid != nil && v.overlaid(m)
		vm.source = m.Source
		if !filepath.IsAbs(vm.source) && v.bundle != "" {
			vm.source = filepath.Join(v.bundle, vm.source)
		}
		if real, err := filepath.EvalSymlinks(vm.source); err == nil {
			vm.source = real
		}
		if !filepath.IsAbs(vm.source) {
			vm.source = ""
		}
	}
	v.mounts = append(v.mounts, vm)
	return place
}

// holder is the last mount whose place holds the container's path p;
// false when only the rootfs does.
func (v *containerView) holder(p string) (viewMount, bool) {
	for i := len(v.mounts) - 1; i >= 0; i-- {
		if under(p, v.mounts[i].place) {
			return v.mounts[i], true
		}
	}
	return viewMount{}, false
}

// hostPath is where the file at the container's path p is read on the
// host; false when no host file backs it.
func (v *containerView) hostPath(p string) (string, bool) {
	p = filepath.Clean("/" + p)
	m, ok := v.holder(p)
	if !ok {
		return filepath.Join(v.rootfs, p), true
	}
	if m.source == "" {
		return "", false
	}
	return filepath.Join(m.source, strings.TrimPrefix(p, m.place)), true
}

// missingInBind is why a mount at place would make its mount point in a
// host directory: place lies below a bind (not a workspace overlay) and
// its source holds nothing there, so the backend creates it, as root, in
// the host's source; "" otherwise.
func (v *containerView) missingInBind(place string) string {
	m, ok := v.holder(place)
	if !ok || m.source == "" || m.overlay || place == m.place {
		return ""
	}
	h := filepath.Join(m.source, strings.TrimPrefix(place, m.place))
	if _, err := os.Lstat(h); !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return "its mount point " + place + " is not in " + m.source + ", the host directory bound at " + m.destination +
		": the backend would have to make it there, as root, in the host's directory (runc meets the read-only bind; runsc's gofer made it, for good); " +
		"make the mount point in that directory, or mount elsewhere"
}

// mountedReadOnly tells whether options leave a mount read-only: the last
// of "ro" and "rw" is "ro", as the backends read them.
func mountedReadOnly(options []string) bool {
	for i := len(options) - 1; i >= 0; i-- {
		switch options[i] {
		case "ro":
			return true
		case "rw":
			return false
		}
	}
	return false
}

// writableBy tells what makes the container's path p writable to the job,
// "" when nothing does: the mount that holds it (a tmpfs, a bind mounted
// read-write, a workspace overlay), or the rootfs when it is not
// read-only; /proc, /dev and /sys are the runtime's, which no image
// decides.
func (v *containerView) writableBy(p string, rootReadOnly bool) string {
	if madeByRuntime(p) {
		return "the runtime's " + strings.SplitN(strings.TrimPrefix(p, "/"), "/", 2)[0]
	}
	m, ok := v.holder(p)
	switch {
	case !ok && !rootReadOnly:
		return "the rootfs, which is not read-only"
	case !ok:
		return ""
	case m.overlay:
		return "the workspace at " + m.destination
	case !m.readOnly:
		return "the mount at " + m.destination + ", which is not read-only"
	}
	return ""
}

// Lstat and Readlink make containerView a securejoin.VFS.
func (v *containerView) Lstat(p string) (os.FileInfo, error) {
	h, ok := v.hostPath(p)
	if !ok {
		return nil, &os.PathError{Op: "lstat", Path: p, Err: os.ErrNotExist}
	}
	return os.Lstat(h)
}

func (v *containerView) Readlink(p string) (string, error) {
	h, ok := v.hostPath(p)
	if !ok {
		return "", &os.PathError{Op: "readlink", Path: p, Err: os.ErrNotExist}
	}
	return os.Readlink(h)
}

// runningTree is a tree as a running container's paths resolve, which
// must not be read into /proc, /dev or /sys (resolveIn).
type runningTree struct{ securejoin.VFS }

func (t runningTree) Lstat(p string) (os.FileInfo, error) {
	if err := inRuntimeTree(p); err != nil {
		return nil, err
	}
	return t.VFS.Lstat(p)
}

func (t runningTree) Readlink(p string) (string, error) {
	if err := inRuntimeTree(p); err != nil {
		return "", err
	}
	return t.VFS.Readlink(p)
}
