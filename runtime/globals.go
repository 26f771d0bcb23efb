package runtime

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/specs"
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
	criuJudged    bool // Criu passed criuRefusal: only then does runc get it

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

// LoadConfig loads the configuration the globals name.
func (g *Globals) LoadConfig() (*Config, error) {
	return LoadConfig(g.Config, g.explicit)
}

// Target is who a command line is rendered for.
type Target int

const (
	// ForRunc is runc, or crun, which takes runc's flags.
	ForRunc Target = iota
	// ForRunsc is gVisor's runsc: some runc flags differ or are unknown.
	ForRunsc
	// ForSelf is bulkhead's own children (the watchdog, the probe's
	// verbs): they need the caller's state root and configuration, and
	// run in / (paths are made absolute).
	ForSelf
)

// GlobalFlag is one global flag: how the command line parses it into
// Globals, and what each target gets of it. The table GlobalFlags is the
// only place either is written, as VerbFlags is for the verbs' flags.
type GlobalFlag struct {
	Flag
	EnvVars []string
	// Read takes the flag's parsed value into g.
	Read func(g *Globals, v Values)
	// Render is the flag as target gets it; none when the flag does not
	// apply to the target or is unset.
	Render func(g *Globals, t Target) []string
}

// GlobalFlags are runc's global flags and bulkhead's own, in the order
// the command lines rendered from them carry them.
var GlobalFlags = []GlobalFlag{
	{Flag: Flag{Name: "root", Kind: String, Default: state.DefaultRoot, Usage: "root directory for container state"},
		// Absolute from the start, as runc makes it: every path below it
		// (the pins, the bundle handed over, the mounts looked up in
		// mountinfo, which names them only absolutely) is derived from it.
		Read: func(g *Globals, v Values) {
			g.Root = v.String("root")
			if abs, err := filepath.Abs(g.Root); err == nil {
				g.Root = abs
			}
		},
		Render: func(g *Globals, t Target) []string {
			if t == ForSelf {
				root, _ := filepath.Abs(g.Root)
				return []string{"--root", root}
			}
			return nil // per backend: backendArgv
		}},
	{Flag: Flag{Name: "log", Kind: String, Usage: "log file (default: stderr)"},
		Read: func(g *Globals, v Values) { g.Log = v.String("log") },
		// bulkhead's children log to stderr, which is /dev/null for the
		// watchdog and captured for the probe's verbs.
		Render: func(g *Globals, t Target) []string { return stringArg("--log", g.Log, t != ForSelf) }},
	{Flag: Flag{Name: "log-format", Kind: String, Default: "text", Usage: "log format: text or json"},
		Read:   func(g *Globals, v Values) { g.LogFormat = v.String("log-format") },
		Render: func(g *Globals, t Target) []string { return stringArg("--log-format", g.LogFormat, t != ForSelf) }},
	{Flag: Flag{Name: "debug", Kind: Bool, Usage: "enable debug logging"},
		Read:   func(g *Globals, v Values) { g.Debug = v.Bool("debug") },
		Render: func(g *Globals, _ Target) []string { return boolArg("--debug", g.Debug) }},
	{Flag: Flag{Name: "systemd-cgroup", Kind: Bool, Usage: "use systemd for cgroups"},
		Read:   func(g *Globals, v Values) { g.SystemdCgroup = v.Bool("systemd-cgroup") },
		Render: func(g *Globals, _ Target) []string { return boolArg("--systemd-cgroup", g.SystemdCgroup) }},
	{Flag: Flag{Name: "rootless", Kind: String, Default: "auto", Usage: "ignore cgroup permission errors: true, false or auto"},
		Read: func(g *Globals, v Values) {
			if v.IsSet("rootless") {
				g.Rootless = v.String("rootless")
			}
		},
		Render: func(g *Globals, t Target) []string {
			if t == ForRunsc {
				// runsc's --rootless is boolean.
				r, _ := strconv.ParseBool(g.Rootless)
				return boolArg("--rootless", r)
			}
			return stringArg("--rootless", g.Rootless, true)
		}},
	{Flag: Flag{Name: "criu", Kind: String, Usage: "path to criu binary (runc only)"},
		Read:   func(g *Globals, v Values) { g.Criu = v.String("criu") },
		Render: func(g *Globals, t Target) []string { return stringArg("--criu", g.Criu, t == ForRunc && g.criuJudged) }},
	{Flag: Flag{Name: "config", Kind: String, Default: DefaultConfigPath, Usage: "bulkhead configuration file"}, EnvVars: []string{"BULKHEAD_CONFIG"},
		Read: func(g *Globals, v Values) { g.SetConfig(v.String("config"), v.IsSet("config")) },
		Render: func(g *Globals, t Target) []string {
			if t != ForSelf || !g.explicit {
				return nil
			}
			config, _ := filepath.Abs(g.Config)
			return []string{"--config", config}
		}},
	{Flag: Flag{Name: "profile", Kind: String, Usage: "policy profile (default: the configuration's default_profile)"},
		Read:   func(g *Globals, v Values) { g.Profile = v.String("profile") },
		Render: func(g *Globals, t Target) []string { return stringArg("--profile", g.Profile, t == ForSelf) }},
	{Flag: Flag{Name: "backend", Kind: String, Usage: "backend runtime (default: the profile's)"},
		Read:   func(g *Globals, v Values) { g.Backend = v.String("backend") },
		Render: func(g *Globals, t Target) []string { return stringArg("--backend", g.Backend, t == ForSelf) }},
}

