package runtime

import (
	"fmt"
	"os"
	"strings"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// execDetachedVerified runs a detached exec as a child, then verifies the
// process it started against the profile (VerifyProcess): capabilities,
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
	status, err := runBackend(argv, v.Int("preserve-fds"))
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
	e, err := Expect(&c.profile, nil, b.Kind())
	if err == nil {
		u := policed.User
		e.User, e.WorkloadRan = &u, true
		var r Report
		if r, err = VerifyProcess(pid, e); err == nil {
			err = r.Err()
		}
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
	if !own {
		os.Remove(pidFile)
	}
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
