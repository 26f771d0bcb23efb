package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/specs"
)

// makeGroups makes the groups at paths (parents first) in every hierarchy
// of the host and removes them at the end.
func makeGroups(t *testing.T, paths ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	roots := []string{"/sys/fs/cgroup"}
	if cgroupsv3.Mode() != cgroupsv3.Unified {
		entries, err := os.ReadDir("/sys/fs/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		roots = nil
		for _, e := range entries {
			if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
				roots = append(roots, filepath.Join("/sys/fs/cgroup", e.Name()))
			}
		}
	}
	for _, p := range paths {
		for _, r := range roots {
			d := filepath.Join(r, p)
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(d) })
		}
	}
}

// TestClaimCgroupSystemdScope: the create-time re-check under the cgroup
// lock judges the scope's group under --systemd-cgroup, as the rule does,
// so a scope made between check and create is refused rather than joined
// by runc's systemd driver.
func TestClaimCgroupSystemdScope(t *testing.T) {
	slice := fmt.Sprintf("bhclaim%d.slice", os.Getpid())
	makeGroups(t, "/"+slice, "/"+slice+"/victim-x.scope")
	claim := func(cgroupsPath string) error {
		p := specs.DefaultProfile()
		c := &creation{g: &Globals{SystemdCgroup: true}, sel: &Selection{Profile: p},
			handed: &rspec.Spec{Linux: &rspec.Linux{CgroupsPath: cgroupsPath}},
			ctx: &specs.Context{Profile: &p, SystemdCgroup: true, CgroupTaken: cgroups.Taken,
				CgroupPopulated: func(path string) (bool, error) { return cgroups.Populated(path) }}}
		release, err := c.claimCgroup()
		if err == nil {
			release()
		}
		return err
	}
	err := claim(slice + ":victim:x")
	want := "(the systemd scope /" + slice + "/victim-x.scope): another container's create made it meanwhile"
	if err == nil || !strings.Contains(err.Error(), "rule cgroups_path refuses linux.cgroupsPath "+slice+":victim:x "+want) {
		t.Fatalf("claim of an existing scope: %v, want refused with %q", err, want)
	}
	if err := claim(slice + ":victim:y"); err != nil {
		t.Fatalf("claim of a new scope: %v", err)
	}
	if err := claim(slice + ":victim:z.slice"); err == nil || !strings.Contains(err.Error(), "ends in .slice") {
		t.Fatalf("claim of a slice name: %v", err)
	}
}
