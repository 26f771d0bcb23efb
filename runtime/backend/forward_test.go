package backend

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// superviseSleep runs sleep as a backend and sends bulkhead sig again and
// again until the backend ends (the first may arrive before the child is
// told apart from a starting one), or for the given time; it returns the
// backend's status.
func superviseSleep(t *testing.T, sig unix.Signal, seconds string, within time.Duration) int {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	status, err := Supervise([]string{sleep, seconds}, 0, time.Minute, func(exited <-chan struct{}) error {
		deadline := time.After(within)
		for {
			if err := unix.Kill(os.Getpid(), sig); err != nil {
				return err
			}
			select {
			case <-exited:
				return nil
			case <-deadline:
				<-exited
				return nil
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return status
}

// A signal that would end bulkhead ends the backend it runs instead: the
// backend (sleep) dies of it and Supervise reports that status.
func TestSignalReachesTheRunningBackend(t *testing.T) {
	if status, want := superviseSleep(t, unix.SIGTERM, "30", time.Minute), 128+int(unix.SIGTERM); status != want {
		t.Fatalf("backend status %d, want %d (killed by the forwarded SIGTERM)", status, want)
	}
}

// Only a backend that passes signals on to the container's process gets
// every one: a signal the Go runtime ignores in bulkhead (SIGUSR1) is not
// asked for in a create, where asking for all 59 cost 1.5 ms of CPU, and
// reaches the backend once ForwardEverySignal asked for it. The first
// half runs in a child of its own, since what is asked for stays asked.
func TestEverySignalOnlyWhereForwarded(t *testing.T) {
	if os.Getenv("BULKHEAD_FORWARD_CHILD") == "usr1" {
		if status := superviseSleep(t, unix.SIGUSR1, "1", 500*time.Millisecond); status != 0 {
			os.Exit(5) // the backend got it
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEverySignalOnlyWhereForwarded$")
	cmd.Env = append(os.Environ(), "BULKHEAD_FORWARD_CHILD=usr1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("SIGUSR1 with only the ending signals asked for: %v\n%s", err, out)
	}
	ForwardEverySignal()
	if status, want := superviseSleep(t, unix.SIGUSR1, "30", time.Minute), 128+int(unix.SIGUSR1); status != want {
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
