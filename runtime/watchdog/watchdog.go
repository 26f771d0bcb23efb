package watchdog

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/audit"
	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/detach"
	"bulkhead.dev/bulkhead/runtime/state"
)

// Watch is one container's deadline, enforced from outside it.
type Watch struct {
	Reg     *state.Registry
	Backend *backend.Backend
	ID      string
	// Created is the container's record's creation time: the id may go
	// to a newer create once the container is deleted, and that create's
	// container is not this watchdog's to time or kill.
	Created time.Time
	// Pid is the container's init (or gVisor sandbox).
	Pid      int
	Lifetime time.Duration
	// Argv is the command line of one call of the backend, with the
	// caller's globals.
	Argv func(verb string, args ...string) []string
	// AuditLog gets the deadline's line.
	AuditLog string
	// Unstarted tells from the backend's status whether the container
	// was never started, which runc's status alone does not say: runc
	// pauses a created container and resumes it to created, and calls a
	// container created whose start was killed before it removed
	// exec.fifo, though its program runs.
	Unstarted func(status string) bool

	pidfd int // -1 when the kernel has no pidfd_open
	// step is held across each step a SIGTERM lets finish: a call of
	// the backend, and the whole expiry with its audit line.
	step sync.Mutex
}

// Run waits until the container starts, arms its deadline and kills
// every process of the container through the backend when it passes. It
// returns at once when the container's init exits or the container is
// deleted first. ready gets "ok" once the init is watched, or the error.
// SIGTERM (delete, once the record is gone) ends it between steps: a
// backend call it started finishes first, and no runc state runs after
// the delete returned (runc 1.1 creates its --root again for one).
func (wd *Watch) Run(ready *os.File) error {
	term := make(chan os.Signal, 1)
	signal.Notify(term, unix.SIGTERM)
	go func() {
		<-term
		wd.step.Lock()
		os.Exit(0)
	}()
	if err := detach.Report(ready, wd.open()); err != nil {
		return err
	}
	defer wd.close()
	return wd.run()
}

// open watches the init through a pidfd where the kernel has one.
func (wd *Watch) open() error {
	if wd.Pid <= 0 || wd.Lifetime <= 0 {
		return fmt.Errorf("watchdog %s: want --pid and --lifetime", wd.ID)
	}
	wd.pidfd = -1
	fd, err := unix.PidfdOpen(wd.Pid, 0)
	switch {
	case err == nil:
		wd.pidfd = fd
	case errors.Is(err, unix.ENOSYS):
		// Older kernel: kill(pid, 0) polling below.
	default:
		return fmt.Errorf("watchdog %s: watch init %d: %w", wd.ID, wd.Pid, err)
	}
	return nil
}

func (wd *Watch) close() {
	if wd.pidfd >= 0 {
		unix.Close(wd.pidfd)
	}
}

