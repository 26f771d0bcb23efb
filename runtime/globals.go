package runtime

import (
	"path/filepath"
	"strconv"
	"strings"

	"bulkhead.dev/bulkhead/runtime/state"

	"bulkhead.dev/bulkhead/runtime/backend"
)

// Globals are runc's global flags plus bulkhead's own. dockerd puts a
// runtime's runtimeArgs before --root, so bulkhead's flags are global too
// and may stand anywhere among runc's.
type Globals struct {
	Root          string
	Log           string
	LogFormat     string
	Debug         bool
	SystemdCgroup bool
	Rootless      string
	Criu          string

	Config   string
	Profile  string
	Backend  string
	Argv0    string
	explicit bool // Config came from --config or BULKHEAD_CONFIG
}

// SetConfig records the configuration file to read and whether the caller
// named it (a named file must exist).
func (g *Globals) SetConfig(path string, explicit bool) {
	g.Config = path
	g.explicit = explicit
}

// backendArgv is the argument vector for one call of a backend: its
// configured args, the global flags translated for it, then the verb and
// what follows. runsc rejects runc's short flags and some long ones, and
// needs --network=none and --oci-seccomp so that the policy holds inside
// gVisor too.
func (g *Globals) backendArgv(b *backend.Backend, verb string, rest ...string) []string {
	argv := []string{b.Path}
	argv = append(argv, b.Args...)
	argv = append(argv, "--root", state.BackendRoot(g.Root, b.Name))
	if g.Log != "" {
		argv = append(argv, "--log", g.Log)
	}
	if g.LogFormat != "" {
		argv = append(argv, "--log-format", g.LogFormat)
	}
	if g.Debug {
		argv = append(argv, "--debug")
	}
	if g.SystemdCgroup {
		argv = append(argv, "--systemd-cgroup")
	}
	if b.IsGVisor() {
		if r, _ := strconv.ParseBool(g.Rootless); r {
			argv = append(argv, "--rootless")
		}
		argv = append(argv, "--network=none", "--oci-seccomp")
	} else {
		if g.Rootless != "" {
			argv = append(argv, "--rootless", g.Rootless)
		}
		if g.Criu != "" {
			argv = append(argv, "--criu", g.Criu)
		}
	}
	argv = append(argv, verb)
	return append(argv, rest...)
}

// defaultBackendForArgv0 picks the backend a symlink name implies:
// bulkhead-runsc runs gVisor.
func defaultBackendForArgv0(argv0 string) string {
	base := filepath.Base(argv0)
	if name, ok := strings.CutPrefix(base, "bulkhead-"); ok && name != "" {
		return name
	}
	return ""
}
