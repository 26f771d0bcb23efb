package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/verify"
	"bulkhead.dev/bulkhead/specs"
)

// execDetachedVerified runs a detached exec as a child, then verifies the
// process it started against the profile (verify.Process): capabilities,
// no_new_privs, the profile's seccomp filter and the policed identity.
// On a failed or impossible check the process is killed, the pid file
// removed, and the error names the control. Engines (Docker, containerd's
// shim) always exec this way.
func execDetachedVerified(g *Globals, c *recorded, v Values, policed *rspec.Process, process, id string) error {
	b := c.backend
	pidFile, own := v.String("pid-file"), false
	if pidFile == "" {
		f, err := os.CreateTemp("", "bulkhead-exec-*.pid")
		if err != nil {
			return fmt.Errorf("exec %s: %w", id, err)
		}
		f.Close()
		// runc refuses to overwrite nothing, but writes its own file.
		os.Remove(f.Name())
		pidFile, own = f.Name(), true
	}
	if own {
		defer os.Remove(pidFile)
	}
	flags, _ := ForwardFlags("exec", v, b.IsGVisor(), append(processFlags, "pid-file")...)
	rest := append([]string{"--process", process, "--pid-file", pidFile}, flags...)
	argv := g.backendArgv(b, "exec", append(rest, id)...)
	status, err := backend.Run(argv, v.Int("preserve-fds"))
	if err == nil && status != 0 {
		err = &BackendError{Verb: "exec", Status: status}
	}
	if err != nil {
		return err
	}
	pid, err := readPidFile(pidFile)
	if err != nil {
		return fmt.Errorf("exec %s: %w", id, err)
	}
	err = verifyExeced(c, policed, pid, id)
	if err != nil && !own {
		os.Remove(pidFile)
	}
	return err
}

// execAttachedVerified runs an attached exec (the caller's stdio and
// terminal are the process's, and its exit status is bulkhead's) as a
// child, verifies the process it started as a detached one is, and waits
// for it. On a failed check the process is killed.
func execAttachedVerified(g *Globals, c *recorded, v Values, policed *rspec.Process, process, id string) error {
	dir, err := os.MkdirTemp("", "bulkhead-exec-")
	if err != nil {
		return fmt.Errorf("exec %s: %w", id, err)
	}
	defer os.RemoveAll(dir)
	pidFile := filepath.Join(dir, "pid")
	flags, _ := ForwardFlags("exec", v, c.backend.IsGVisor(), append(processFlags, "pid-file")...)
	rest := append([]string{"--process", process, "--pid-file", pidFile}, flags...)
	argv := g.backendArgv(c.backend, "exec", append(rest, id)...)
	status, err := backend.Supervise(argv, v.Int("preserve-fds"), 0, func() error {
		pid, err := waitPidFile(pidFile, backend.Timeout)
		if err != nil {
			return nil // the backend failed or the process already ended: its status says which
		}
		callerPid := v.String("pid-file")
		if callerPid != "" {
			if err := specs.WriteAtomic(callerPid, []byte(strconv.Itoa(pid)), 0o644); err != nil {
				_ = unix.Kill(pid, unix.SIGKILL)
				return fmt.Errorf("exec %s: pid file: %w", id, err)
			}
		}
		err = verifyExeced(c, policed, pid, id)
		if err != nil && callerPid != "" {
			os.Remove(callerPid)
		}
		return err
	})
	if err != nil {
		return err
	}
	if status != 0 {
		return &ExitError{Status: status}
	}
	return nil
}

// waitPidFile waits for the backend to write the exec'd process's pid.
func waitPidFile(path string, d time.Duration) (int, error) {
	deadline := time.Now().Add(d)
	for {
		if pid, err := readPidFile(path); err == nil {
			return pid, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no pid in %s after %s", path, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// verifyExeced verifies an exec'd process against the profile
// (verify.Process) and, when it does not hold, kills it and returns the
// error naming the control.
func verifyExeced(c *recorded, policed *rspec.Process, pid int, id string) error {
	var container *rspec.Spec
	if c.rec.Seccomp != nil {
		// Handed over narrowed by the caller's filter; Expect accepts it
		// only when it is within the profile's.
		container = &rspec.Spec{Linux: &rspec.Linux{Seccomp: c.rec.Seccomp}}
	}
	e, err := verify.Expect(&c.profile, container, c.backend.Kind())
	if err == nil {
		u := policed.User
		e.User, e.WorkloadRan = &u, true
		var r verify.Report
		if r, err = verify.Process(pid, e); err == nil {
			err = r.Err()
		}
	}
	if err == nil && !c.backend.IsGVisor() {
		err = verifyExecCgroup(pid, c.rec.InitPid)
	}
	if err == nil {
		return nil
	}
	if ended(pid) {
		// Nothing of it runs any more, so there is nothing to kill;
		// what it did cannot be verified, and the log says so.
		logrus.Warnf("bulkhead: exec %s: process %d ended before it could be verified (%v)", id, pid, err)
		return nil
	}
	// Fail closed: the process must not run on unverified.
	kerr := unix.Kill(pid, unix.SIGKILL)
	if kerr != nil && kerr != unix.ESRCH {
		logrus.Errorf("bulkhead: exec %s: kill %d: %v", id, pid, kerr)
		return fmt.Errorf("verification after exec: %w (and the process %d could not be killed: %v)", err, pid, kerr)
	}
	// The caller sees the refusal only once the process is gone: it is not
	// bulkhead's child (the container's init reaps it), so wait for that.
	if !waitEnded(pid, 5*time.Second) {
		return fmt.Errorf("verification after exec: %w (process %d killed, still there after 5s)", err, pid)
	}
	return fmt.Errorf("verification after exec: %w (process %d killed)", err, pid)
}

// waitEnded polls until pid is gone or a zombie, for at most d.
func waitEnded(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !ended(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// ended tells whether pid is gone or a zombie: an exec'd command that
// finished before bulkhead could read it.
func ended(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name, which ends at the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}
