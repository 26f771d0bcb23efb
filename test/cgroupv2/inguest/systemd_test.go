package inguest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestSystemdPathWithoutSystemd: the systemd driver's cgroupsPath
// (slice:prefix:name) asks systemd over D-Bus for a transient scope, so it
// cannot run where systemd is not PID 1, as in the guest. What is tested
// here: under the cgroupfs driver the form is translated to a plain path
// (machine.slice:bulkhead:ID is /machine/bulkhead-ID, as runc's own
// cgroupfs driver would name it without systemd) and the container lives
// in that new group, gone after delete; under --systemd-cgroup the
// backend's failure makes create fail and leaves no scope cgroup, state
// or record.
func TestSystemdPathWithoutSystemd(t *testing.T) {
	needV2(t)
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here: this test is about a host without it, where the driver cannot work")
	}
	for _, systemd := range []bool{false, true} {
		name := "cgroupfs"
		if systemd {
			name = "systemd"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "")
			id := newID(t)
			path := "machine.slice:bulkhead:" + id
			b := sleeper(t, id, func(s *rspec.Spec) { s.Linux.CgroupsPath = path })
			orig := readConfig(t, b)
			args := []string{"create", "--bundle", b, id}
			if systemd {
				args = append([]string{"--systemd-cgroup"}, args...)
			}
			r := e.run(t, "", args...)
			t.Cleanup(func() { e.run(t, "", "delete", "--force", id) })
			plain := filepath.Join("/sys/fs/cgroup/machine", "bulkhead-"+id)
			if !systemd {
				if r.code != 0 {
					t.Fatalf("create with cgroupsPath %s under the cgroupfs driver: exit %d: %s", path, r.code, r.stderr)
				}
				procs, err := os.ReadFile(filepath.Join(plain, "cgroup.procs"))
				if err != nil || len(strings.TrimSpace(string(procs))) == 0 {
					t.Fatalf("the container is not in the translated group %s (%v): %q", plain, err, procs)
				}
				if d := e.run(t, "", "delete", "--force", id); d.code != 0 {
					t.Fatalf("delete: exit %d: %s", d.code, d.stderr)
				}
				if _, err := os.Stat(plain); err == nil {
					t.Errorf("translated group %s left behind", plain)
				}
			} else {
				if r.code == 0 {
					t.Fatalf("create with cgroupsPath %s succeeded under --systemd-cgroup without systemd", path)
				}
				t.Logf("refused: %s", strings.TrimSpace(r.stderr))
			}
			scope := filepath.Join("/sys/fs/cgroup/machine.slice", "bulkhead-"+id+".scope")
			if _, err := os.Stat(scope); err == nil {
				t.Errorf("scope cgroup %s left behind", scope)
			}
			e.assertNothingLeft(t, id)
			unchanged(t, b, orig)
		})
	}
}
