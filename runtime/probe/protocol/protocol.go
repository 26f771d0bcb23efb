// Package protocol is the contract between the static probe
// (cmd/bulkhead-probe), which runs inside the sandbox, and `bulkhead
// probe` on the host: one JSON Line per control, then Done; the outcome
// words; and the names of the layers that answer an attempt. Both sides
// import it, so neither can drift from the other. It imports nothing, to
// keep the probe a small static binary.
package protocol

// Done ends the probe's output: the host takes its absence as a probe
// that died (killed, crashed, timed out), never as "all passed".
const Done = `{"control":"done"}`

// Controls are the controls the probe reports on, in the order it
// attempts them. A control without a line fails on the host: silence is
// never a pass.
var Controls = []string{
	"workspace", "etc", "tmp-write", "tmp-noexec", "tmp-size", "uid", "capabilities", "no_new_privs",
	"network", "egress", "seccomp", "masked-proc", "proc-sys", "environment", "devices", "cpu", "pids", "memory",
}

// Line is one control's line.
//
// Outcome is one of three words: "pass" (the attempt was refused by the
// layer that should refuse it), "fail", or "skipped" (the attempt was not
// made, so there is no evidence either way). Pass is true only for "pass":
// a skipped control never reads as a pass to a parser that knows only the
// boolean.
//
// Value carries the number a control measured when it has one (bytes
// written to /tmp, children started, bytes the memory child touched, the
// CPU/wall ratio); Syscalls carries the per-syscall rows of the seccomp
// control. Both are omitted when empty.
type Line struct {
	Control  string    `json:"control"`
	Attempt  string    `json:"attempt"`
	Observed string    `json:"observed"`
	Layer    string    `json:"layer"`
	Pass     bool      `json:"pass"`
	Outcome  string    `json:"result"`
	Skipped  bool      `json:"skipped,omitempty"`
	Value    *float64  `json:"value,omitempty"`
	Detail   string    `json:"detail,omitempty"`
	Syscalls []Syscall `json:"syscalls,omitempty"`
}

// Syscall is one row of the seccomp control's try-syscall table.
type Syscall struct {
	Name     string `json:"name"`
	Nr       int    `json:"nr"`
	Want     string `json:"want"`
	Observed string `json:"observed"`
	Layer    string `json:"layer,omitempty"`
	Pass     bool   `json:"pass"`
}

// Outcomes of a control.
const (
	OutcomePass    = "pass"
	OutcomeFail    = "fail"
	OutcomeSkipped = "skipped"
)

// Layer names, as the README's tables use them: bulkhead records which
// layer denied each attempt. They name the kernel mechanism that answered an attempt, never the
// configuration that asked for it.
const (
	LayerReadOnlyMount = "read-only mount"
	LayerDAC           = "DAC"
	LayerNetns         = "netns"
	LayerSeccomp       = "seccomp"
	LayerCapabilities  = "capabilities"
	LayerNoNewPrivs    = "no_new_privs"
	LayerTmpfs         = "tmpfs"
	LayerPids          = "pids cgroup"
	LayerMemory        = "memory cgroup"
	LayerCPU           = "cpu cgroup"
	LayerMasked        = "masked mounts"
	LayerDevices       = "device cgroup"
	LayerEnvironment   = "environment"
	// LayerEgressBroker is bulkhead's egress broker, outside the sandbox,
	// answering 403 for a destination outside the profile's list.
	LayerEgressBroker = "egress broker"
	// LayerSeccompOrCaps is used when the kernel itself answers EPERM for
	// an unprivileged caller before looking at the arguments, so an EPERM
	// cannot be pinned on seccomp alone.
	LayerSeccompOrCaps = "seccomp or capabilities"
	LayerNone          = "none"
)

// CPUBites is how many throttled periods of the container's cpu.stat end
// the cpu attempt's spin: the probe's own count under runc, the host's
// word under gVisor, which has seen them in its cgroup.
const CPUBites = 3