// rootlessWeakens says how the global --rootless loosens the boundary
// for a caller as root: runc then ignores errors joining the container's
// cgroups, at create and (kept in its state) at every exec, so an exec'd
// process could run outside the container's limits. "" when it does not.
func (g *Globals) rootlessWeakens() string {
	on, err := strconv.ParseBool(g.Rootless)
	if err != nil || !on || os.Geteuid() != 0 {
		return ""
	}
	return "--rootless " + g.Rootless + ": runc would ignore errors joining the container's cgroups, at create and at every exec, so processes could run outside its limits"
}

func boolArg(name string, set bool) []string {
	if !set {
		return nil
	}
	return []string{name}
}

func stringArg(name, value string, applies bool) []string {
	if !applies || value == "" {
		return nil
	}
	return []string{name, value}
}

// Read takes every global flag's parsed value into g.
func (g *Globals) Read(v Values) {
	for _, f := range GlobalFlags {
		f.Read(g, v)
	}
}

// Args renders the global flags for target, in the table's order.
func (g *Globals) Args(t Target) []string {
	var out []string
	for _, f := range GlobalFlags {
		out = append(out, f.Render(g, t)...)
	}
	return out
}

// selfArgv is the command line of one of bulkhead's own verbs run as a
// child, with the caller's globals.
func (g *Globals) selfArgv(self, verb string, rest ...string) []string {
	argv := append([]string{self}, g.Args(ForSelf)...)
	argv = append(argv, verb)
	return append(argv, rest...)
}

// criuRefusal refuses a --criu program that anyone but root could have
// written or replaced: runc runs it as root, with every capability and
// outside any container, to checkpoint or restore one. Only a program
// judged here reaches runc (criuJudged); every other verb drops the flag.
func (g *Globals) criuRefusal() error {
	if g.Criu == "" {
		return nil
	}
	path, err := exec.LookPath(g.Criu)
	if err != nil {
		return fmt.Errorf("--criu %s: %w", g.Criu, err)
	}
	// runc is handed the program's real path, judged here: a link on
	// the way (Debian's /sbin) could be turned elsewhere meanwhile.
	real, why, err := specs.RootFile(path)
	if err != nil {
		return fmt.Errorf("--criu %s: %w", g.Criu, err)
	}
	if why != "" {
		return fmt.Errorf("--criu %s: %s can be changed by others than root, and runc runs criu as root; install criu where only root can change it",
			g.Criu, why)
	}
	g.Criu, g.criuJudged = real, true
	return nil
}

// backendArgv is the argument vector for one call of a backend: its
// configured args, its own --root below the caller's, the global flags
// rendered for it, then the verb and what follows. runsc needs
// --network=none and --oci-seccomp so that the policy holds inside gVisor
// too.
func (g *Globals) backendArgv(b *backend.Backend, verb string, rest ...string) []string {
	argv := []string{b.Path}
	argv = append(argv, b.Args...)
	argv = append(argv, "--root", state.BackendRoot(g.Root, b.Name))
	t := ForRunc
	if b.IsGVisor() {
		t = ForRunsc
	}
	argv = append(argv, g.Args(t)...)
	if t == ForRunsc {
		// After the configuration's args, which they override: no network,
		// the spec's filter, and no overlay that would take the job's
		// writes out of the layers bulkhead caps and exports (a runsc
		// whose default is one renders no flag for it to verify).
		argv = append(argv, "--network=none", "--oci-seccomp", "--overlay2=none")
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
