// Package detach starts the processes bulkhead leaves running beside a
// container, outside its cgroup and namespaces (the watchdog, the egress
// broker): detached from the caller, reporting ready before create goes on.
package detach

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ReadyTimeout bounds the wait for a detached process to report that it
// holds its container; without it the container must not run.
const ReadyTimeout = 10 * time.Second

// Spawn runs argv, the intermediate (Detach), and returns the pid of the
// process it started (the watchdog, the egress broker). Going through an
// intermediate process that exits once that process reports ready, so it
// is no child of bulkhead: `run`'s wait and reap loops never see it.
// bulkhead stops being a subreaper meanwhile, or the orphan would come
// back to it; it lands with the next subreaper up (the engine's shim) or
// init. name says which process an error is about.
func Spawn(name string, argv []string) (int, error) {
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
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout+2*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(stdout.String()))
	if err != nil {
		return 0, fmt.Errorf("%s pid %q: %w", name, stdout.String(), err)
	}
	return pid, nil
}

// Report is what a detached process says on ready (nil: none), once:
// "ok" when err is nil, else err, which Detach passes on as its error.
func Report(ready *os.File, err error) error {
	if ready != nil {
		if err != nil {
			fmt.Fprintln(ready, err)
		} else {
			fmt.Fprintln(ready, "ok")
		}
		ready.Close()
	}
	return err
}

// Detach is the intermediate: it starts argv in a session of its own with
// stdio on /dev/null and the write end of a pipe as fd 3, waits until it
// writes "ok" there, prints its pid and exits.
func Detach(name string, argv []string) error {
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
			return fmt.Errorf("%s: %s", name, s)
		}
	case <-time.After(ReadyTimeout):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("%s: not ready after %s", name, ReadyTimeout)
	}
	fmt.Println(cmd.Process.Pid)
	// Not waited for: the process is re-parented when this process exits.
	_ = cmd.Process.Release()
	return nil
}
