package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"bulkhead.dev/bulkhead/runtime/audit"

	"bulkhead.dev/bulkhead/runtime/state"

	"bulkhead.dev/bulkhead/runtime/backend"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/specs"
)

// WatchdogVerb is the hidden verb of the watchdog process: a re-exec of
// bulkhead itself that enforces max_lifetime from outside the sandbox.
const WatchdogVerb = "watchdog"

// watchdogReadyTimeout bounds the wait for the watchdog to report that it
// watches the container; without it the container must not run.
const watchdogReadyTimeout = 10 * time.Second

// startWatchdog starts the watchdog of a created and verified container
// when it has a lifetime. The lifetime is a boundary: if no watchdog runs,
// the creation fails. Audit mode arms none (it promises the backend's own
// behaviour) but records the lifetime it would enforce.
func (c *creation) startWatchdog() error {
	if c.lifetime <= 0 {
		return nil
	}
	c.rec.MaxLifetime = c.lifetime.String()
	if c.sel.Profile.Mode != specs.Enforce {
		return nil
	}
	pid, err := spawnWatchdog(c.g, c.rec.ID, c.rec.InitPid, c.lifetime)
	if err != nil {
		return fmt.Errorf("max_lifetime %s: start watchdog: %w", c.lifetime, err)
	}
	c.rec.WatchdogPid = pid
	return nil
}

// watchdogArgv is the command line of a watchdog (spawn is the
// intermediate that detaches it). It carries the globals that decide the
// backend's state and configuration, so the watchdog talks to the same
// backend instance as the engine; it runs in /, so they are absolute.
func watchdogArgv(self string, g *Globals, spawn bool, id string, pid int, lifetime time.Duration) []string {
	var args []string
	if spawn {
		args = append(args, "--spawn")
	} else {
		args = append(args, "--ready-fd", "3")
	}
	args = append(args, "--pid", strconv.Itoa(pid), "--lifetime", lifetime.String(), id)
	return g.selfArgv(self, WatchdogVerb, args...)
}

// spawnWatchdog starts the watchdog through an intermediate process that
// exits once the watchdog reports ready, so the watchdog is no child of
// bulkhead: `run`'s wait and reap loops never see it. bulkhead stops being
// a subreaper meanwhile, or the orphaned watchdog would come back to it;
// it lands with the next subreaper up (the engine's shim) or init.
func spawnWatchdog(g *Globals, id string, initPid int, lifetime time.Duration) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	// No descriptor the engine gave bulkhead (stdio pipes, preserved fds)
	// may stay open in a process that outlives the container.
	_ = unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	var was int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&was)), 0, 0, 0); err == nil && was != 0 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0); err != nil {
			return 0, err
		}
		defer func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), watchdogReadyTimeout+2*time.Second)
	defer cancel()
	argv := watchdogArgv(self, g, true, id, initPid, lifetime)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(stdout.String()))
	if err != nil {
		return 0, fmt.Errorf("watchdog pid %q: %w", stdout.String(), err)
	}
	logrus.Debugf("bulkhead: watchdog %d enforces max_lifetime %s on %s", pid, lifetime, id)
	return pid, nil
}

// SpawnWatchdog is the intermediate: it starts the watchdog in a session
// of its own with stdio on /dev/null, waits until it reports ready, prints
// its pid and exits.
func SpawnWatchdog(g *Globals, id string, initPid int, lifetime time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	argv := watchdogArgv(self, g, false, id, initPid, lifetime)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	w.Close()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		if s != "ok" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if s == "" {
				s = "exited without reporting"
			}
			return fmt.Errorf("watchdog: %s", s)
		}
	case <-time.After(watchdogReadyTimeout):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("watchdog: not ready after %s", watchdogReadyTimeout)
	}
	fmt.Println(cmd.Process.Pid)
	// Not waited for: the watchdog is re-parented when this process exits.
	_ = cmd.Process.Release()
	return nil
}

// watchdog is one container's deadline, enforced from outside it.
type watchdog struct {
	g        *Globals
	cfg      *Config
	reg      *state.Registry
	b        *backend.Backend
	id       string
	pid      int
	pidfd    int // -1 when the kernel has no pidfd_open
	lifetime time.Duration
}

// Watchdog waits until the container starts, arms its deadline and kills
// every process of the container through the backend when it passes. It
// exits at once when the container's init exits or the container is
// deleted first. ready (fd 3 from the intermediate) gets "ok" once the
// init is watched, or the error.
func Watchdog(g *Globals, id string, initPid int, lifetime time.Duration, ready *os.File) error {
	wd, err := newWatchdog(g, id, initPid, lifetime)
	if ready != nil {
		if err != nil {
			fmt.Fprintln(ready, err)
		} else {
			fmt.Fprintln(ready, "ok")
		}
		ready.Close()
	}
	if err != nil {
		return err
	}
	defer wd.close()
	return wd.run()
}

