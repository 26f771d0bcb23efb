package runtime

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Kind is the type of a verb flag's value.
type Kind int

const (
	Bool Kind = iota
	String
	Int
	StringSlice
	Duration
)

// Flag is one flag of a runc verb. The table of verbs below is what the
// CLI parses and what bulkhead hands on to the backend, so the two cannot
// drift apart.
type Flag struct {
	Name    string
	Aliases []string
	Kind    Kind
	Usage   string
	Default string
	// NotRunsc marks flags runsc does not know; they are dropped for it.
	NotRunsc bool
	// Weakens says how the flag loosens the boundary the profile sets;
	// enforce mode refuses a caller's flag that has it (Plan.FlagRefusal,
	// Passthrough). WeakensOnGVisor says so for gVisor's backends only.
	Weakens         string
	WeakensOnGVisor string
}

// Values is what a parsed command line offers; urfave/cli's Context
// satisfies it.
type Values interface {
	IsSet(name string) bool
	String(name string) string
	Bool(name string) bool
	Int(name string) int
	StringSlice(name string) []string
	Duration(name string) time.Duration
}

var (
	bundleFlag        = Flag{Name: "bundle", Aliases: []string{"b"}, Kind: String, Usage: "path to the root of the bundle directory"}
	consoleSocketFlag = Flag{Name: "console-socket", Kind: String, Usage: "path to an AF_UNIX socket which will receive the console's pseudoterminal master"}
	pidfdSocketFlag   = Flag{Name: "pidfd-socket", Kind: String, Usage: "path to an AF_UNIX socket which will receive the container's pidfd", NotRunsc: true}
	pidFileFlag       = Flag{Name: "pid-file", Kind: String, Usage: "file to write the process id to"}
	noPivotFlag       = Flag{Name: "no-pivot", Kind: Bool, Usage: "do not use pivot root to jail process inside rootfs", NotRunsc: true,
		Weakens: "the container's root would be a chroot over the host's mount tree, which stays in its mount namespace (runc's own help keeps it for ramdisks)"}
	noNewKeyringFlag = Flag{Name: "no-new-keyring", Kind: Bool, Usage: "do not create a new session keyring", NotRunsc: true,
		Weakens: "the container's processes would share its caller's session keyring (the shim's, the engine's), and with it every key its caller holds there, where runc gives each container a new one"}
	preserveFdsFlag = Flag{Name: "preserve-fds", Kind: Int, Usage: "pass N additional file descriptors to the container", NotRunsc: true}
	detachFlag      = Flag{Name: "detach", Aliases: []string{"d"}, Kind: Bool, Usage: "detach from the container's process"}
	formatFlag      = Flag{Name: "format", Aliases: []string{"f"}, Kind: String, Default: "table", Usage: "output format: table or json"}
)

