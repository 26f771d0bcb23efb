package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// oomKills is the oom_kill counter of a cgroup v1 memory group, false
// when the group cannot be read (gone, or not v1).
func oomKills(dir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// watchOOMKill asks the kernel to tell when the cgroup v1 memory group
// dir meets its limit (cgroup.event_control on memory.oom_control) and
// reads the group's oom_kill counter then, while the group is still
// there: the kernel's own evidence that it killed in that group, which
// does not depend on an engine relaying an event. The returned function
// waits for the answer, at most timeout; nil where the group is not v1.
func watchOOMKill(t *testing.T, dir string, timeout time.Duration) func() bool {
	t.Helper()
	before, ok := oomKills(dir)
	if !ok {
		return nil
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
			n, ok := oomKills(dir)
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
