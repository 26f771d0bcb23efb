package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/egresshost"
)

// stopBroker ends a container's broker: SIGTERM, which closes its
// connections and writes their audit lines, then SIGKILL if it is still
// there after 5 s.
func stopBroker(pid int, id string) error {
	return stopDetached("egress broker", pid, 5*time.Second, func(args []string) bool {
		// The root broker becomes the broker's program in the same process.
		return runsVerb(args, BrokerVerb, id) || runsProgram(args, egresshost.BrokerBinary, id)
	})
}

// stopWatchdog ends a container's watchdog once its record is gone, so
// that nothing of the container acts after delete returned: the
// watchdog finishes the step it is in (a backend call, a deadline's kill
// and audit line) and exits. A watchdog past its deadline waits on
// evidence that the record's removal gives at once, so 20 s is only a
// watchdog that does not answer.
func stopWatchdog(pid int, id string) error {
	return stopDetached("watchdog", pid, 20*time.Second, func(args []string) bool { return runsVerb(args, WatchdogVerb, id) })
}

// stopDetached ends the process bulkhead left running beside a container
// (detach.Spawn): SIGTERM, then SIGKILL after grace, and waits for it to
// go. A pid whose command line is no longer one runs accepts is left
// alone.
func stopDetached(name string, pid int, grace time.Duration, runs func(args []string) bool) error {
	if pid <= 0 {
		return nil
	}
	p, err := holdProcess(pid)
	if errors.Is(err, errGone) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer p.release()
	// Checked after the pidfd is held: the pid cannot be reused meanwhile.
	if !runs(cmdline(pid)) {
		return nil
	}
	if err := p.signal(unix.SIGTERM); err != nil {
		return fmt.Errorf("%s %d: %w", name, pid, err)
	}
	if p.exited(grace) {
		return nil
	}
	if err := p.kill(); err != nil {
		return fmt.Errorf("%s %d: %w", name, pid, err)
	}
	if !p.exited(5 * time.Second) {
		return fmt.Errorf("%s %d still there 5 s after SIGKILL", name, pid)
	}
	return nil
}

// cmdline is the command line of pid, nil when it cannot be read.
func cmdline(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}

// runsVerb tells whether a command line is bulkhead's hidden verb for id,
// not a reused pid's.
func runsVerb(args []string, verb, id string) bool {
	return len(args) > 1 && args[len(args)-1] == id && slices.Contains(args[1:], verb)
}

// runsProgram tells whether a command line is bulkhead's own program for
// id.
func runsProgram(args []string, program, id string) bool {
	return len(args) > 1 && args[len(args)-1] == id && filepath.Base(args[0]) == program
}
