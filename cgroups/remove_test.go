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
// behind, in every hierarchy runc makes it in (on a hybrid host the v2
// tree as well), and removes it.
func TestRemoveDeletesLeftover(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a cgroup needs root")
	}
	path := fmt.Sprintf("/bulkhead-test-remove-%d", os.Getpid())
	var made []string
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		if _, err := cgroup2.NewManager(defaultV2Mountpoint, path, &cgroup2.Resources{}); err != nil {
			t.Fatal(err)
		}
		made = append(made, filepath.Join(defaultV2Mountpoint, path))
	} else {
		if _, err := cgroup1.New(cgroup1.StaticPath(path), &specs.LinuxResources{}); err != nil {
			t.Fatal(err)
		}
		made = append(made, filepath.Join(defaultV1Root, "pids", path))
		if cgroupsv3.Mode() == cgroupsv3.Hybrid {
			made = append(made, makeHybridV2(t, path))
		}
	}
	for _, where := range made {
		if _, err := os.Stat(where); err != nil {
			t.Fatalf("the cgroup was not made: %v", err)
		}
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	for _, where := range made {
		if _, err := os.Stat(where); !os.IsNotExist(err) {
			t.Errorf("%s still there after Remove (%v)", where, err)
		}
	}
	if Exists(path) {
		t.Errorf("Exists(%s) after Remove", path)
	}
}

// makeHybridV2 makes the group's directory in a hybrid host's v2 tree, as
// runc does beside the v1 groups, and removes it when the test ends.
func makeHybridV2(t *testing.T, path string) string {
	t.Helper()
	dir := filepath.Join(hybridV2Mountpoint, path)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	return dir
}

// sleeper starts a process to put in a group; it ends with the test, if
// the test has not killed it.
func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// TestRemoveWaitsForExitingProcesses removes a group whose process ends
// only after the removal began, as a killed container's may on a loaded
// host.
func TestRemoveWaitsForExitingProcesses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a cgroup needs root")
	}
	path := fmt.Sprintf("/bulkhead-test-remove-busy-%d", os.Getpid())
	cmd := sleeper(t)
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
		if cgroupsv3.Mode() == cgroupsv3.Hybrid {
			dir := makeHybridV2(t, path)
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644); err != nil {
				t.Fatal(err)
			}
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
	if Exists(path) {
		t.Errorf("Exists(%s) after Remove", path)
	}
}

// TestRemovePathsWaitsForExitingProcesses removes a container's groups
// as runc records them (one directory per hierarchy) while its last
// process ends only after runc's own retries would have given up.
func TestRemovePathsWaitsForExitingProcesses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a cgroup needs root")
	}
	path := fmt.Sprintf("/bulkhead-test-removepaths-busy-%d", os.Getpid())
	cmd := sleeper(t)
	paths := map[string]string{}
	var dirs []string
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		dirs = append(dirs, filepath.Join(defaultV2Mountpoint, path))
		paths[""] = dirs[0]
	} else {
		for _, c := range []string{"pids", "memory"} {
			d := filepath.Join(defaultV1Root, c, path)
			dirs, paths[c] = append(dirs, d), d
		}
		if cgroupsv3.Mode() == cgroupsv3.Hybrid {
			d := filepath.Join(hybridV2Mountpoint, path)
			dirs, paths[""] = append(dirs, d), d
		}
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(d) })
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_ = cmd.Process.Kill()
	}()
	if err := RemovePaths(paths); err != nil {
		t.Fatalf("groups whose process ended 1.5 s into the removal: %v", err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there after RemovePaths (%v)", d, err)
		}
	}
}
