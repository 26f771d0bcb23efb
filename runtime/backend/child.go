package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

// Timeout bounds a backend call that bulkhead waits for; a backend
// that hangs must not hang the engine forever.
const Timeout = 2 * time.Minute

// waitDelay bounds the wait for a backend's output pipes once it ended or
// was killed: a child it left running (runsc's) would hold them open.
const waitDelay = 5 * time.Second

// Run runs a backend as a child with bulkhead's own stdio, the
// preserved fds at the same numbers, own after them, and every catchable
// signal forwarded, and returns its exit status. err is non-nil only when
// it could not run.
func Run(argv []string, preserveFds int, own ...*os.File) (int, error) {
	return Supervise(argv, preserveFds, Timeout, nil, own...)
}

// Supervise is Run with a timeout of its own (0 for none:
// an attached exec runs as long as its process) and a watch that runs
// once the backend started, told when the backend has ended; an error
// from watch is returned after the backend ended (watch kills what must
// not run).
func Supervise(argv []string, preserveFds int, timeout time.Duration, watch func(exited <-chan struct{}) error, own ...*os.File) (int, error) {
	return SuperviseOn(nil, argv, preserveFds, timeout, watch, own...)
}

// SuperviseOn is Supervise with stdio as the backend's stdin, stdout and
// stderr (nil: bulkhead's own).
func SuperviseOn(stdio *os.File, argv []string, preserveFds int, timeout time.Duration, watch func(exited <-chan struct{}) error, own ...*os.File) (int, error) {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	preserved, err := PreservedFiles(preserveFds)
	if err != nil {
		return -1, err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if stdio != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio, stdio, stdio
	}
	cmd.ExtraFiles = append(preserved, own...)
	logrus.Debugf("bulkhead: running %v", argv)
	forwarding.start()
	if err := cmd.Start(); err != nil {
		forwarding.abandon()
		if ctx.Err() == context.DeadlineExceeded {
			// A loaded host can take the whole timeout to get here.
			return -1, &TimedOutError{Program: filepath.Base(argv[0]), After: timeout}
		}
		return -1, err
	}
	forwarding.add(cmd.Process)
	defer forwarding.remove(cmd.Process)
	exited := make(chan struct{})
	go func() {
		err = cmd.Wait()
		close(exited)
	}()
	var werr error
	if watch != nil {
		werr = watch(exited)
	}
	if werr != nil {
		// What it started is killed or was never seen; the backend itself
		// has nothing left to do.
		_ = cmd.Process.Kill()
	}
	<-exited
	if werr != nil {
		return -1, werr
	}
	if ctx.Err() == context.DeadlineExceeded {
		return -1, &TimedOutError{Program: filepath.Base(argv[0]), After: timeout}
	}
	return ExitStatus(err)
}

// TimedOutError is a backend killed for taking longer than its timeout:
// said as such, not as the status of the kill.
type TimedOutError struct {
	Program string
	After   time.Duration
}

func (e *TimedOutError) Error() string {
	return fmt.Sprintf("%s did not finish within %s and was killed", e.Program, e.After)
}

// Output runs a backend and returns its stdout, for verbs whose output
// bulkhead reads (list, features, state of a record).
func Output(argv []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = waitDelay
	return cmd.Output()
}

// Quietly runs a backend for cleanup, its output kept out of bulkhead's
// and its last line in the error.
func Quietly(argv []string) error {
	return quietly(argv, false)
}

// QuietlyApart is Quietly in a process group of the backend's own: a
// signal to bulkhead's group (Ctrl-C, timeout(1)) does not end it half
// way. A resume that such a signal ended left a job paused for good.
func QuietlyApart(argv []string) error {
	return quietly(argv, true)
}

func quietly(argv []string, apart bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = waitDelay
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: apart}
	out, err := cmd.CombinedOutput()
	if err != nil {
		logrus.Debugf("bulkhead: %v: %v: %s", argv, err, out)
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); lines[len(lines)-1] != "" {
			return fmt.Errorf("%w: %s", err, lines[len(lines)-1])
		}
	}
	return err
}

// exitStatus turns a Wait error into the status a shell would report.
func ExitStatus(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			return WaitStatusCode(ws), nil
		}
		return ee.ExitCode(), nil
	}
	return -1, err
}

func WaitStatusCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
