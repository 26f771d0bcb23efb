package test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTwoJobsOneCheckout: while one container has a checkout as its
// workspace (created, not yet started, as an engine leaves it), other
// containers on the same checkout, a directory of it and the directory
// holding it run too, under any --root: parallel tool calls and a CI
// matrix share one checkout. bulkhead's own mounts of the first job's
// source (its pin, the id-mapped lower layer) are not other places the
// files are at. Each job writes only its own layer. The state roots are
// below /run, as engines' are: below a bind root, such a mount would pass
// as a place of bind_roots.
func TestTwoJobsOneCheckout(t *testing.T) {
	for _, backend := range backends {
		for _, owner := range []struct {
			name string
			uid  int
		}{{"sandbox", 65534}, {"idmapped", 1000}} {
			t.Run(backend+"/"+owner.name, func(t *testing.T) {
				needRoot(t, backend)
				src := workspaceSource(t)
				if err := filepath.Walk(filepath.Dir(src), func(p string, _ os.FileInfo, err error) error {
					if err != nil {
						return err
					}
					return os.Lchown(p, owner.uid, owner.uid)
				}); err != nil {
					t.Fatal(err)
				}
				before := treeHash(t, src)
				cfg, _ := workspaceConfig(t, "[profiles.default]\nworkspace_owners = [\"1000\"]\n")
				first := uniqueID("shared-" + backend)
				g1 := []string{"--config", cfg, "--root", runRoot(t), "--backend", backend}
				must(t, append(g1, "create", "--bundle", workspaceBundle(t, src, "echo one > /workspace/new.txt"), first)...)
				t.Cleanup(func() { bulkhead(t, "", append(g1, "delete", "--force", first)...) })

				for _, other := range []struct{ name, root, src string }{
					{"the same root", g1[3], src},
					{"another root", runRoot(t), src},
					{"a directory of it", runRoot(t), filepath.Join(src, "sub")},
					{"the directory holding it", runRoot(t), filepath.Dir(src)},
				} {
					id := uniqueID("shared2-" + backend)
					g := []string{"--config", cfg, "--root", other.root, "--backend", backend}
					r := bulkhead(t, "", append(g, "run", "--bundle", workspaceBundle(t, other.src, "ls /workspace && echo two > /workspace/new.txt"), id)...)
					if r.code != 0 {
						t.Errorf("%s (%s) while another container has the checkout: exit %d\n%s", other.name, other.src, r.code, r.stderr)
						continue
					}
					bulkhead(t, "", append(g, "delete", "--force", id)...)
				}
				must(t, append(g1, "start", first)...)
				waitStatus(t, g1, first, "stopped")
				if after := treeHash(t, src); after != before {
					t.Errorf("the host checkout changed: %s → %s", before, after)
				}
			})
		}
	}
}

// runRoot makes a fresh --root below /run, outside every bind root, and
// removes it afterwards.
func runRoot(t *testing.T) string {
	t.Helper()
	root, err := os.MkdirTemp("/run", "bh-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	return root
}
