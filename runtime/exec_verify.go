package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/audit"
	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/verify"
)

// execDetachedVerified runs a detached exec as a child, then verifies the
// process it started against the profile (verify.Process): capabilities,
// no_new_privs, the profile's seccomp filter and the policed identity.
// On a failed or impossible check the process is killed, the pid file
// removed, and the error names the control. Engines (Docker, containerd's
// shim) always exec this way.
func execDetachedVerified(g *Globals, c *recorded, v Values, policed *rspec.Process, process, id string, own []*os.File) error {
	b := c.backend
	// The backend writes the pid into bulkhead's own directory; the
	// caller's file gets it once the process is verified.
	dir, err := os.MkdirTemp("", "bulkhead-exec-")
	if err != nil {
		return fmt.Errorf("exec %s: %w", id, err)
	}
	defer os.RemoveAll(dir)
	pidFile := filepath.Join(dir, "pid")
	rest := append([]string{"--process", process, "--pid-file", pidFile}, execFlags(v, b.IsGVisor(), own)...)
	argv := g.backendArgv(b, "exec", append(rest, id)...)
	pids := watchPids(c)
	status, err := backend.Run(argv, v.Int("preserve-fds"), own...)
	if err == nil && status != 0 {
		err = pids.explain(&BackendError{Verb: "exec", Status: status})
	}
	if err != nil {
		return err
	}
	pid, err := readPidFile(pidFile)
	if err != nil {
		return fmt.Errorf("exec %s: %w", id, err)
	}
	if err := verifyExeced(c, policed, pid, id); err != nil {
		// The limit can also surface after runc wrote the pid, as a
		// process that fails verification: it is named whenever it
		// refused a fork.
		return pids.explain(err)
	}
	if callerPid := v.String("pid-file"); callerPid != "" {
		if err := writeCallerPidFile(callerPid, pid); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			return fmt.Errorf("exec %s: %w; the process is killed", id, err)
		}
	}
	return nil
}

// execAttachedVerified runs an attached exec (the caller's stdio and
// terminal are the process's, and its exit status is bulkhead's) as a
// child, verifies the process it started as a detached one is, and waits
// for it. On a failed check the process is killed.
func execAttachedVerified(g *Globals, c *recorded, v Values, policed *rspec.Process, process, id string, own []*os.File) error {
	dir, err := os.MkdirTemp("", "bulkhead-exec-")
	if err != nil {
		return fmt.Errorf("exec %s: %w", id, err)
	}
	defer os.RemoveAll(dir)
	pidFile := filepath.Join(dir, "pid")
	rest := append([]string{"--process", process, "--pid-file", pidFile}, execFlags(v, c.backend.IsGVisor(), own)...)
	argv := g.backendArgv(c.backend, "exec", append(rest, id)...)
	pids := watchPids(c)
	started := false
	backend.ForwardEverySignal() // the process gets the caller's, as with runc exec
	status, err := backend.Supervise(argv, v.Int("preserve-fds"), 0, func(exited <-chan struct{}) error {
		pid, err := waitPidFile(pidFile, exited)
		if err != nil {
			// The backend ended without a pid: it failed, and its status
			// and stderr say why. After a pid file a backend does not
			// write in its own time, its process runs unverified: it goes.
			if !errors.Is(err, errBackendEnded) {
				return fmt.Errorf("exec %s: %w", id, err)
			}
			return nil
		}
		started = true
		callerPid := v.String("pid-file")
		if callerPid != "" {
			if err := writeCallerPidFile(callerPid, pid); err != nil {
				_ = unix.Kill(pid, unix.SIGKILL)
				return fmt.Errorf("exec %s: %w", id, err)
			}
		}
		err = verifyExeced(c, policed, pid, id)
		if err != nil && callerPid != "" {
			os.Remove(callerPid)
		}
		return err
	}, own...)
	if err != nil {
		return pids.explain(err)
	}
	if status != 0 {
		// runc writes the pid of its init, which may still die setting up:
		// bulkhead's line says why when runc cannot.
		if why := pids.limitHit(); why != "" {
			if !started {
				return fmt.Errorf("%w: %s", &BackendError{Verb: "exec", Status: status}, why)
			}
			logrus.Warnf("bulkhead: exec %s: exit status %d: %s", id, status, why)
		}
		return &ExitError{Status: status}
	}
	return nil
}

