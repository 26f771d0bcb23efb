// Command bulkhead-probe runs inside a sandbox and attempts each boundary of
// the bulkhead profile it runs under (the default profile's limits unless
// the host gives the profile's with -cpus, -memory-limit, -pids-limit and
// -tmp-size), harmlessly, reporting one JSON line per control:
//
//	{"control":"etc","attempt":"...","observed":"EROFS","layer":"read-only mount","pass":true,"detail":"..."}
//	...
//	{"control":"done"}
//
// It is evidence from inside, not enforcement: every attempt is a real
// system call the kernel answers, and the line names the layer that
// answered. The verdict is the host's (`bulkhead probe` adds cgroup
// counters such as pids.events max, memory oom_kill and cpu nr_throttled), so the probe always ends with {"control":"done"} and
// exits 0, even when controls fail; a missing done line means the probe
// itself died.
//
// The binary must be static (CGO_ENABLED=0): the images it runs in have no
// libc, or a different one.
//
// The probe cannot tell reliably that it runs in gVisor (runsc), so the
// host says so with -gvisor; without it every control keeps runc's strict
// expectations. With -gvisor these documented gVisor answers are accepted
// (measured with runsc 2022, --platform=ptrace --network=none --oci-seccomp):
//   - etc: EACCES, not EROFS, when /proc/self/mountinfo shows the root mount
//     read-only: gVisor checks permissions before the read-only mount when
//     creating. Layer "gVisor: DAC before read-only mount".
//   - network: EHOSTUNREACH, not ENETUNREACH, from gVisor's netstack, only
//     together with a lo-only interface list. Layer "gVisor (Sentry)".
//   - devices: gVisor's own /dev/fuse and /dev/net/tun; mknod c 1:1 succeeds
//     in gVisor's tmpfs but the node cannot be opened (ENXIO). Layer
//     "gVisor (Sentry)".
//   - pids: the fork loop runs only when RLIMIT_NPROC is finite (bulkhead
//     sets it to the profile's limit for runsc); gVisor answers EAGAIN
//     before the host pids.max is reached. Without it, reaching host
//     pids.max makes the sentry panic and no report would come.
//   - memory: past the limit the host OOM killer kills the whole sandbox,
//     so with -memory-after-done the attempt runs after the done line and
//     the host's memory oom_kill counter decides.
//   - cpu: /sys/fs/cgroup inside is the Sentry's, and getrusage counts
//     host-throttled time as CPU (ratio ~2.2 inside while the host cgroup
//     runs at 1.0 CPU): the probe spins for a fixed time and reports the
//     control skipped; the host's cpu.stat (nr_throttled, usage) decides.
//   - capabilities: no CapAmb line and no PR_CAP_AMBIENT (EINVAL): read as
//     an empty ambient set. NoNewPrivs and Seccomp come from prctl where
//     /proc/self/status lacks them.
//   - masked-proc: the files do not exist (pass as "absent").
//
// Seccomp stays strict under gVisor: clone3 must get ENOSYS.
//
// Hidden modes (used when the probe re-executes itself, since Go cannot
// fork without exec): -child-sleep, -child-mem (with -memory-limit), -child-pids N,
// -child-setuid and -print-euid.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// probeEnv is what the controls need to know about this run.
type probeEnv struct {
	workspace     string // host folder bind mount; "" when absent
	workspaceFlag bool   // -workspace was given explicitly
	setuid        string // setuid-root binary to exec (-setuid)
	netTarget     string // address that must be unreachable
	// egressAllow is a destination the profile's egress list names ("" when
	// the profile has none), egressDeny one it does not, egressDirect an
	// address to connect to around the broker.
	egressAllow, egressDeny, egressDirect string
	forceLimits                           bool // run pids and memory even under gVisor
	gvisor                                bool // the host says this is gVisor: accept its documented answers
	// memoryAfterDone defers the memory control until after the done line:
	// under gVisor the host OOM killer ends the whole sandbox.
	memoryAfterDone bool
	// cpuEnough, when set, delivers the host's word that its cpu.stat
	// shows the quota throttling the spin (-host-stops-cpu).
	cpuEnough chan os.Signal
	// policy is what cpu, pids, memory and tmp-size are judged against.
	policy policy
}

// control is one row of the table: a name the host and -only use, a
// deadline after which the probe gives up on it, and the attempt.
type control struct {
	name    string
	timeout time.Duration
	run     func(*probeEnv) Result
}

