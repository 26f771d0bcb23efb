package backend

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A signal bulkhead receives while a backend runs ends in the backend:
// the backend (sleep) dies of it and Supervise reports that status.
func TestSignalReachesTheRunningBackend(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	status, err := Supervise([]string{sleep, "30"}, 0, time.Minute, func(exited <-chan struct{}) error {
		// Again and again until it ends: the first may arrive before the
		// child is told apart from a starting one.
		for {
			if err := unix.Kill(os.Getpid(), unix.SIGUSR1); err != nil {
				return err
			}
			select {
			case <-exited:
				return nil
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := 128 + int(unix.SIGUSR1); status != want {
		t.Fatalf("backend status %d, want %d (killed by the forwarded SIGUSR1)", status, want)
	}
}

// With no backend running, a signal gets its default action, as in a
// process that never asked for it: the test binary, re-run as a child,
// dies of SIGTERM after running one backend (Go's default for SIGTERM).
func TestSignalWithoutBackendGetsDefaultAction(t *testing.T) {
	if os.Getenv("BULKHEAD_FORWARD_CHILD") == "1" {
		if _, err := Run([]string{"/bin/true"}, 0); err != nil {
			os.Exit(3)
		}
		_ = unix.Kill(os.Getpid(), unix.SIGTERM)
		time.Sleep(10 * time.Second)
		os.Exit(4) // survived the signal
	}
	if _, err := os.Stat("/bin/true"); err != nil {
		t.Skipf("no /bin/true: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalWithoutBackendGetsDefaultAction$")
	cmd.Env = append(os.Environ(), "BULKHEAD_FORWARD_CHILD=1")
	err := cmd.Run()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != unix.SIGTERM {
		t.Fatalf("child: %v (state %v), want death by SIGTERM", err, cmd.ProcessState)
	}
}
