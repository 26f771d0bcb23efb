package cgroups

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRemoveLeavesOthersAlone(t *testing.T) {
	for _, p := range []string{"", "system.slice:bulkhead:x", fmt.Sprintf("/bulkhead-test-absent-%d", os.Getpid())} {
		if err := Remove(p); err != nil {
			t.Errorf("Remove(%q): %v", p, err)
		}
	}
}

// TestRemoveDeletesLeftover makes the cgroup a failed create leaves
// behind and removes it in every hierarchy.
func TestRemoveDeletesLeftover(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a cgroup needs root")
	}
	path := fmt.Sprintf("/bulkhead-test-remove-%d", os.Getpid())
	var where string
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		if _, err := cgroup2.NewManager(defaultV2Mountpoint, path, &cgroup2.Resources{}); err != nil {
			t.Fatal(err)
		}
		where = filepath.Join(defaultV2Mountpoint, path)
	} else {
		if _, err := cgroup1.New(cgroup1.StaticPath(path), &specs.LinuxResources{}); err != nil {
			t.Fatal(err)
		}
		where = filepath.Join(defaultV1Root, "pids", path)
	}
	if _, err := os.Stat(where); err != nil {
		t.Fatalf("the cgroup was not made: %v", err)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(where); !os.IsNotExist(err) {
		t.Fatalf("%s still there after Remove (%v)", where, err)
	}
}

// TestRemoveWaitsForExitingProcesses removes a group whose process ends
// only after the removal began, as a killed container's may on a loaded
// host.
func TestRemoveWaitsForExitingProcesses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a cgroup needs root")
	}
	path := fmt.Sprintf("/bulkhead-test-remove-busy-%d", os.Getpid())
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		m, err := cgroup2.NewManager(defaultV2Mountpoint, path, &cgroup2.Resources{})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.AddProc(uint64(cmd.Process.Pid)); err != nil {
			t.Fatal(err)
		}
	} else {
		c, err := cgroup1.New(cgroup1.StaticPath(path), &specs.LinuxResources{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Add(cgroup1.Process{Pid: cmd.Process.Pid}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = Remove(path) })
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = cmd.Process.Kill()
	}()
	if err := Remove(path); err != nil {
		t.Fatalf("a group whose process ended 500 ms into the removal: %v", err)
	}
}
