package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
)

// oomKills is the OOM-kill count of the group, false when it cannot be
// read (gone, or no memory controller).
func oomKills(g *cgroups.Group) (uint64, bool) {
	e, err := g.Events()
	return e.OOMKills, err == nil
}

// watchOOMKill asks the kernel to tell when the cgroup v1 memory group
// dir meets its limit (cgroup.event_control on memory.oom_control) and
// reads the group's oom_kill counter then, while the group is still
// there: the kernel's own evidence that it killed in that group, which
// does not depend on an engine relaying an event. The returned function
// waits for the answer, at most timeout; nil where the group is not v1.
func watchOOMKill(t *testing.T, pid int, dir string, timeout time.Duration) func() bool {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "cgroup.event_control")); err != nil {
		return nil
	}
	g, err := cgroups.ForPID(pid)
	if err != nil {
		t.Fatalf("cgroup of the sandbox: %v", err)
	}
	before, ok := oomKills(g)
	if !ok {
		t.Fatalf("the sandbox's memory cgroup has no OOM-kill count")
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatalf("eventfd: %v", err)
	}
	ctl, err := os.Open(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		unix.Close(efd)
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close(); unix.Close(efd) })
	if err := os.WriteFile(filepath.Join(dir, "cgroup.event_control"), []byte(fmt.Sprintf("%d %d", efd, ctl.Fd())), 0); err != nil {
		t.Fatalf("cgroup.event_control: %v", err)
	}
	killed := make(chan bool, 1)
	go func() {
		var buf [8]byte
		// The kernel tells when the group meets its limit, before its
		// OOM killer has counted the kill, and again when the group is
		// removed: after the wake, the counter is read until it grows or
		// the group is gone.
		if _, err := unix.Read(efd, buf[:]); err != nil {
			killed <- false
			return
		}
		for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			n, ok := oomKills(g)
			if !ok || n > before {
				killed <- ok
				return
			}
		}
		killed <- false
	}()
	return func() bool {
		select {
		case k := <-killed:
			return k
		case <-time.After(timeout):
			return false
		}
	}
}
