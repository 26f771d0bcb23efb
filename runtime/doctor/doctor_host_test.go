package doctor

import (
	"os"
	"path/filepath"
	"strings"
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
			if c.Status != StatusOK && c.Name != "cgroup memory sockets" {
				t.Errorf("complete v1 tree: %+v", c)
			}
		}
		// v1 charges TCP and UDP buffers to no container.
		if c := findCheck(t, full, "cgroup memory sockets"); c.Status != StatusWarn || !strings.Contains(c.Fix, "cgroup v2") {
			t.Errorf("socket memory on cgroup v1: %+v, want a warning pointing at cgroup v2 or runsc", c)
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
		if c := findCheck(t, checks, "cgroup memory sockets"); c.Status != StatusOK {
			t.Errorf("socket memory on cgroup v2: %+v, want ok", c)
		}
	})
}

// TestPtraceScope: only Yama's scope 2 keeps a runc job from a process
// exec'd into its container; scope 1 does not (a detached exec's process
// is the init's child), nor does a kernel without Yama.
func TestPtraceScope(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		want    Status
	}{{"", StatusWarn}, {"0\n", StatusWarn}, {"1\n", StatusWarn}, {"2\n", StatusOK}, {"3\n", StatusOK}} {
		path := filepath.Join(dir, "absent")
		if tc.content != "" {
			path = filepath.Join(dir, "scope"+strings.TrimSpace(tc.content))
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c := ptraceScopeAt(path)
		if c.Status != tc.want || c.Status == StatusWarn && !strings.Contains(c.Fix, "ptrace_scope=2") {
			t.Errorf("%q: %+v, want %s", tc.content, c, tc.want)
		}
	}
}
