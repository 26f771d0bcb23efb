package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Layer names, as DESIGN.md principle 4 and the host-side table use them.
// They name the kernel mechanism that answered an attempt, never the
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
	// LayerSeccompOrCaps is used when the kernel itself answers EPERM for
	// an unprivileged caller before looking at the arguments, so an EPERM
	// cannot be pinned on seccomp alone (see syscalls.go).
	LayerSeccompOrCaps = "seccomp or capabilities"
	LayerNone          = "none"
)

// Result is one control's line. The JSON form is the contract with the host
// side (`bulkhead probe`): one object per line, then {"control":"done"}.
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
// control. Both are additions to the brief's six fields and are omitted
// when empty, so a parser that knows only the six keeps working.
type Result struct {
	Control  string          `json:"control"`
	Attempt  string          `json:"attempt"`
	Observed string          `json:"observed"`
	Layer    string          `json:"layer"`
	Pass     bool            `json:"pass"`
	Outcome  string          `json:"result"`
	Skipped  bool            `json:"skipped,omitempty"`
	Value    *float64        `json:"value,omitempty"`
	Detail   string          `json:"detail,omitempty"`
	Syscalls []SyscallResult `json:"syscalls,omitempty"`
}

// Outcomes of a control.
const (
	OutcomePass    = "pass"
	OutcomeFail    = "fail"
	OutcomeSkipped = "skipped"
)

// outcome is the control's word: skipped wins over everything, since an
// attempt not made proves nothing.
func outcome(r Result) string {
	switch {
	case r.Skipped:
		return OutcomeSkipped
	case r.Pass:
		return OutcomePass
	}
	return OutcomeFail
}

// SyscallResult is one row of the seccomp try-syscall table.
type SyscallResult struct {
	Name     string `json:"name"`
	Nr       int    `json:"nr"`
	Want     string `json:"want"`
	Observed string `json:"observed"`
	Layer    string `json:"layer,omitempty"`
	Pass     bool   `json:"pass"`
}

// doneLine ends the output: the host takes its absence as a probe that died
// (killed, crashed, timed out), never as "all passed".
const doneLine = `{"control":"done"}`

func num(v float64) *float64 { return &v }

func skipped(control, attempt, why string) Result {
	return Result{Control: control, Attempt: attempt, Observed: "skipped", Layer: LayerNone, Skipped: true, Detail: why}
}

// errnoOf digs the errno out of an error from os, net or exec.
func errnoOf(err error) (syscall.Errno, bool) {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e, true
	}
	return 0, false
}

// errName names the outcome of an attempt the way the table shows it:
// "ok" for success, the errno's symbolic name, "timeout" for deadlines and
// the error text for anything else.
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	if e, ok := errnoOf(err); ok {
		return errnoName(e)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return err.Error()
}

func errnoName(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

// writeLayer says which layer refused a write (create, open for writing,
// exec) from its errno. EROFS can only come from a read-only mount (or
// superblock); EACCES is file permissions (or, for exec, noexec: callers
// that know they tried exec relabel it). EPERM and the rest need context
// the errno alone does not carry, so they are returned as "".
func writeLayer(err error) string {
	e, ok := errnoOf(err)
	if !ok {
		return ""
	}
	switch e {
	case unix.EROFS:
		return LayerReadOnlyMount
	case unix.EACCES:
		return LayerDAC
	case unix.ENOSPC:
		return LayerTmpfs
	case unix.ENETUNREACH:
		return LayerNetns
	case unix.EAGAIN:
		return LayerPids
	}
	return ""
}

// emit writes one result in the chosen format.
func emit(w io.Writer, format string, r Result) {
	r.Outcome = outcome(r)
	r.Pass = r.Outcome == OutcomePass
	if format == "text" {
		io.WriteString(w, textLine(r))
		return
	}
	data, err := json.Marshal(r)
	if err != nil { // cannot happen for this type; keep the line parseable anyway
		data, _ = json.Marshal(Result{Control: r.Control, Observed: "marshal error", Detail: err.Error()})
	}
	w.Write(append(data, '\n'))
}

func emitDone(w io.Writer, format string) {
	if format == "text" {
		io.WriteString(w, "done\n")
		return
	}
	io.WriteString(w, doneLine+"\n")
}

func verdict(r Result) string {
	switch outcome(r) {
	case OutcomeSkipped:
		return "SKIP"
	case OutcomePass:
		return "PASS"
	}
	return "FAIL"
}

// textLine is the human form: verdict, control, observed, layer, detail, and
// for the seccomp control one indented line per syscall.
func textLine(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-4s %-14s %-24s %-24s %s", verdict(r), r.Control, r.Observed, r.Layer, r.Attempt)
	if r.Detail != "" {
		fmt.Fprintf(&b, " -- %s", r.Detail)
	}
	b.WriteByte('\n')
	for _, s := range r.Syscalls {
		v := "ok  "
		if !s.Pass {
			v = "BAD "
		}
		fmt.Fprintf(&b, "       %s %-20s want %-12s got %-12s %s\n", v, s.Name, s.Want, s.Observed, s.Layer)
	}
	return b.String()
}
