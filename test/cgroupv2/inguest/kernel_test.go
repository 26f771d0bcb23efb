package inguest

import (
	"os"
	"strings"
	"testing"
)

// TestCgroup2Only: the kernel these tests run on mounts cgroup2 and no
// cgroup v1 hierarchy, so every limit below is read from v2 files.
func TestCgroup2Only(t *testing.T) {
	needV2(t)
	t.Logf("kernel %s", kernelRelease())
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	var v2 int
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[2], "cgroup") {
			continue
		}
		t.Logf("mount %s %s", f[2], f[1])
		if f[2] != "cgroup2" {
			t.Errorf("a %s filesystem at %s: not a v2-only host", f[2], f[1])
			continue
		}
		v2++
	}
	if v2 == 0 {
		t.Error("no cgroup2 mount")
	}
	ctrl, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"cpu", "memory", "pids"} {
		if !strings.Contains(" "+strings.TrimSpace(string(ctrl))+" ", " "+c+" ") {
			t.Errorf("controller %s not enabled for child groups: %q", c, ctrl)
		}
	}
}
