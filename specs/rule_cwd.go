package specs

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	securejoin "github.com/cyphar/filepath-securejoin"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func ruleCwd(c *Context, s *rspec.Spec) []Decision {
	var resolve func(string) (string, error)
	if v := viewOf(c, s); v != nil {
		resolve = v.resolve
	}
	return checkCwd(ensureProcess(s), resolve)
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
// directory either. resolve (nil when the tree is unknown) gives the path
// as the container will see it: through the image's symlinks and those in
// a bind's source (a checkout the job's author wrote), or, at an exec,
// through the running container's own tree (what the job wrote in its
// workspace, /tmp or home). It is validation, since the files could
// change before the backend resolves the path again.
func checkCwd(p *rspec.Process, resolve func(string) (string, error)) []Decision {
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
	if resolve != nil {
		resolved, err := resolve(p.Cwd)
		if err != nil {
			return refuse("cwd does not resolve inside the container: " + shown(err.Error()))
		}
		if madeByRuntime(resolved) {
			return refuse("cwd leads through symlinks in the container into " + shown(resolved) + " (under /proc, /dev or /sys, made by the runtime: beyond it lie leaked host descriptors, CVE-2024-21626); fix the link or choose another working directory")
		}
	}
	return []Decision{{Rule: rule, Field: field, Action: Kept, Before: p.Cwd, After: p.Cwd,
		Layer: LayerNone, Why: "validation only: cwd is absolute and does not resolve under /proc, /dev or /sys"}}
}

// liveResolver resolves a path in a running container's tree as the
// host sees it through root (/proc/<pid>/root of its init), every link
// followed inside it.
func liveResolver(root string) func(string) (string, error) {
	return func(p string) (string, error) { return resolveIn(runningTree{hostTree(root)}, p) }
}

// resolveIn resolves p in a container's tree read through fs, every link
// followed inside it. A path that enters /proc, /dev or /sys on the way is
// that tree: what lies beyond it is the runtime's or the host's (a
// leaked descriptor's directory, from which .. walks the host's tree),
// never the image's, so resolving stops there.
func resolveIn(fs securejoin.VFS, p string) (string, error) {
	resolved, err := securejoin.SecureJoinVFS("/", p, fs)
	var in runtimeTreeError
	if errors.As(err, &in) {
		return string(in), nil
	}
	return resolved, err
}

// runtimeTreeError stops a resolution where it enters /proc, /dev or
// /sys.
type runtimeTreeError string

func (e runtimeTreeError) Error() string { return string(e) + " is made by the runtime" }

// inRuntimeTree is the error for a path the resolution must not read.
func inRuntimeTree(p string) error {
	if p = filepath.Clean("/" + p); madeByRuntime(p) {
		return runtimeTreeError(p)
	}
	return nil
}

// madeByRuntime tells whether p lies in a tree the runtime mounts over the
// image: /proc, /dev (a tmpfs with runc's /dev/fd -> /proc/self/fd) or /sys.
func madeByRuntime(p string) bool {
	return under(p, "/proc") || under(p, "/dev") || under(p, "/sys")
}

// shown is s as a message can carry it: quoted when it holds bytes that
// are not UTF-8 or a rune a terminal would not show as itself (anything
// but letters, marks, numbers, punctuation, symbols and ASCII's space:
// control characters, bidi controls that reorder what is read, zero-width
// and other spaces). At an exec the path comes through links the job
// wrote, and a refusal goes to the caller's terminal.
func shown(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) < 0 {
		return s
	}
	return strconv.Quote(s)
}
