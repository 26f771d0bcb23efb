package specs

import (
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func ruleCwd(c *Context, s *rspec.Spec) []Decision {
	return checkCwd(ensureProcess(s), rootfsPath(c, s.Root))
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
// directory either. The rootfs check follows the image's own symlinks; it
// is validation, since the image could change before runc resolves the
// path again.
func checkCwd(p *rspec.Process, rootfs string) []Decision {
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
	if rootfs != "" {
		resolved, err := securejoin.SecureJoin(rootfs, p.Cwd)
		if err != nil {
			return refuse("cwd does not resolve inside the rootfs: " + err.Error())
		}
		rel := "/" + strings.TrimPrefix(strings.TrimPrefix(resolved, rootfs), "/")
		if madeByRuntime(rel) {
			return refuse("cwd resolves through the image's symlinks to " + rel + ", under /proc, /dev or /sys (CVE-2024-21626); fix the image or choose another working directory")
		}
	}
	return []Decision{{Rule: rule, Field: field, Action: Kept, Before: p.Cwd, After: p.Cwd,
		Layer: LayerNone, Why: "validation only: cwd is absolute and not under /proc, /dev or /sys"}}
}

// madeByRuntime tells whether p lies in a tree the runtime mounts over the
// image: /proc, /dev (a tmpfs with runc's /dev/fd -> /proc/self/fd) or /sys.
func madeByRuntime(p string) bool {
	return under(p, "/proc") || under(p, "/dev") || under(p, "/sys")
}
