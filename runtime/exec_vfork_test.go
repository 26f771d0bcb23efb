package runtime

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/seccomp"
	"bulkhead.dev/bulkhead/test/vforkpark"
)

// parked starts `vforkpark self` and waits until it sits in its vfork
// wait; it returns the process and its vfork child, both killed at the
// end.
func parked(t *testing.T) (*exec.Cmd, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: reads other processes under ptrace")
	}
	cmd := exec.Command(vforkpark.Build(t), "self")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	child := 0
	for i := 0; i < 1000 && child == 0; i++ {
		time.Sleep(10 * time.Millisecond)
		child = vforkChild(cmd.Process.Pid)
	}
	if child == 0 {
		t.Fatalf("process %d not seen in a vfork wait", cmd.Process.Pid)
	}
	t.Cleanup(func() { _ = unix.Kill(child, unix.SIGKILL) })
	return cmd, child
}

// TestVforkChild: a process in a vfork wait is seen with the child it
// waits for; a sleeping one is not.
func TestVforkChild(t *testing.T) {
	cmd, child := parked(t)
	ppid, err := parentPid(child)
	if err != nil || ppid != cmd.Process.Pid {
		t.Errorf("vfork child %d has parent %d (%v), want %d", child, ppid, err, cmd.Process.Pid)
	}
	// The child itself pauses: it is in no vfork wait.
	if c := vforkChild(child); c != 0 {
		t.Errorf("the pausing vfork child %d is said to wait for %d", child, c)
	}
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Wait()
	defer sleeper.Process.Kill()
	if c := vforkChild(sleeper.Process.Pid); c != 0 {
		t.Errorf("a sleeping process is said to wait in vfork for %d", c)
	}
}

// TestReadWithinParked: a read of a process parked in vfork (its filter
// under ptrace, which never stops it) ends with the parked verdict, long
// before its deadline, and the process can then be killed.
func TestReadWithinParked(t *testing.T) {
	cmd, child := parked(t)
	p, err := holdProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.release()
	read := make(chan error, 1)
	err = readWithin(p, time.Now().Add(10*time.Minute), func() error {
		_, err := seccomp.LoadedFilters(p.pid)
		read <- err
		return err
	})
	var parked *parkedInVfork
	if !errors.As(err, &parked) {
		t.Fatalf("read of a parked process: %v, want it found parked in vfork", err)
	}
	if parked.child != child {
		t.Errorf("parked waiting for %d, want %d", parked.child, child)
	}
	t.Log(err)
	if err := p.kill(); err != nil {
		t.Fatal(err)
	}
	if !p.exited(10 * time.Second) {
		t.Fatal("killed parked process not seen to exit")
	}
	// The kill ends the read under ptrace that waited for a stop.
	if err := <-read; err == nil {
		t.Error("the filter of a process parked in vfork was read")
	}
}

// TestReadWithin: a read that ends returns its own verdict; once the
// deadline has passed no read starts.
func TestReadWithin(t *testing.T) {
	p, err := holdProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer p.release()
	mine := errors.New("mine")
	if err := readWithin(p, time.Now().Add(time.Minute), func() error { return mine }); err != mine {
		t.Errorf("readWithin returned %v, want the read's error", err)
	}
	ran := false
	if err := readWithin(p, time.Now(), func() error { ran = true; return nil }); !errors.Is(err, errTooSlow) || ran {
		t.Errorf("past the deadline: %v, read ran %v; want errTooSlow and no read", err, ran)
	}
}
