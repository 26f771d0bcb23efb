package specs

import (
	"os"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func ruleCwd(c *Context, s *rspec.Spec) []Decision {
	return checkCwd(ensureProcess(s), viewOf(c, s))
}

// rootfsPath is where root.path lies on the host, "" when it cannot be
// known (no root, or a relative one without a bundle).
func rootfsPath(c *Context, r *rspec.Root) string {
	if r == nil || r.Path == "" {
		return ""
	}
	if filepath.IsAbs(r.Path) {
		return filepath.Clean(r.Path)
	}
	if c.Bundle == "" {
		return ""
	}
	return filepath.Join(c.Bundle, r.Path)
}

// checkCwd refuses a working directory in a tree the kernel or the
// runtime makes: a cwd of /proc/self/fd/N starts the process inside a
// directory descriptor leaked from the runtime, on the host
// (CVE-2024-21626), and so does /dev/fd/N, since runc makes /dev/fd a link
// to /proc/self/fd in the container's /dev; /sys holds no working
// directory either. The path is resolved as the container will see it
// (view, nil when unknown): the image's symlinks and those in a bind's
// source (a checkout the job's author wrote, a workspace the job wrote
// before an exec) alike. It is validation, since the files could change
// before the backend resolves the path again.
func checkCwd(p *rspec.Process, view *containerView) []Decision {
	const rule, field = "cwd", "process.cwd"
	if p.Cwd == "" {
		p.Cwd = "/"
		return []Decision{{Rule: rule, Field: field, Action: Added, Before: "empty", After: "/",
			Layer: LayerNone, Why: "an empty cwd is invalid; / is what engines use"}}
	}
	refuse := func(why string) []Decision {
		return []Decision{{Rule: rule, Field: field, Action: Refused, Before: p.Cwd,
			Layer: LayerNone, Why: why}}
	}
	if !filepath.IsAbs(p.Cwd) {
		return refuse("cwd must be an absolute path inside the container; set an absolute working directory")
	}
	if madeByRuntime(filepath.Clean(p.Cwd)) {
		return refuse("a cwd under /proc, /dev or /sys can reach host directories through leaked descriptors (/proc/self/fd, /dev/fd; CVE-2024-21626); set a working directory in the image")
	}
	if view != nil {
		resolved, err := securejoin.SecureJoinVFS("/", p.Cwd, view)
		if err != nil {
			return refuse("cwd does not resolve inside the container: " + err.Error())
		}
		if madeByRuntime(resolved) {
			return refuse("cwd resolves through symlinks in the image or a mounted directory to " + resolved + ", under /proc, /dev or /sys (CVE-2024-21626); fix the link or choose another working directory")
		}
	}
	return []Decision{{Rule: rule, Field: field, Action: Kept, Before: p.Cwd, After: p.Cwd,
		Layer: LayerNone, Why: "validation only: cwd is absolute and does not resolve under /proc, /dev or /sys"}}
}

// containerView reads the container's tree as its mounts will show it,
// for resolving a path there: a path is read from the bind that holds it
// (the deepest destination, the last of equal ones), else from the rootfs.
// A path on any other mount (a fresh tmpfs, the runtime's /proc) has no
// file to read before the container runs, and reads as missing.
type containerView struct {
	rootfs string
	binds  []rspec.Mount
	others []string // destinations of mounts that are not binds
}

// viewOf is the view of s's rootfs and mounts, nil when the rootfs cannot
// be located.
func viewOf(c *Context, s *rspec.Spec) *containerView {
	rootfs := rootfsPath(c, s.Root)
	if rootfs == "" {
		return nil
	}
	v := &containerView{rootfs: rootfs}
	for _, m := range s.Mounts {
		if !isBind(m) {
			v.others = append(v.others, filepath.Clean(m.Destination))
			continue
		}
		if !filepath.IsAbs(m.Source) && c.Bundle != "" {
			m.Source = filepath.Join(c.Bundle, m.Source)
		}
		m.Destination = filepath.Clean(m.Destination)
		v.binds = append(v.binds, m)
	}
	return v
}

// hostPath is where the file at the container's path p is read on the
// host; false when no host file backs it.
func (v *containerView) hostPath(p string) (string, bool) {
	p = filepath.Clean("/" + p)
	held, from := "", ""
	for _, m := range v.binds {
		if under(p, m.Destination) && len(m.Destination) >= len(held) {
			held, from = m.Destination, m.Source
		}
	}
	for _, d := range v.others {
		if under(p, d) && len(d) > len(held) {
			return "", false
		}
	}
	if held == "" {
		return filepath.Join(v.rootfs, p), true
	}
	if !filepath.IsAbs(from) {
		return "", false
	}
	return filepath.Join(from, strings.TrimPrefix(p, held)), true
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

// madeByRuntime tells whether p lies in a tree the runtime mounts over the
// image: /proc, /dev (a tmpfs with runc's /dev/fd -> /proc/self/fd) or /sys.
func madeByRuntime(p string) bool {
	return under(p, "/proc") || under(p, "/dev") || under(p, "/sys")
}
