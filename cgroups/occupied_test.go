package cgroups

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	cgroupsv3 "github.com/containerd/cgroups/v3"
)

// TestOccupiedAbove puts a process in a real group and asks about groups
// below and beside it: a process in a group above the asked one counts, a
// process in a sibling below that group does not (the groups above are
// judged by their own processes alone), and the asked group's own subtree
// counts whole.
func TestOccupiedAbove(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make cgroups")
	}
	dir := filepath.Join(defaultV1Root, "pids")
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		dir = defaultV2Mountpoint
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
		t.Skipf("no cgroup hierarchy at %s: %v", dir, err)
	}
	b := make([]byte, 4)
	rand.Read(b)
	parent := "/bulkhead-occupied-test-" + hex.EncodeToString(b)
	for _, g := range []string{parent, parent + "/sibling"} {
		if err := os.Mkdir(filepath.Join(dir, g), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sleep := exec.Command("sleep", "300")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sleep.Process.Kill()
		sleep.Wait()
		os.Remove(filepath.Join(dir, parent, "sibling"))
		os.Remove(filepath.Join(dir, parent))
	})
	hierarchy := dir // where move puts the process
	move := func(g string) {
		t.Helper()
		pid := []byte(strconv.Itoa(sleep.Process.Pid))
		if err := os.WriteFile(filepath.Join(hierarchy, g, "cgroup.procs"), pid, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(path string, want bool) {
		t.Helper()
		busy, err := Occupied(path)
		if err != nil {
			t.Fatalf("Occupied(%s): %v", path, err)
		}
		if busy != want {
			t.Errorf("Occupied(%s) = %v, want %v (process in %s)", path, busy, want, dir)
		}
	}
	ask(parent+"/new", false)
	move(parent + "/sibling")
	ask(parent+"/new", false)
	ask(parent, true)
	ask(parent+"/sibling", true)
	if cgroupsv3.Mode() != cgroupsv3.Unified {
		// v2 keeps processes out of a group with children; v1 does not.
		move(parent)
		ask(parent+"/new", true)
		ask(parent+"/new/deeper", true)
	}
	move("/")
	ask(parent+"/new", false)
	ask(parent, false)

	if cgroupsv3.Mode() == cgroupsv3.Hybrid {
		// A hybrid host's v2 tree counts as well (systemd's own grouping
		// lives there), a group above judged by its cgroup.procs alone.
		unified := filepath.Join(defaultV1Root, "unified")
		for _, g := range []string{parent, parent + "/sibling"} {
			if err := os.Mkdir(filepath.Join(unified, g), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			os.Remove(filepath.Join(unified, parent, "sibling"))
			os.Remove(filepath.Join(unified, parent))
		})
		hierarchy = unified
		move(parent + "/sibling")
		ask(parent+"/new", false)
		ask(parent, true)
		move(parent)
		ask(parent+"/new", true)
		move("/")
		ask(parent+"/new", false)
	}
}