// waitPidFile waits for the backend to write the exec'd process's pid,
// until the backend ends or backend.Timeout passes.
func waitPidFile(path string, exited <-chan struct{}) (int, error) {
	deadline := time.Now().Add(backend.Timeout)
	for {
		if pid, err := readPidFile(path); err == nil {
			return pid, nil
		}
		select {
		case <-exited:
			// It may have written the file just before it ended.
			if pid, err := readPidFile(path); err == nil {
				return pid, nil
			}
			return 0, errBackendEnded
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no pid in %s after %s", path, backend.Timeout)
		}
	}
}

var errBackendEnded = errors.New("the backend ended without a pid")

// verifyExeced judges an exec'd process (judgeExeced) and writes the
// verdict to the audit log: verified, killed, or ended before it could be
// read, which the operator sees there as well as in the --log file.
func verifyExeced(c *recorded, policed *rspec.Process, pid int, id string) error {
	outcome, why, err := judgeExeced(c, policed, pid, id)
	e := audit.Entry{Event: "exec-verify", ID: id, Bundle: c.rec.Bundle, Profile: c.profile.Name,
		Backend: c.backend.Name, Mode: c.profile.Mode, Outcome: outcome}
	if why != nil {
		e.Error = why.Error()
	}
	_ = audit.Write(c.cfg.AuditLog, &e)
	return err
}

// Outcomes of an exec's verification in the audit log.
const (
	execVerified = "verified"
	execKilled   = "killed"
	execEnded    = "ended before verification"
)

// judgeExeced verifies an exec'd process against the profile
// (verify.Process) and its cgroup and, when they do not hold or cannot be
// read in time, kills it and returns the error naming the control. The
// process is held by pidfd from the start, so neither the reads nor the
// kill can reach another process that reused its pid. why is what the
// reads found, also when the process had ended and err is nil.
func judgeExeced(c *recorded, policed *rspec.Process, pid int, id string) (outcome string, why, err error) {
	p, err := holdProcess(pid)
	if errors.Is(err, errGone) {
		// Gone before it could be held: nothing of it runs any more, so
		// there is nothing to kill; what it did cannot be verified, and the
		// audit line says so (execEnded). A short exec ends so as a matter
		// of course: the log has it at info level, not the caller's
		// stderr, which is the command's own output.
		logrus.Infof("bulkhead: exec %s: process %d ended before it could be verified", id, pid)
		return endedExec(c, id, nil)
	}
	if err != nil {
		// Fail closed: a process bulkhead cannot hold is not verified,
		// nor what it started.
		_ = unix.Kill(pid, unix.SIGKILL)
		err = fmt.Errorf("verification after exec: %w (process %d killed)", err, pid)
		if !c.backend.IsGVisor() {
			if serr := sweepContainer(c, true); serr != nil {
				err = fmt.Errorf("%w; %w", err, serr)
			}
		}
		return execKilled, err, err
	}
	defer p.release()
	if !c.backend.IsGVisor() && !p.sharesPidNamespace(c.rec.InitPid) {
		// The pid is no longer the exec'd process's: it ended and the pid
		// went to another process, which bulkhead must neither judge nor
		// kill.
		logrus.Infof("bulkhead: exec %s: process %d ended before it could be verified", id, pid)
		return endedExec(c, id, nil)
	}
	err = readWithin(p, time.Now().Add(verifyExecTimeout), func() error { return checkExeced(c, policed, pid) })
	if errors.Is(err, errTooSlow) {
		// A read that hangs (a ptrace stop that never comes) is no
		// evidence: the process goes, which also ends the read.
		err = fmt.Errorf("%w: the process could not be read within %s", err, verifyExecTimeout)
	}
	if err == nil && !c.backend.IsGVisor() {
		// What it forked before the read got what the backend gave it,
		// and may keep what the process itself then dropped; a process
		// of the container outside its cgroups escaped its limits.
		if serr := sweepContainer(c, false); serr != nil {
			err = serr
		}
	}
	if err == nil {
		return execVerified, nil, nil
	}
	if p.ending() {
		// Read while it exited: on cgroup v1 an exiting process shows in
		// the root cgroup, and its other fields are no longer its own.
		logrus.Infof("bulkhead: exec %s: process %d ended before it could be verified (%v)", id, pid, err)
		return endedExec(c, id, err)
	}
	// Fail closed: the process must not run on unverified.
	if kerr := p.kill(); kerr != nil {
		logrus.Errorf("bulkhead: exec %s: kill %d: %v", id, pid, kerr)
		err = fmt.Errorf("verification after exec: %w (and the process %d could not be killed: %v)", err, pid, kerr)
		return execKilled, err, err
	}
	// The caller sees the refusal only once the process is gone: it is not
	// bulkhead's child (the container's init or the backend reaps it), so
	// wait for that.
	if !p.exited(5 * time.Second) {
		err = fmt.Errorf("verification after exec: %w (process %d killed, still there after 5s)", err, pid)
		return execKilled, err, err
	}
	err = fmt.Errorf("verification after exec: %w (process %d killed)", err, pid)
	// What it started before it was killed got the same from the backend.
	if !c.backend.IsGVisor() {
		if serr := sweepContainer(c, true); serr != nil {
			err = fmt.Errorf("%w; %w", err, serr)
		}
	}
	return execKilled, err, err
}

