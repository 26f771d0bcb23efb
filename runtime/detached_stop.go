package runtime

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// stopBroker ends a container's broker: SIGTERM, which closes its
// connections and writes their audit lines, then SIGKILL if it is still
// there after 5 s.
func stopBroker(pid int, id string) error {
	return stopDetached("egress broker", BrokerVerb, pid, id, 5*time.Second)
}

// stopWatchdog ends a container's watchdog once its record is gone, so
// that nothing of the container acts after delete returned: the
// watchdog finishes the step it is in (a backend call, a deadline's kill
// and audit line) and exits. A watchdog past its deadline waits on
// evidence that the record's removal gives at once, so 20 s is only a
// watchdog that does not answer.
func stopWatchdog(pid int, id string) error {
	return stopDetached("watchdog", WatchdogVerb, pid, id, 20*time.Second)
}

// stopDetached ends the process bulkhead left running beside container
// id as verb (detach.Spawn): SIGTERM, then SIGKILL after grace, and
// waits for it to go. A pid that no longer runs verb for id is left
// alone.
func stopDetached(name, verb string, pid int, id string, grace time.Duration) error {
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
	if !runsVerb(pid, verb, id) {
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

// runsVerb tells whether pid runs bulkhead's hidden verb for id, not a
// reused pid.
func runsVerb(pid int, verb, id string) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	return len(args) > 1 && args[len(args)-1] == id && strings.Contains(string(data), "\x00"+verb+"\x00")
}
