package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestContainerInTheJudgedCgroup: the policy judges and claims the cgroup
// it reads cgroupsPath as, and create's verification reads the limits of
// the group the process is in. runsc on a cgroup v1 host took a systemd
// slice:prefix:name for a path below its caller's own groups: two
// containers naming one scope shared a group the rule never judged, with
// the memory charged to the caller, and verification passed; once
// verification failed them, the nine groups runsc made stayed. The
// systemd driver is refused for runsc there before runsc runs, with the
// caller's path and with bulkhead's own, and nothing is left.
func TestContainerInTheJudgedCgroup(t *testing.T) {
	needRoot(t, "runsc")
	if v2, err := cgroups.V2(); err != nil || v2 {
		t.Skipf("runsc takes a systemd path as a literal group on cgroup v1 hosts only; this host: v2 %v (%v)", v2, err)
	}
	root := stateRoot(t)
	slice := fmt.Sprintf("bhplace%d.slice", os.Getpid())
	g := []string{"--root", root, "--backend", "runsc", "--systemd-cgroup"}
	for i, path := range []string{slice + ":bh:one", slice + ":bh:one", ""} {
		b := bundle.New(t, []string{"sleep", "60"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = path })
		id := uniqueID(fmt.Sprintf("place%d", i))
		r := bulkhead(t, "", append(g, "create", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		want := "rule cgroups_path refuses --systemd-cgroup on a gVisor backend"
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Fatalf("create %d on runsc with --systemd-cgroup %q: exit %d, want refused with %q\nstderr: %s", i, path, r.code, want, r.stderr)
		}
		if out := must(t, "--root", root, "list", "-q"); strings.TrimSpace(out) != "" {
			t.Fatalf("create %d left containers: %q", i, out)
		}
		var left []string
		for _, name := range []string{slice + "*", "*" + id + "*"} {
			for _, depth := range []string{"*", "*/*/*"} {
				found, _ := filepath.Glob("/sys/fs/cgroup/" + depth + "/" + name)
				left = append(left, found...)
			}
		}
		if len(left) > 0 {
			t.Fatalf("cgroups left behind: %v", left)
		}
	}
}
