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

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// Result is one control's line (protocol.Line, the contract with the host).
type Result = protocol.Line

// SyscallResult is one row of the seccomp try-syscall table.
type SyscallResult = protocol.Syscall

// outcome is the control's word: skipped wins over everything, since an
// attempt not made proves nothing.
func outcome(r Result) string {
	switch {
	case r.Skipped:
		return protocol.OutcomeSkipped
	case r.Pass:
		return protocol.OutcomePass
	}
	return protocol.OutcomeFail
}

func num(v float64) *float64 { return &v }

func skipped(control, attempt, why string) Result {
	return Result{Control: control, Attempt: attempt, Observed: "skipped", Layer: protocol.LayerNone, Skipped: true, Detail: why}
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
		return protocol.LayerReadOnlyMount
	case unix.EACCES:
		return protocol.LayerDAC
	case unix.ENOSPC:
		return protocol.LayerTmpfs
	case unix.ENETUNREACH:
		return protocol.LayerNetns
	case unix.EAGAIN:
		return protocol.LayerPids
	}
	return ""
}

// emit writes one result in the chosen format.
func emit(w io.Writer, format string, r Result) {
	r.Outcome = outcome(r)
	r.Pass = r.Outcome == protocol.OutcomePass
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
	io.WriteString(w, protocol.Done+"\n")
}

func verdict(r Result) string {
	switch outcome(r) {
	case protocol.OutcomeSkipped:
		return "SKIP"
	case protocol.OutcomePass:
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
