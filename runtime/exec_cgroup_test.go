package runtime

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	cgroupsv3 "github.com/containerd/cgroups/v3"
)

func TestCheckSubCgroups(t *testing.T) {
	for _, ok := range []string{"sub", "pids:sub", "/", "cpu:/a/b", "memory:a..b"} {
		if err := checkSubCgroups([]string{ok}); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"..", "../x-host", "pids:../x-host", "a/../../x", "memory:/../x", "sub/.."} {
		if err := checkSubCgroups([]string{"sub", bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestVerifyExecCgroup puts a process standing for the container's init
// in a group, and expects a process in a sibling group that shares its
// name as a prefix to be seen outside, and one in a sub-group inside.
func TestVerifyExecCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("moving a process into another cgroup needs root")
	}
	base := "/sys/fs/cgroup/pids"
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		base = "/sys/fs/cgroup"
	}
	own := filepath.Join(base, "bulkhead-verify-exec-"+strconv.Itoa(os.Getpid()))
	sub, sibling := filepath.Join(own, "sub"), own+"-host"
	for _, d := range []string{own, sub, sibling} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Cleanups run last in first out: the processes end before their
	// groups are removed.
	t.Cleanup(func() { os.Remove(sibling); os.Remove(sub); os.Remove(own) })
	in := func(dir string) int {
		c := exec.Command("sleep", "30")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(c.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
		return c.Process.Pid
	}
	initPid := in(own)
	if err := verifyExecCgroup(in(own), initPid); err != nil {
		t.Errorf("a process in the same group: %v", err)
	}
	if err := verifyExecCgroup(in(sub), initPid); err != nil {
		t.Errorf("a process in a sub-group: %v", err)
	}
	if err := verifyExecCgroup(in(sibling), initPid); err == nil {
		t.Errorf("a process in %s passed as in %s", sibling, own)
	}
	if err := verifyExecCgroup(os.Getpid(), initPid); err == nil {
		t.Errorf("a process in the parent group passed as in %s", own)
	}
	if err := verifyExecCgroup(initPid, 0); err == nil {
		t.Error("no init pid passed")
	}
}