// VerbFlags lists every verb bulkhead accepts with runc's flags for it.
var VerbFlags = map[string][]Flag{
	"create": {bundleFlag, consoleSocketFlag, pidfdSocketFlag, pidFileFlag, noPivotFlag, noNewKeyringFlag, preserveFdsFlag},
	"run": {bundleFlag, consoleSocketFlag, pidfdSocketFlag, detachFlag, pidFileFlag, noPivotFlag, noNewKeyringFlag, preserveFdsFlag,
		{Name: "keep", Kind: Bool, Usage: "do not delete the container after it exits", NotRunsc: true},
		{Name: "no-subreaper", Kind: Bool, Usage: "disable the use of the subreaper used to reap reparented processes", NotRunsc: true}},
	"start":  nil,
	"state":  nil,
	"kill":   {{Name: "all", Aliases: []string{"a"}, Kind: Bool, Usage: "send the signal to all processes in the container"}},
	"delete": {{Name: "force", Aliases: []string{"f"}, Kind: Bool, Usage: "forcibly delete the container if it is still running (uses SIGKILL)"}},
	"exec": {consoleSocketFlag, pidfdSocketFlag,
		{Name: "cwd", Kind: String, Usage: "current working directory in the container"},
		{Name: "env", Aliases: []string{"e"}, Kind: StringSlice, Usage: "set environment variables"},
		{Name: "tty", Aliases: []string{"t"}, Kind: Bool, Usage: "allocate a pseudo-TTY"},
		{Name: "user", Aliases: []string{"u"}, Kind: String, Usage: "UID (format: <uid>[:<gid>])"},
		{Name: "additional-gids", Aliases: []string{"g"}, Kind: StringSlice, Usage: "additional gids"},
		{Name: "process", Aliases: []string{"p"}, Kind: String, Usage: "path to the process.json"},
		detachFlag, pidFileFlag,
		{Name: "process-label", Kind: String, Usage: "set the asm process label for the process", NotRunsc: true},
		{Name: "apparmor", Kind: String, Usage: "set the apparmor profile for the process", NotRunsc: true},
		{Name: "no-new-privs", Kind: Bool, Usage: "set the no new privileges value for the process", NotRunsc: true},
		{Name: "cap", Aliases: []string{"c"}, Kind: StringSlice, Usage: "add a capability to the bounding set for the process"},
		preserveFdsFlag,
		{Name: "cgroup", Kind: StringSlice, Usage: "run the process in an (existing) sub-cgroup", NotRunsc: true},
		{Name: "ignore-paused", Kind: Bool, Usage: "allow exec in a paused container", NotRunsc: true}},
	"ps": {formatFlag},
	"events": {
		{Name: "interval", Kind: Duration, Default: "5s", Usage: "set the stats collection interval"},
		{Name: "stats", Kind: Bool, Usage: "display the container's stats then exit"}},
	"pause":  nil,
	"resume": nil,
	"update": {
		{Name: "resources", Aliases: []string{"r"}, Kind: String, Usage: "path to a file containing the resources to update, or \"-\" for stdin"},
		{Name: "blkio-weight", Kind: Int, Usage: "specifies per cgroup weight, range is from 10 to 1000"},
		{Name: "cpu-period", Kind: String, Usage: "CPU CFS period to be used for hardcapping"},
		{Name: "cpu-quota", Kind: String, Usage: "CPU CFS hardcap limit"},
		{Name: "cpu-burst", Kind: String, Usage: "CPU CFS hardcap burst limit"},
		{Name: "cpu-share", Kind: String, Usage: "CPU shares (relative weight vs. other containers)"},
		{Name: "cpu-rt-period", Kind: String, Usage: "CPU realtime period to be used for hardcapping"},
		{Name: "cpu-rt-runtime", Kind: String, Usage: "CPU realtime hardcap limit"},
		{Name: "cpuset-cpus", Kind: String, Usage: "CPU(s) to use"},
		{Name: "cpuset-mems", Kind: String, Usage: "memory node(s) to use"},
		{Name: "memory", Kind: String, Usage: "memory limit (in bytes)"},
		{Name: "cpu-idle", Kind: String, Usage: "set cgroup SCHED_IDLE or not"},
		{Name: "memory-reservation", Kind: String, Usage: "memory reservation or soft_limit (in bytes)"},
		{Name: "memory-swap", Kind: String, Usage: "total memory usage (memory + swap); set '-1' to enable unlimited swap"},
		{Name: "pids-limit", Kind: Int, Usage: "maximum number of pids allowed in the container"},
		{Name: "l3-cache-schema", Kind: String, Usage: "the string of Intel RDT/CAT L3 cache schema"},
		{Name: "mem-bw-schema", Kind: String, Usage: "the string of Intel RDT/MBA memory bandwidth schema"}},
	"checkpoint": {
		{Name: "image-path", Kind: String}, {Name: "work-path", Kind: String}, {Name: "parent-path", Kind: String},
		{Name: "leave-running", Kind: Bool, WeakensOnGVisor: "runsc leaves a checkpointed container running by restoring a new sandbox " +
			"from the image it just wrote, a restore the host cannot verify (restore is refused); checkpoint without it and create the container afresh"},
		{Name: "tcp-established", Kind: Bool}, {Name: "tcp-skip-in-flight", Kind: Bool},
		{Name: "link-remap", Kind: Bool}, {Name: "ext-unix-sk", Kind: Bool}, {Name: "shell-job", Kind: Bool},
		{Name: "lazy-pages", Kind: Bool}, {Name: "status-fd", Kind: Int, Default: "-1"}, {Name: "page-server", Kind: String},
		{Name: "file-locks", Kind: Bool}, {Name: "pre-dump", Kind: Bool}, {Name: "manage-cgroups-mode", Kind: String},
		{Name: "empty-ns", Kind: StringSlice}, {Name: "auto-dedup", Kind: Bool}},
	"restore": {consoleSocketFlag,
		{Name: "image-path", Kind: String}, {Name: "work-path", Kind: String},
		{Name: "tcp-established", Kind: Bool}, {Name: "ext-unix-sk", Kind: Bool}, {Name: "shell-job", Kind: Bool},
		{Name: "file-locks", Kind: Bool}, {Name: "manage-cgroups-mode", Kind: String},
		bundleFlag, detachFlag, pidFileFlag,
		{Name: "no-subreaper", Kind: Bool}, noPivotFlag,
		{Name: "empty-ns", Kind: StringSlice}, {Name: "auto-dedup", Kind: Bool}, {Name: "lazy-pages", Kind: Bool},
		{Name: "lsm-profile", Kind: String}, {Name: "lsm-mount-context", Kind: String}},
	"list":     {formatFlag, {Name: "quiet", Aliases: []string{"q"}, Kind: Bool, Usage: "display only container IDs"}},
	"spec":     {bundleFlag, {Name: "rootless", Kind: Bool, Usage: "generate a configuration for a rootless container"}},
	"features": nil,
}

// WeakeningFlags names the caller's flags of verb that loosen the
// boundary on a backend (gVisor's or not), with why.
func WeakeningFlags(verb string, v Values, gvisor bool) []string {
	var out []string
	for _, f := range VerbFlags[verb] {
		why := f.Weakens
		if why == "" && gvisor {
			why = f.WeakensOnGVisor
		}
		if why == "" || !v.IsSet(f.Name) {
			continue
		}
		if f.Kind == Bool && !v.Bool(f.Name) {
			continue
		}
		out = append(out, "--"+f.Name+": "+why)
	}
	return out
}

// ForwardFlags renders the flags the caller set, in table order, as
// --name=value arguments for the backend. Flags the backend does not know
// are left out, and named in dropped so the caller can log them.
func ForwardFlags(verb string, v Values, gvisor bool, skip ...string) (args, dropped []string) {
	for _, f := range VerbFlags[verb] {
		if !v.IsSet(f.Name) || slices.Contains(skip, f.Name) {
			continue
		}
		if gvisor && f.NotRunsc {
			dropped = append(dropped, "--"+f.Name)
			continue
		}
		switch f.Kind {
		case Bool:
			args = append(args, fmt.Sprintf("--%s=%t", f.Name, v.Bool(f.Name)))
		case String:
			args = append(args, fmt.Sprintf("--%s=%s", f.Name, v.String(f.Name)))
		case Int:
			args = append(args, "--"+f.Name+"="+strconv.Itoa(v.Int(f.Name)))
		case Duration:
			args = append(args, "--"+f.Name+"="+v.Duration(f.Name).String())
		case StringSlice:
			for _, s := range v.StringSlice(f.Name) {
				args = append(args, "--"+f.Name+"="+s)
			}
		}
	}
	return args, dropped
}
