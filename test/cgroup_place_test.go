package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestContainerInTheJudgedCgroup: the policy judges and claims the cgroup
// it reads cgroupsPath as, and create's verification reads the limits of
// the group the process is in. runsc on a cgroup v1 host took a systemd
// slice:prefix:name for a path below its caller's own groups: two
// containers naming one scope shared a group the rule never judged, with
// the memory charged to the caller, and verification passed. The process
// must be in the judged group, or nothing runs and nothing is left.
func TestContainerInTheJudgedCgroup(t *testing.T) {
	needRoot(t, "runsc")
	root := stateRoot(t)
	slice := fmt.Sprintf("bhplace%d.slice", os.Getpid())
	path := slice + ":bh:one"
	g := []string{"--root", root, "--backend", "runsc", "--systemd-cgroup"}
	b := bundle.New(t, []string{"sleep", "60"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = path })
	for i := 0; i < 2; i++ {
		id := uniqueID(fmt.Sprintf("place%d", i))
		r := bulkhead(t, "", append(g, "create", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		want := "control cgroup: expected in /" + slice + "/bh-one.scope"
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Fatalf("create %d on runsc with --systemd-cgroup %s: exit %d, want refused with %q\nstderr: %s", i, path, r.code, want, r.stderr)
		}
		if out := must(t, "--root", root, "list", "-q"); strings.TrimSpace(out) != "" {
			t.Fatalf("create %d left containers: %q", i, out)
		}
	}
	left, _ := filepath.Glob("/sys/fs/cgroup/*/" + slice + "*")
	deeper, _ := filepath.Glob("/sys/fs/cgroup/*/*/*/" + slice + "*")
	if left = append(left, deeper...); len(left) > 0 {
		t.Fatalf("cgroups left behind: %v", left)
	}
}
