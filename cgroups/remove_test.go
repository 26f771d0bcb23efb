package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