func newWatchdog(g *Globals, id string, initPid int, lifetime time.Duration) (*watchdog, error) {
	if err := state.CheckID(id); err != nil {
		return nil, err
	}
	if initPid <= 0 || lifetime <= 0 {
		return nil, fmt.Errorf("watchdog %s: want --pid and --lifetime", id)
	}
	cfg, err := g.LoadConfig()
	if err != nil {
		return nil, err
	}
	reg, err := state.OpenRegistry(g.Root)
	if err != nil {
		return nil, err
	}
	rec, err := reg.Get(id)
	if err != nil {
		return nil, fmt.Errorf("watchdog %s: %w", id, err)
	}
	b, err := cfg.ResolveBackend(rec.Backend)
	if err != nil {
		return nil, err
	}
	wd := &watchdog{g: g, cfg: cfg, reg: reg, b: b, id: id, pid: initPid, pidfd: -1, lifetime: lifetime}
	fd, err := unix.PidfdOpen(initPid, 0)
	switch {
	case err == nil:
		wd.pidfd = fd
	case errors.Is(err, unix.ENOSYS):
		// Older kernel: kill(pid, 0) polling below.
	default:
		return nil, fmt.Errorf("watchdog %s: watch init %d: %w", id, initPid, err)
	}
	return wd, nil
}

func (wd *watchdog) close() {
	if wd.pidfd >= 0 {
		unix.Close(wd.pidfd)
	}
}

// initExited waits up to d for the init to exit and tells whether it has.
func (wd *watchdog) initExited(d time.Duration) bool {
	if wd.pidfd < 0 {
		time.Sleep(min(d, 250*time.Millisecond))
		return unix.Kill(wd.pid, 0) == unix.ESRCH
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

// deleted tells whether bulkhead's record of the container is gone.
func (wd *watchdog) deleted() bool {
	_, err := os.Stat(filepath.Join(wd.reg.Dir(wd.id), "record.json"))
	return errors.Is(err, os.ErrNotExist)
}

// status is the backend's status of the container, "" when it has none.
func (wd *watchdog) status() string {
	out, err := exec.Command(wd.b.Path, wd.g.backendArgv(wd.b, "state", wd.id)[1:]...).Output()
	if err != nil {
		return ""
	}
	var s struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(out, &s)
	return s.Status
}

func (wd *watchdog) run() error {
	// Created: wait for start. The backend's state is polled, often at
	// first (engines start right after create), then less.
	begin := time.Now()
	for {
		every := 100 * time.Millisecond
		if time.Since(begin) > 30*time.Second {
			every = time.Second
		}
		if wd.initExited(every) || wd.deleted() {
			return nil
		}
		st := wd.status()
		if st == "running" || st == "paused" {
			break
		}
		if st != "created" {
			return nil // stopped or gone
		}
	}
	deadline := time.Now().Add(wd.lifetime)
	wd.setDeadline(deadline)
	// Running: the init's pidfd wakes the watchdog when the container ends
	// first. gVisor's sandbox process may outlive the container's init, so
	// its status is asked every second too.
	for {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		if wd.initExited(min(left, time.Second)) || wd.deleted() {
			return nil
		}
		if wd.b.IsGVisor() && time.Until(deadline) > 0 {
			if st := wd.status(); st != "running" && st != "paused" {
				return nil
			}
		}
	}
	return wd.expire(deadline)
}

// setDeadline stores the armed deadline in the record, for inspect.
func (wd *watchdog) setDeadline(deadline time.Time) {
	d := deadline.UTC()
	// A container deleted meanwhile has nothing to record.
	_ = wd.reg.Modify(wd.id, func(rec *state.Record) { rec.Deadline = &d })
}

// expire kills every process of the container through the backend and
// records it in the audit log.
func (wd *watchdog) expire(deadline time.Time) error {
	if wd.deleted() {
		return nil
	}
	count, countErr := wd.countProcesses()
	argv := wd.g.backendArgv(wd.b, "kill", "--all", wd.id, "KILL")
	killErr := backend.Quietly(argv)
	// The kill reaches every process of the container; wait for the init to
	// go so the audit line says what happened, not what was asked.
	gone := wd.initExited(5 * time.Second)
	d := deadline.UTC()
	e := &audit.Entry{Event: "deadline", ID: wd.id, Backend: wd.b.Name, Deadline: &d, Outcome: "killed"}
	if rec, err := wd.reg.Get(wd.id); err == nil {
		e.Profile, e.Mode, e.Bundle = rec.Profile, rec.Mode, rec.Bundle
	}
	if countErr == nil {
		e.Killed = &count
	}
	var errs []string
	if countErr != nil {
		errs = append(errs, "count processes: "+countErr.Error())
	}
	if killErr != nil {
		errs = append(errs, "kill --all: "+killErr.Error())
	}
	if !gone && wd.pidfd >= 0 {
		errs = append(errs, fmt.Sprintf("init %d still there 5 s after kill", wd.pid))
		e.Outcome = "kill failed"
	}
	e.Error = strings.Join(errs, "; ")
	if err := audit.Write(wd.cfg.AuditLog, e); err != nil {
		logrus.Warnf("bulkhead: %v", err)
	}
	if e.Outcome != "killed" {
		return errors.New(e.Error)
	}
	return nil
}

// countProcesses asks the backend for the container's processes.
func (wd *watchdog) countProcesses() (int, error) {
	out, err := exec.Command(wd.b.Path, wd.g.backendArgv(wd.b, "ps", "--format", "json", wd.id)[1:]...).Output()
	if err != nil {
		return 0, err
	}
	var procs []json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(out), &procs); err != nil {
		return 0, fmt.Errorf("ps output %q: %w", out, err)
	}
	return len(procs), nil
}