// slack multiplies every control's deadline. An attempt answers in
// milliseconds on an idle host; the deadline only tells a hang from a slow
// answer, and a slow answer is what a loaded host or a guest kernel under
// software emulation gives (filling /tmp took over 4 s there beside two
// test suites). A hang still fails, only later.
const slack = 5

// controls lists every control in the order they run. The order matters in
// two places: tmp-noexec copies the probe into /tmp before tmp-size fills
// it, and the process-heavy controls (pids, memory) come after the cheap
// ones so a failure there cannot hide the others.
var controls = []control{
	{"workspace", slack * 2 * time.Second, checkWorkspace},
	{"etc", slack * 2 * time.Second, checkEtc},
	{"tmp-write", slack * 2 * time.Second, checkTmpWrite},
	{"tmp-noexec", slack * 3 * time.Second, checkTmpNoexec},
	{"tmp-size", slack * 4 * time.Second, checkTmpSize},
	{"uid", slack * 2 * time.Second, checkUID},
	{"capabilities", slack * 3 * time.Second, checkCapabilities},
	{"no_new_privs", slack * 3 * time.Second, checkNoNewPrivs},
	{"network", slack * 3 * time.Second, checkNetwork},
	{"egress", slack * 6 * time.Second, checkEgress},
	{"seccomp", slack * 3 * time.Second, checkSeccomp},
	{"masked-proc", slack * 2 * time.Second, checkMaskedProc},
	{"proc-sys", slack * 2 * time.Second, checkProcSys},
	{"environment", slack * 1 * time.Second, checkEnvironment},
	{"devices", slack * 2 * time.Second, checkDevices},
	{"cpu", cpuDeadline + slack*5*time.Second, checkCPU},
	{"pids", slack * 8 * time.Second, checkPids},
	{"memory", slack * 10 * time.Second, checkMemory},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bulkhead-probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	only := fs.String("only", "", "comma-separated controls to run (default all): "+controlNames())
	workspace := fs.String("workspace", "", "host folder bind-mounted into the sandbox (default /workspace if it exists)")
	format := fs.String("format", "json", "output format: json (one object per line) or text")
	setuid := fs.String("setuid", "", "setuid-root binary to exec for the no_new_privs control (default: /bin/busybox if it is setuid root)")
	netTarget := fs.String("net-target", "192.0.2.1:80", "TCP address that must be unreachable (TEST-NET-1 by default)")
	egressAllow := fs.String("egress-allow", "", "host:port the profile's egress list names: it must answer through the broker (set by the host; empty: the profile has no egress, and no broker may answer)")
	egressDeny := fs.String("egress-deny", "denied.bulkhead.invalid:80", "host:port outside the egress list: the broker must answer 403")
	egressDirect := fs.String("egress-direct", "", "address:port to connect to around the broker (default -net-target)")
	forceLimits := fs.Bool("force-limits", false, "run the pids and memory controls even under gVisor, where reaching a host limit kills the whole sandbox")
	gvisor := fs.Bool("gvisor", false, "the sandbox is gVisor (runsc): accept gVisor's documented answers (set by the host)")
	hostStopsCPU := fs.Bool("host-stops-cpu", false, "under -gvisor, spin for the cpu control until the host sends SIGUSR1, having seen the quota bite in its cgroup (at most "+cpuDeadline.String()+"; set by the host)")
	memoryAfterDone := fs.Bool("memory-after-done", false, "run the memory control after the done line (gVisor: the host OOM killer ends the sandbox; the host's oom_kill decides)")
	cpus := fs.Float64("cpus", defaultPolicy.cpus, "the profile's CPU quota ceiling in CPUs, 0 for none (set by the host; default: the default profile's)")
	memoryLimit := fs.Int64("memory-limit", defaultPolicy.memoryLimit, "the profile's memory limit in bytes, 0 for none: the memory attempt goes past it (set by the host)")
	pidsLimit := fs.Int64("pids-limit", defaultPolicy.pidsLimit, "the profile's pids limit, 0 for none: the fork attempt goes past it (set by the host)")
	tmpSize := fs.Int64("tmp-size", defaultPolicy.tmpSize, "the profile's /tmp size in bytes, 0 for none (set by the host)")
	// Hidden modes: the probe re-executes itself for work that needs a
	// separate process.
	childSleep := fs.Bool("child-sleep", false, "")
	childMem := fs.Bool("child-mem", false, "")
	childPids := fs.Int("child-pids", 0, "")
	childSetuid := fs.Bool("child-setuid", false, "")
	printEuid := fs.Bool("print-euid", false, "")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: bulkhead-probe [-only names] [-workspace PATH] [-setuid PATH] [-format json|text]\n")
		fs.VisitAll(func(f *flag.Flag) {
			if f.Usage != "" {
				fmt.Fprintf(stderr, "  -%s\t%s\n", f.Name, f.Usage)
			}
		})
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case *printEuid:
		fmt.Fprintf(stdout, "%s euid=%d uid=%d\n", euidMarker, os.Geteuid(), os.Getuid())
		return 0
	case *childSleep:
		return childSleepMain()
	case *childMem:
		return childMemMain(memoryCeiling(*memoryLimit), stdout)
	case *childPids > 0:
		return childPidsMain(*childPids, stdout)
	case *childSetuid:
		return childSetuidMain(stdout)
	}
	if *format != "json" && *format != "text" {
		fmt.Fprintf(stderr, "bulkhead-probe: -format must be json or text, not %q\n", *format)
		return 2
	}
	if *cpus < 0 || *memoryLimit < 0 || *pidsLimit < 0 || *tmpSize < 0 {
		fmt.Fprintf(stderr, "bulkhead-probe: -cpus, -memory-limit, -pids-limit and -tmp-size must be 0 (none) or more\n")
		return 2
	}
	selected, err := selectControls(*only)
	if err != nil {
		fmt.Fprintf(stderr, "bulkhead-probe: %v\n", err)
		return 2
	}
	env := &probeEnv{setuid: *setuid, netTarget: *netTarget, forceLimits: *forceLimits, gvisor: *gvisor, memoryAfterDone: *memoryAfterDone,
		egressAllow: *egressAllow, egressDeny: *egressDeny, egressDirect: *egressDirect,
		policy: policy{cpus: *cpus, memoryLimit: *memoryLimit, pidsLimit: *pidsLimit, tmpSize: *tmpSize}}
	if env.egressDirect == "" {
		env.egressDirect = env.netTarget
	}
	if *hostStopsCPU {
		// Registered for the whole run: a word that comes after the spin
		// ended must not end the probe (SIGUSR1's default action).
		env.cpuEnough = make(chan os.Signal, 1)
		signal.Notify(env.cpuEnough, syscall.SIGUSR1)
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "workspace" {
			env.workspaceFlag = true
		}
	})
	env.workspace = *workspace
	if !env.workspaceFlag {
		env.workspace = "/workspace"
	}
	var deferred []control
	for _, c := range selected {
		if c.name == "memory" && env.memoryAfterDone {
			deferred = append(deferred, c)
			continue
		}
		emit(stdout, *format, runControl(c, env))
	}
	emitDone(stdout, *format)
	// A deferred attempt may end the whole sandbox: its line comes after
	// done, if at all, and the host's cgroup counters decide.
	for _, c := range deferred {
		emit(stdout, *format, runControl(c, env))
	}
	return 0
}

