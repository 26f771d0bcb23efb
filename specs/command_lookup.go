package specs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// maxNamedCandidates bounds the places a refusal lists.
const maxNamedCandidates = 8

// CommandMissing is why the backend would fail to start s's process
// because its command is not in the container: runc looks args[0] up in
// create, which then fails and is undone, and runsc only in start, after
// which an engine may forget a created container (dockerd 20.10 does);
// check must answer as create does on both. "" when the command is
// there, and whenever the container's view cannot tell (a path on a mount
// other than a bind, or one that resolves into /proc, /dev or /sys): only
// a certain absence refuses. The lookup is the backend's: an absolute
// name as it is, a name with a slash from the cwd, any other name in each
// absolute directory of PATH, which is the last PATH= entry for runc (its
// init sets the environment in order) and the first for gVisor
// (fsimpl/user's ResolveExecutablePath); neither has a default PATH.
func CommandMissing(c *Context, s *rspec.Spec, gvisor bool) string {
	if s.Process == nil || len(s.Process.Args) == 0 || s.Process.Args[0] == "" {
		return ""
	}
	v := viewOf(c, s)
	if v == nil {
		return ""
	}
	name := s.Process.Args[0]
	var candidates []string
	switch {
	case filepath.IsAbs(name):
		candidates = []string{name}
	case strings.Contains(name, "/"):
		cwd := s.Process.Cwd
		if cwd == "" {
			cwd = "/"
		}
		candidates = []string{filepath.Join(cwd, name)}
	default:
		for _, dir := range commandDirs(s.Process.Env, gvisor) {
			candidates = append(candidates, filepath.Join(dir, name))
		}
	}
	for _, p := range candidates {
		if !v.certainlyNotExecutable(p) {
			return ""
		}
	}
	if len(candidates) == 0 {
		return fmt.Sprintf("%s is looked up in PATH, which the environment does not set or which holds no absolute directory", shown(name))
	}
	if len(candidates) == 1 && candidates[0] == cleanAbs(name) {
		return fmt.Sprintf("%s is not an executable file in the container", shown(name))
	}
	looked := candidates
	if len(looked) > maxNamedCandidates {
		looked = append(looked[:maxNamedCandidates:maxNamedCandidates], fmt.Sprintf("and %d more", len(candidates)-maxNamedCandidates))
	}
	return fmt.Sprintf("%s is not an executable file in the container (looked for %s)", shown(name), shown(strings.Join(looked, ", ")))
}

// commandDirs are the absolute directories of the PATH= entry of env the
// backend reads: the first for gVisor, the last for runc.
func commandDirs(env []string, gvisor bool) []string {
	var path string
	found := false
	for _, e := range env {
		if p, ok := strings.CutPrefix(e, "PATH="); ok && !(gvisor && found) {
			path, found = p, true
		}
	}
	var dirs []string
	seen := map[string]bool{}
	for _, d := range filepath.SplitList(path) {
		if filepath.IsAbs(d) && !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// certainlyNotExecutable is whether the container, once laid out, holds
// no regular file with an execute bit at p, every link followed inside
// it; false when the view cannot tell. Links that do not end (a link to
// itself) end no lookup: the view follows more of them than gVisor's 40.
func (v *containerView) certainlyNotExecutable(p string) bool {
	resolved, err := v.resolve(p)
	if errors.Is(err, syscall.ELOOP) {
		return true
	}
	if err != nil || madeByRuntime(resolved) {
		return false
	}
	h, ok := v.hostPath(resolved)
	if !ok {
		return false
	}
	fi, err := os.Lstat(h)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return true
	case err != nil:
		return false
	}
	return !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0
}
