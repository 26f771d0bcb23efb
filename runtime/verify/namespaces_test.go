package verify

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVerifyNamespaces runs real processes: a container's init in new
// namespaces, one in the test's own, and a pod member in its sandbox's
// namespaces. A joined namespace holds only while the sandbox's init is
// the process bulkhead recorded, and only when it is that process's: a
// member that ended up in another process's namespace (the pid reused
// between the rules and the backend's setns) fails.
func TestVerifyNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the processes get namespaces of their own")
	}
	flags := uintptr(syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS)
	sandbox := start(t, flags, "sleep", "600")
	other := start(t, flags, "sleep", "600")
	hostly := start(t, 0, "sleep", "600")
	member := start(t, 0, "nsenter", "-t", fmt.Sprint(sandbox), "-n", "-i", "-u", "sleep", "600")
	waitNs(t, member, sandbox, "net")

	newNs := []Namespace{{File: "net"}, {File: "ipc"}, {File: "uts"}}
	joined := func(pid int, runs bool) []Namespace {
		var ns []Namespace
		for _, f := range []string{"net", "ipc", "uts"} {
			ns = append(ns, Namespace{File: f, JoinPid: pid, JoinRuns: func() bool { return runs }})
		}
		return ns
	}
	for _, c := range []struct {
		name string
		pid  int
		ns   []Namespace
		ok   bool
	}{
		{"new namespaces", sandbox, newNs, true},
		{"the host's, expected new", hostly, newNs, false},
		{"the sandbox's, joined", member, joined(sandbox, true), true},
		{"the sandbox's, but its init is no longer the recorded process", member, joined(sandbox, false), false},
		{"another process's, where the sandbox's was expected", other, joined(sandbox, true), false},
		{"no recorded process", member, []Namespace{{File: "net", JoinPid: sandbox}}, false},
		{"a path that names no process", member, []Namespace{{File: "net", JoinPid: -1}}, false},
	} {
		var r Report
		if err := verifyNamespaces(&r, c.pid, c.ns); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ok := r.Err() == nil; ok != c.ok {
			t.Errorf("%s: passed %v, want %v: %s", c.name, ok, c.ok, controls(r))
		}
	}
}

func start(t *testing.T, flags uintptr, argv ...string) int {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// waitNs waits until pid (nsenter, before it execs sleep) is in ref's
// namespace.
func waitNs(t *testing.T, pid, ref int, file string) {
	t.Helper()
	want, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", ref, file))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		got, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, file))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if got == want && strings.HasPrefix(string(cmdline), "sleep") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d never joined %d's %s namespace", pid, ref, file)
}