// endedExec judges an exec whose process ended before it could be read.
// What it did is gone with it, but not what it started: a child inherits
// whatever the backend gave it. So every process in the container's
// cgroup is read instead, and one that does not hold is killed and fails
// the exec.
func endedExec(c *recorded, id string, read error) (outcome string, why, err error) {
	if c.backend.IsGVisor() {
		// Its processes are gVisor's, not the host's.
		return execEnded, read, nil
	}
	if err := sweepContainer(c, true); err != nil {
		err = fmt.Errorf("verification after exec: the exec'd process ended before it could be read, and %w", err)
		return execKilled, err, err
	}
	return execEnded, read, nil
}

// verifyExecTimeout bounds the reads of an exec'd process.
const verifyExecTimeout = 30 * time.Second

// checkExeced reads the exec'd process: its status and seccomp filter
// against the profile, and, under runc, its cgroup against the init's.
func checkExeced(c *recorded, policed *rspec.Process, pid int) error {
	e, err := execExpectation(c)
	if err != nil {
		return err
	}
	u := policed.User
	e.User = &u
	// Read as soon as the pid is known, possibly while runc's init is
	// still about to execute the process: by then it has its identity,
	// capabilities, no_new_privs and filter, and with no_new_privs and an
	// empty bounding set an execve cannot add to them. Waiting for the
	// execve would leave a short process unread.
	r, err := verify.Process(pid, e)
	if err == nil {
		err = r.Err()
	}
	if err == nil && !c.backend.IsGVisor() {
		err = verifyExecCgroup(pid, c.rec.InitPid)
	}
	return err
}

// execExpectation is what a process in the container is held to: the
// profile's boundary, with the filter as handed over, and code of its own
// already run.
func execExpectation(c *recorded) (*verify.Expectation, error) {
	var container *rspec.Spec
	if c.rec.Seccomp != nil {
		// Handed over narrowed by the caller's filter; Expect accepts it
		// only when it is within the profile's.
		container = &rspec.Spec{Linux: &rspec.Linux{Seccomp: c.rec.Seccomp}}
	}
	e, err := verify.Expect(&c.profile, container, c.backend.Kind())
	if err != nil {
		return nil, err
	}
	e.WorkloadRan = true
	return e, nil
}

// execFlags are the exec's flags for the backend beside its process and
// pid file: the caller's, with bulkhead's own descriptors counted after
// the caller's preserved ones.
func execFlags(v Values, gvisor bool, own []*os.File) []string {
	flags, _ := ForwardFlags("exec", v, gvisor, append(processFlags, "pid-file", "preserve-fds")...)
	if n := v.Int("preserve-fds") + len(own); n > 0 && !gvisor {
		flags = append(flags, "--preserve-fds="+strconv.Itoa(n))
	}
	return flags
}