// initExited waits up to d for the init to exit and tells whether it has.
func (wd *Watch) initExited(d time.Duration) bool {
	if wd.pidfd < 0 {
		time.Sleep(min(d, 250*time.Millisecond))
		return unix.Kill(wd.Pid, 0) == unix.ESRCH
	}
	ms := int(d / time.Millisecond)
	if ms < 0 {
		ms = 0
	}
	fds := []unix.PollFd{{Fd: int32(wd.pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// deleted tells whether bulkhead's record of the container is gone or
// another create's. A record that cannot be read keeps the deadline.
func (wd *Watch) deleted() bool {
	return errors.Is(wd.Reg.Holds(wd.own()), state.ErrReplaced)
}

// own is the container's record as far as ownership goes.
func (wd *Watch) own() *state.Record {
	return &state.Record{ID: wd.ID, Created: wd.Created}
}

// status is the backend's status of the container, "" when it has none.
func (wd *Watch) status() string {
	return backend.Status(wd.Argv("state", wd.ID))
}

func (wd *Watch) run() error {
	// Created: wait for start. The backend's state is polled, often at
	// first (engines start right after create), then less.
	begin := time.Now()
	for {
		every := 100 * time.Millisecond
		if time.Since(begin) > 30*time.Second {
			every = time.Second
		}
		if wd.deleted() {
			return nil
		}
		if wd.initExited(every) {
			if inStep(wd, wd.ended) {
				return nil
			}
			break
		}
		st := inStep(wd, wd.status)
		if wd.Unstarted(st) {
			continue
		}
		// runc calls a container stopped once its init's leader is a
		// zombie, while the init's other threads may still run: only a
		// container with no process left ended before it was seen
		// running. Anything else has started, and gets its deadline.
		if st != "running" && st != "paused" && inStep(wd, wd.nothingRuns) {
			return nil
		}
		break
	}
	deadline := time.Now().Add(wd.Lifetime)
	wd.setDeadline(deadline)
	// Running: the init's pidfd wakes the watchdog when the container ends
	// first. gVisor's sandbox process may outlive the container's init, so
	// its status is asked every second too.
	initGone := false
	for {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		if initGone {
			time.Sleep(min(left, time.Second))
			if wd.deleted() || inStep(wd, wd.nothingRuns) {
				return nil
			}
			continue
		}
		if wd.deleted() {
			return nil
		}
		if wd.initExited(min(left, time.Second)) {
			if inStep(wd, wd.ended) {
				return nil
			}
			initGone = true
			continue
		}
		// Only runsc's word that the container stopped ends the watch: a
		// status it cannot give (its sandbox not answering) keeps the
		// deadline.
		if wd.Backend.IsGVisor() && time.Until(deadline) > 0 && inStep(wd, wd.status) == "stopped" {
			return nil
		}
	}
	return wd.expire(deadline)
}

// setDeadline stores the armed deadline in the record, for inspect.
func (wd *Watch) setDeadline(deadline time.Time) {
	wd.step.Lock()
	defer wd.step.Unlock()
	d := deadline.UTC()
	// A container deleted meanwhile has nothing to record, and a newer
	// container under its id has a deadline of its own.
	_ = wd.Reg.Modify(wd.own(), func(rec *state.Record) { rec.Deadline = &d })
}

// expire kills every process of the container through the backend and
// records it in the audit log.
func (wd *Watch) expire(deadline time.Time) error {
	wd.step.Lock()
	defer wd.step.Unlock()
	if wd.deleted() {
		return nil
	}
	count, countErr := wd.countProcesses()
	// Read before the kill: an engine or run deletes the record as soon
	// as the container has exited, which can be before the line is written.
	rec, recErr := wd.Reg.Get(wd.ID)
	// The backend kills by id: asked again right before, so that only a
	// delete and a newer create within these few milliseconds could put
	// another container under it. The registry's lock is not held across
	// the kill: a backend slow to answer would stop every create.
	if wd.deleted() {
		return nil
	}
	var errs []string
	if wd.Backend.IsGVisor() && wd.status() == "paused" {
		// runsc signals no paused container, and one whose sandbox is
		// killed while paused stays paused in runsc's state for good: an
		// engine's delete then fails. Resumed, it is killed at once.
		if err := backend.Quietly(wd.Argv("resume", wd.ID)); err != nil {
			errs = append(errs, "resume: "+err.Error())
		}
	}
	argv := wd.Argv("kill", "--all", wd.ID, "KILL")
	killErr := backend.Quietly(argv)
	// The kill reaches every process of the container; wait for them to go
	// so the audit line says what happened, not what was asked. On runc:
	// the init, and whatever ps lists, since the init may have been gone
	// before the kill (a zombie leader's threads, a pod member's orphans).
	// On runsc: the container stopped, or its sandbox process gone (a pod
	// member's init is the pod's sandbox process, which outlives it).
	var gone, left bool
	if wd.Backend.IsGVisor() {
		gone = wd.gvisorStoppedWithin(killWait)
		if !gone && wd.pidfd >= 0 && unix.PidfdSendSignal(wd.pidfd, unix.SIGKILL, nil, 0) == nil {
			// The sandbox did not stop its container (its control server
			// not answering): the sandbox process is the container's
			// kernel, and every task of it ends with it.
			errs = append(errs, "kill --all did not stop the container; its gVisor sandbox process was killed")
			gone = wd.initExited(killWait)
		}
	} else {
		gone = wd.initExited(killWait)
		left = !wd.nothingRunsWithin(killWait)
	}
	d := deadline.UTC()
	e := &audit.Entry{Event: "deadline", ID: wd.ID, Backend: wd.Backend.Name, Deadline: &d, Outcome: "killed"}
	if recErr == nil {
		e.Profile, e.Mode, e.Bundle = rec.Profile, rec.Mode, rec.Bundle
	}
	if countErr == nil {
		e.Killed = &count
	}
	if countErr != nil {
		errs = append(errs, "count processes: "+countErr.Error())
	}
	if killErr != nil {
		errs = append(errs, "kill --all: "+killErr.Error())
	}
	if !gone && (wd.pidfd >= 0 || wd.Backend.IsGVisor()) {
		errs = append(errs, fmt.Sprintf("init %d still there %s after kill", wd.Pid, killWait))
		e.Outcome = "kill failed"
	}
	if left {
		errs = append(errs, fmt.Sprintf("the backend still lists processes of the container, or cannot list them, %s after kill", killWait))
		e.Outcome = "kill failed"
	}
	e.Error = strings.Join(errs, "; ")
	if err := audit.Write(wd.AuditLog, e); err != nil {
		logrus.Warnf("bulkhead: %v", err)
	}
	if e.Outcome != "killed" {
		return errors.New(e.Error)
	}
	return nil
}

// inStep calls f as one step (Watch.step).
func inStep[T any](wd *Watch, f func() T) T {
	wd.step.Lock()
	defer wd.step.Unlock()
	return f()
}

// ended tells, once the init has exited, whether the container has. In
// a pid namespace of its own the kernel ends every process with the init;
// a runc container that joined another's (a pod's) keeps what its init
// forked, which then lives on in the container's cgroups until the
// deadline. gVisor's sandbox is the init here, and its end is the
// container's.
func (wd *Watch) ended() bool {
	return wd.Backend.IsGVisor() || wd.deleted() || wd.nothingRuns()
}

// gvisorStoppedWithin waits up to d for runsc to call the container
// stopped, its sandbox process to end, or the container to be deleted.
func (wd *Watch) gvisorStoppedWithin(d time.Duration) bool {
	for deadline := time.Now().Add(d); ; {
		if wd.deleted() || wd.status() == "stopped" || wd.initExited(100*time.Millisecond) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// killWait bounds the wait for a killed container's processes to go. It
// ends on evidence, so only a kill that failed waits it out; a loaded
// host's runsc has been slow enough to answer that 5 s ran out on a kill
// that worked, and under gVisor what follows is killing the sandbox.
const killWait = 15 * time.Second

// nothingRunsWithin waits up to d for the backend to list no process of
// the container, or for the container to be deleted.
func (wd *Watch) nothingRunsWithin(d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		if wd.deleted() || wd.nothingRuns() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// nothingRuns tells whether the backend lists no process of the
// container; a backend that cannot say does not count as evidence.
func (wd *Watch) nothingRuns() bool {
	n, err := wd.countProcesses()
	return err == nil && n == 0
}

// countProcesses asks the backend for the container's processes.
func (wd *Watch) countProcesses() (int, error) {
	return backend.CountProcesses(wd.Argv("ps", "--format", "json", wd.ID))
}
