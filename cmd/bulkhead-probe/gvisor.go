package main

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Layers that name gVisor's own kernel (the Sentry) as the one that
// answered. They are used only with -gvisor, where the host has told the
// probe it runs in runsc; without the flag the same answers fail.
const (
	LayerGVisor         = "gVisor (Sentry)"
	LayerGVisorDACFirst = "gVisor: DAC before read-only mount"
	LayerGVisorNproc    = "gVisor (Sentry): RLIMIT_NPROC"
)

// gVisorDev are the /dev entries gVisor adds on its own: its FUSE device
// and the net/ directory holding tun. Neither reaches the host: both are
// implemented by the Sentry.
var gVisorDev = map[string]bool{"fuse": true, "net": true}

// gVisorDevOK reports whether name, an entry of /dev beyond the policy's,
// is one of gVisor's own (and, for net/, holds nothing but tun).
func gVisorDevOK(name string) bool {
	if !gVisorDev[name] {
		return false
	}
	if name != "net" {
		return true
	}
	ents, err := os.ReadDir("/dev/net")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.Name() != "tun" {
			return false
		}
	}
	return true
}

// mountinfoReadOnly reports whether the mount that holds path is read-only
// according to /proc/self/mountinfo (the longest mount point that is a
// prefix of path; the last one listed wins, being the one on top).
func mountinfoReadOnly(path string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	return mountinfoReadOnlyIn(string(b), path)
}

func mountinfoReadOnlyIn(mountinfo, path string) bool {
	best, ro := "", false
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		mp := f[4]
		if (path == mp || mp == "/" || strings.HasPrefix(path, mp+"/")) && len(mp) >= len(best) {
			best = mp
			ro = false
			for _, o := range strings.Split(f[5], ",") {
				ro = ro || o == "ro"
			}
		}
	}
	return best != "" && ro
}

// nprocLimit is RLIMIT_NPROC's soft value, ok false when unlimited or
// unreadable.
func nprocLimit() (uint64, bool) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY {
		return 0, false
	}
	return rl.Cur, true
}
