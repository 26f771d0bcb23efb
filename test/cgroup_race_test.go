package test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestConcurrentCreatesOneCgroup: two creates naming the same new
// cgroupsPath at once both passed the check that it was new, and the
// second container joined the first one's group (its limits and its kill
// --all); in each of three rounds here both succeeded. At most one may;
// and of two naming a new group and one inside it (which would put the
// second container under the first one's limits), one too.
func TestConcurrentCreatesOneCgroup(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	path := fmt.Sprintf("/bh-race-%d", os.Getpid())
	same := bundle.New(t, []string{"sleep", "60"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = path })
	inner := bundle.New(t, []string{"sleep", "60"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = path + "/inner" })
	g := []string{"--root", root, "--backend", "runc"}
	for round := 0; round < 6; round++ {
		bundles := []string{same, same}
		if round%2 == 1 {
			bundles = []string{same, inner}
		}
		ids := []string{uniqueID(fmt.Sprintf("race%da", round)), uniqueID(fmt.Sprintf("race%db", round))}
		results := make([]result, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = bulkhead(t, "", append(g, "create", "--bundle", bundles[i], id)...)
			}()
		}
		wg.Wait()
		created := 0
		for i, r := range results {
			if r.code == 0 {
				created++
			} else if !strings.Contains(r.stderr, "cgroups_path") {
				t.Errorf("round %d: %s failed for another reason: %s", round, ids[i], r.stderr)
			}
		}
		for _, id := range ids {
			bulkhead(t, "", append(g, "delete", "--force", id)...)
		}
		if created != 1 {
			t.Fatalf("round %d: %d of two creates naming %s and %s succeeded, want exactly one", round, created, path, map[bool]string{true: path + "/inner", false: path}[round%2 == 1])
		}
		if cgroups.Exists(path + "/inner") {
			t.Fatalf("round %d: cgroup %s/inner left behind", round, path)
		}
		// The container of path/inner, when it won, had runc make the
		// group above it, which runc leaves, as it does for itself.
		if round%2 == 1 && results[1].code == 0 {
			if err := cgroups.Remove(path); err != nil {
				t.Fatalf("round %d: removing the group runc left above %s/inner: %v", round, path, err)
			}
		}
		if cgroups.Exists(path) {
			t.Fatalf("round %d: cgroup %s left behind", round, path)
		}
	}
}
