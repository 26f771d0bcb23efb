package specs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// ruleHooks lets a hook run only when the operator allowed its
// executable (hooks_allowed, empty by default): hooks run on the host as
// root, with the container's state on stdin, so a caller's hook is a
// command on the host. Docker's libnetwork-setkey hook is removed when the
// profile wants no network (it would give the container eth0 and a route
// even in a fresh namespace), and kept when the profile keeps the caller's
// network and the hook really is dockerd (/proc/<pid>/exe of a dockerd).
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
			setkey := len(hk.Args) > 0 && hk.Args[0] == "libnetwork-setkey"
			switch {
			case setkey && c.Profile.Network == NetworkNone:
				ds = append(ds, Decision{Rule: "hooks", Field: field, Action: Removed, Before: hk.Path + " libnetwork-setkey",
					Layer: LayerNetns, Why: "dockerd's hook would configure the sandbox's network namespace (eth0, routes)"})
				continue
			case setkey && kind.name == "prestart" && isDockerd(hk.Path):
				ds = append(ds, Decision{Rule: "hooks", Field: field, Action: Kept, Before: hk.Path, After: hk.Path,
					Layer: LayerNone, Why: "dockerd's own network hook, for a profile that keeps the caller's network"})
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

// isDockerd tells whether path is /proc/<pid>/exe of a running dockerd,
// the form dockerd gives its own hook.
func isDockerd(path string) bool {
	if !isProcExe(path) {
		return false
	}
	exe, err := os.Readlink(path)
	return err == nil && filepath.Base(exe) == "dockerd"
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
