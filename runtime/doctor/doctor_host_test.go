package doctor

import (
	"os"
	"path/filepath"
	"testing"

	"bulkhead.dev/bulkhead/cgroups"
)

// v1Tree lays out a cgroup v1 fixture with the controllers named.
func v1Tree(t *testing.T, controllers ...string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string][]string{
		"pids":    {"cgroup.procs"},
		"memory":  {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"},
		"cpu":     {"cpu.cfs_period_us"},
		"devices": {"devices.list"},
	}
	for _, ctl := range controllers {
		if err := os.MkdirAll(filepath.Join(root, ctl), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files[ctl] {
			if err := os.WriteFile(filepath.Join(root, ctl, f), []byte("1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func TestMissingController(t *testing.T) {
	t.Run("v1", func(t *testing.T) {
		full := doctorCgroups([]cgroups.Option{cgroups.WithV1Root(v1Tree(t, "pids", "memory", "cpu", "devices"))})
		for _, c := range full {
			if c.Status != StatusOK {
				t.Errorf("complete v1 tree: %+v", c)
			}
		}
		checks := doctorCgroups([]cgroups.Option{cgroups.WithV1Root(v1Tree(t, "memory", "cpu", "devices"))})
		wantFail(t, findCheck(t, checks, "cgroup pids"), "no pids hierarchy", "mount -t cgroup -o pids")
		if c := findCheck(t, checks, "cgroup memory"); c.Status != StatusOK {
			t.Errorf("memory is there: %+v", c)
		}
	})
	t.Run("v1 without swap accounting", func(t *testing.T) {
		root := v1Tree(t, "pids", "memory", "cpu", "devices")
		if err := os.Remove(filepath.Join(root, "memory", "memory.memsw.limit_in_bytes")); err != nil {
			t.Fatal(err)
		}
		checks := doctorCgroups([]cgroups.Option{cgroups.WithV1Root(root)})
		wantFail(t, findCheck(t, checks, "cgroup memory swap"), "no swap accounting", "swapaccount=1")
	})
	t.Run("v2", func(t *testing.T) {
		root := t.TempDir()
		write := func(name, data string) {
			if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("cgroup.controllers", "cpuset cpu io memory pids\n")
		write("cgroup.subtree_control", "cpu memory\n")
		checks := doctorCgroups([]cgroups.Option{cgroups.WithV2Mountpoint(root)})
		wantFail(t, findCheck(t, checks, "cgroup pids"), "not enabled in", "echo +pids > "+root+"/cgroup.subtree_control")
		if c := findCheck(t, checks, "cgroup cpu"); c.Status != StatusOK {
			t.Errorf("cpu is enabled: %+v", c)
		}
	})
}
