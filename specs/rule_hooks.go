package specs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// ruleHooks lets a hook run only when the operator allowed its
// executable (hooks_allowed, empty by default): hooks run on the host as
// root, with the container's state on stdin, so a caller's hook is a
// command on the host. Docker's libnetwork-setkey hook is removed when the
// profile wants no network (it would give the container eth0 and a route
// even in a fresh namespace), and kept when the profile keeps the caller's
// network and the hook really is dockerd (/proc/<pid>/exe of a dockerd)
// with exactly the arguments dockerd writes (setkeyRefusal).
func ruleHooks(c *Context, s *rspec.Spec) []Decision {
	if s.Hooks == nil {
		return nil
	}
	h := s.Hooks
	var ds []Decision
	for _, kind := range []struct {
		name  string
		hooks *[]rspec.Hook
	}{
		//lint:ignore SA1019 engines still send prestart hooks (Docker's libnetwork-setkey); they must be policed
		{"prestart", &h.Prestart}, {"createRuntime", &h.CreateRuntime}, {"createContainer", &h.CreateContainer},
		{"startContainer", &h.StartContainer}, {"poststart", &h.Poststart}, {"poststop", &h.Poststop},
	} {
		var kept []rspec.Hook
		for i, hk := range *kind.hooks {
			field := fmt.Sprintf("hooks.%s[%d]", kind.name, i)
			setkey := len(hk.Args) > 0 && hk.Args[0] == setkeyName
			var exe, execRoot string
			var rootErr error
			if setkey && kind.name == "prestart" && c.Profile.Network != NetworkNone {
				exe, execRoot, rootErr = dockerdOf(hk.Path)
			}
			switch {
			case setkey && c.Profile.Network == NetworkNone:
				ds = append(ds, Decision{Rule: "hooks", Field: field, Action: Removed, Before: hk.Path + " libnetwork-setkey",
					Layer: LayerNetns, Why: "dockerd's hook would configure the sandbox's network namespace (eth0, routes)"})
				continue
			case exe != "" && rootErr != nil:
				ds = append(ds, Decision{Rule: "hooks", Field: field + ".args[1]", Action: Refused, Before: strings.Join(hk.Args, " "), Layer: LayerNone,
					Why: fmt.Sprintf("the exec root of the dockerd that runs the hook cannot be read (%v), so its socket cannot be told from another; give dockerd an absolute --exec-root", rootErr)})
				continue
			case exe != "":
				if part, why := setkeyRefusal(hk, c.ID, execRoot); why != "" {
					ds = append(ds, Decision{Rule: "hooks", Field: field + part, Action: Refused, Before: strings.Join(hk.Args, " "), Layer: LayerNone, Why: why})
					continue
				}
				ds = append(ds, Decision{Rule: "hooks", Field: field, Action: Tightened, Before: hk.Path, After: exe,
					Layer: LayerNone, Why: "dockerd's own network hook, for a profile that keeps the caller's network, with dockerd's own arguments; run from dockerd's executable on the host, not through a pid"})
				hk.Path = exe
			case filepath.IsAbs(hk.Path) && hasOpt(c.Profile.HooksAllowed, filepath.Clean(hk.Path)):
				ds = append(ds, Decision{Rule: "hooks", Field: field, Action: Kept, Before: hk.Path, After: hk.Path,
					Layer: LayerNone, Why: "on the profile's hooks_allowed"})
			default:
				ds = append(ds, Decision{Rule: "hooks", Field: field, Action: Refused, Before: hk.Path, Layer: LayerNone,
					Why: "a hook runs on the host as root; remove it, or an administrator adds its executable to hooks_allowed"})
				continue
			}
			kept = append(kept, hk)
		}
		*kind.hooks = kept
	}
	return ds
}

// dockerdExecutable is the host path of the executable of the process
// whose /proc/<pid>/exe path names, when that process is a dockerd of the
// host: in bulkhead's own mount and pid namespaces, running as root, its
// executable named dockerd, owned by root and writable by no one else,
// and the file at that path the very one it runs. "" otherwise: a
// container's process can be named dockerd too, and a pid can be reused
// before the hook runs, so the hook is handed the checked path instead.
func dockerdExecutable(procExe string) string {
	if !isProcExe(procExe) {
		return ""
	}
	dir := filepath.Dir(filepath.Clean(procExe))
	for _, ns := range []string{"mnt", "pid"} {
		if !sameFile(dir+"/ns/"+ns, "/proc/self/ns/"+ns) {
			return ""
		}
	}
	status, err := os.ReadFile(dir + "/status")
	if err != nil || !rootProcess(string(status)) {
		return ""
	}
	exe, err := os.Readlink(procExe)
	if err != nil || filepath.Base(exe) != "dockerd" || !filepath.IsAbs(exe) {
		return ""
	}
	if !sameFile(procExe, exe) || !isDockerdBinary(exe) {
		return ""
	}
	return exe
}

// dockerdOf is dockerdExecutable, with the exec root of that dockerd
// (dockerdExecRootOf). The process is judged again after its command line
// is read, so a pid reused in between cannot lend the command line of a
// process that is not a dockerd of the host.
func dockerdOf(procExe string) (exe, execRoot string, err error) {
	if exe = dockerdExecutable(procExe); exe == "" {
		return "", "", nil
	}
	execRoot, err = dockerdExecRootOf(filepath.Dir(filepath.Clean(procExe)))
	if dockerdExecutable(procExe) != exe {
		return "", "", nil
	}
	return exe, execRoot, err
}

// isDockerdBinary: a regular file named dockerd, owned by root and
// writable by no one else.
func isDockerdBinary(path string) bool {
	var st unix.Stat_t
	if filepath.Base(path) != "dockerd" || unix.Stat(path, &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Uid == 0 && st.Mode&0o022 == 0
}

// rootProcess: every uid in a /proc status is 0.
func rootProcess(status string) bool {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			for _, f := range strings.Fields(v) {
				if f != "0" {
					return false
				}
			}
			return true
		}
	}
	return false
}

// sameFile: a and b (followed) are one inode.
func sameFile(a, b string) bool {
	var x, y unix.Stat_t
	return unix.Stat(a, &x) == nil && unix.Stat(b, &y) == nil && x.Dev == y.Dev && x.Ino == y.Ino
}

// isProcExe: /proc/<pid>/exe of a process other than init.
func isProcExe(path string) bool {
	parts := strings.Split(filepath.Clean(path), "/")
	if len(parts) != 4 || parts[1] != "proc" || parts[3] != "exe" {
		return false
	}
	n, err := strconv.Atoi(parts[2])
	return err == nil && n > 1
}

func mentions(h rspec.Hook, word string) bool {
	if strings.Contains(h.Path, word) {
		return true
	}
	for _, a := range h.Args {
		if strings.Contains(a, word) {
			return true
		}
	}
	return false
}
