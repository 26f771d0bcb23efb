package leftover

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/runtime/egresshost"
)

// Brokers lists the pids of the egress brokers of container id.
func Brokers(id string) []int { return processes(runtime.BrokerVerb, egresshost.BrokerBinary, id) }

// Watchdogs lists the pids of the watchdogs of container id.
func Watchdogs(id string) []int { return processes(runtime.WatchdogVerb, "", id) }

// processes lists the pids of bulkhead's hidden verb for container id,
// found by their command line: each stage of the verb names it, or is the
// program of its own the verb became (the serving broker), and ends with
// the id.
// The --spawn intermediate only starts the real process and is gone when
// create returns, and a child the process forks (to ask the backend for
// the state) shows its command line until it execs: neither is a second
// one.
func processes(verb, program, id string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		ours := slices.Contains(args[1:], verb) || (program != "" && filepath.Base(args[0]) == program)
		if len(args) > 2 && args[len(args)-1] == id && ours && !slices.Contains(args, "--spawn") {
			pids = append(pids, pid)
		}
	}
	var own []int
	for _, pid := range pids {
		if !slices.Contains(pids, parentOf(pid)) {
			own = append(own, pid)
		}
	}
	return own
}

// parentOf is the PPid of pid, 0 when it cannot be read.
func parentOf(pid int) int {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