func controlNames() string {
	names := make([]string, len(controls))
	for i, c := range controls {
		names[i] = c.name
	}
	return strings.Join(names, ",")
}

// selectControls resolves -only. A name selects the control of that name;
// a family prefix ("tmp") selects every control named "tmp-…". Unknown names
// are errors so a typo cannot silently run nothing.
func selectControls(only string) ([]control, error) {
	if strings.TrimSpace(only) == "" {
		return controls, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	used := map[string]bool{}
	var out []control
	for _, c := range controls {
		family, _, _ := strings.Cut(c.name, "-")
		switch {
		case want[c.name]:
			used[c.name] = true
		case want[family]:
			used[family] = true
		default:
			continue
		}
		out = append(out, c)
	}
	for n := range want {
		if !used[n] {
			return nil, fmt.Errorf("unknown control %q (known: %s)", n, controlNames())
		}
	}
	return out, nil
}

// runControl runs one control under its deadline. A control that overruns
// is reported as failed; its goroutine is abandoned (each control bounds
// its own children, so nothing outlives the probe by much).
func runControl(c control, env *probeEnv) Result {
	done := make(chan Result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- Result{Control: c.name, Observed: "panic", Layer: protocol.LayerNone, Detail: fmt.Sprint(p)}
			}
		}()
		r := c.run(env)
		r.Control = c.name
		done <- r
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(c.timeout):
		return Result{Control: c.name, Observed: "timeout", Layer: protocol.LayerNone,
			Detail: fmt.Sprintf("no answer within %s", c.timeout)}
	}
}
