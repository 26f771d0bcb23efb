package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// maskedPaths are the /proc files that leak host state (kernel memory,
// keyrings of the host's users, timers and scheduler state of every CPU)
// and that Docker's masked list hides.
var maskedPaths = []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug"}

// layerGVisorProc names gVisor's own /proc, which lacks the files.
const layerGVisorProc = "gVisor (Sentry): its /proc has no such file"

// checkMaskedProc: each path is masked (a bind of /dev/null, or an empty
// tmpfs for directories) or absent (newer kernels moved sched_debug to
// debugfs; gVisor has none of them). Failing to read because of file
// permissions is not masking: /proc/kcore is 0400 root anyway, and
// /proc/keys and /proc/timer_list are world-readable when not masked.
func checkMaskedProc(env *probeEnv) Result {
	r := Result{Attempt: "stat and read " + strings.Join(maskedPaths, ", "), Layer: protocol.LayerMasked}
	pass := true
	var notes, observed []string
	for _, p := range maskedPaths {
		state, ok := maskState(p)
		if !ok {
			pass = false
		}
		observed = append(observed, state)
		notes = append(notes, p+": "+state)
	}
	r.Observed = strings.Join(observed, ",")
	r.Pass = pass
	if !slices.Contains(observed, "masked") && env.gvisor {
		// No mask answered: gVisor's own /proc has none of the files.
		r.Layer = layerGVisorProc
	}
	r.Detail = strings.Join(notes, "; ")
	return r
}

// maskState classifies one path: "masked" (/dev/null bind or empty),
// "absent", or what was read.
func maskState(p string) (string, bool) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		if isErrno(err, unix.ENOENT) {
			return "absent", true
		}
		return errName(err), false
	}
	if st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(st.Rdev) == 1 && unix.Minor(st.Rdev) == 3 {
		return "masked", true // /dev/null bound over it
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		ents, err := os.ReadDir(p)
		if err == nil && len(ents) == 0 {
			return "masked", true
		}
		return fmt.Sprintf("directory with %d entries", len(ents)), false
	}
	f, err := os.Open(p)
	if err != nil {
		// Permissions refused it, but nothing masks it: DAC is not this control.
		return "unmasked, " + errName(err), false
	}
	defer f.Close()
	buf := make([]byte, 512)
	n, err := io.ReadFull(f, buf)
	if n == 0 && (err == io.EOF || err == io.ErrUnexpectedEOF) {
		return "masked", true // reads empty
	}
	if n == 0 {
		return "unmasked, read " + errName(err), false
	}
	return fmt.Sprintf("readable (%d+ bytes)", n), false
}

// checkProcSys: /proc/sys is read-only. As a non-root user the kernel
// checks file permissions before the mount for an existing file
// (may_open before mnt_want_write), so EACCES is the normal answer here
// and EROFS the answer for root; both pass, and the layer says which.
func checkProcSys(env *probeEnv) Result {
	path := "/proc/sys/kernel/hostname"
	r := Result{Attempt: "open " + path + " for writing"}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		f.Close() // opened, nothing written
	}
	r.Observed = errName(err)
	r.Layer = writeLayer(err)
	r.Pass = isErrno(err, unix.EROFS) || isErrno(err, unix.EACCES)
	switch {
	case err == nil:
		r.Layer = protocol.LayerNone
		r.Detail = "/proc/sys is writable (nothing was written)"
	case r.Layer == protocol.LayerDAC:
		r.Detail = "file permissions answered first; the read-only mount is not visible to a non-root caller"
	}
	return r
}
