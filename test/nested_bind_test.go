package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A bind nested in another bind needs its mount point in the outer
// bind's host directory. Where the directory lacks it, the backend would
// make it there as root: runc met the read-only bind and failed, but
// runsc's gofer made `sub` and `f2` in the host's directory, for good,
// and check said WOULD RUN. Such a mount is refused at create on both
// backends, naming it, and the host's directory is unchanged; where the
// mount point is there, the nested bind works.
func TestNestedBindLeavesHostSourceUnwritten(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		outer, inner := t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(outer, "f"), []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(inner, "o"), []byte("inner\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{outer, inner} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		nested := func(args ...string) string {
			return bundle.New(t, args, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts,
					rspec.Mount{Destination: "/data", Type: "bind", Source: outer, Options: []string{"rbind", "ro"}},
					rspec.Mount{Destination: "/data/sub", Type: "bind", Source: inner, Options: []string{"rbind", "ro"}},
					rspec.Mount{Destination: "/data/f2", Type: "bind", Source: filepath.Join(inner, "o"), Options: []string{"rbind", "ro"}})
			})
		}
		before := treeHash(t, outer)

		id := uniqueID("nested-" + backend)
		r := bulkhead(t, "", append(g, "run", "--bundle", nested("cat", "/data/f2"), id)...)
		if r.code == 0 {
			t.Errorf("a bind whose mount point the outer bind's host directory lacks ran on %s:\n%s", backend, r.stdout)
		} else if !strings.Contains(r.stderr, "mounts[/data/") || !strings.Contains(r.stderr, "is not in "+outer) {
			t.Errorf("refused, but not for the missing mount point:\n%s", r.stderr)
		}
		assertGone(t, root, backend, id)
		if after := treeHash(t, outer); after != before {
			t.Fatalf("the host directory bound read-only changed on %s: %v", backend, dirNames(t, outer))
		}

		if err := os.Mkdir(filepath.Join(outer, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outer, "f2"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		before = treeHash(t, outer)
		id = uniqueID("nested-there-" + backend)
		r = bulkhead(t, "", append(g, "run", "--bundle", nested("sh", "-c", "cat /data/f2 /data/sub/o"), id)...)
		if r.code != 0 || r.stdout != "inner\ninner\n" {
			t.Errorf("nested binds with their mount points in place: exit %d\nstdout: %q\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		assertGone(t, root, backend, id)
		if after := treeHash(t, outer); after != before {
			t.Errorf("the host directory bound read-only changed on %s: %v", backend, dirNames(t, outer))
		}
	})
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
