package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rootOwnedTree is a directory of root's, as /opt, /srv or a volume holds
// them: 0755 at the top, a 0700 directory holding a 0600 file below.
func rootOwnedTree(t *testing.T, uid, gid int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "rootowned")
	if err := os.MkdirAll(filepath.Join(src, "private"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "private"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "private", "key"), []byte("root-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{src, filepath.Join(src, "private"), filepath.Join(src, "private", "key")} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// TestWorkspaceOwnerRefused: the id map gives the sandbox the source
// owner's rights over the whole tree, and the caller names the source
// anywhere below bind_roots. A tree of root's (or of root's group), which
// a plain read-only bind shows the sandbox only by its "other" bits, is
// refused as a workspace unless workspace_owners names its owner, and the
// refusal leaves nothing behind; named there, it is the sandbox's.
func TestWorkspaceOwnerRefused(t *testing.T) {
	for _, backend := range backends {
		for _, own := range []struct {
			name     string
			uid, gid int
			says     string
		}{{"root", 0, 0, "owned by uid 0"}, {"rootgroup", 1000, 0, "owned by gid 0"}} {
			t.Run(backend+"/"+own.name, func(t *testing.T) {
				needRoot(t, backend)
				root := stateRoot(t)
				src := rootOwnedTree(t, own.uid, own.gid)
				script := "cat /workspace/private/key"

				cfg, _ := workspaceConfig(t, "")
				id := uniqueID("wsowner-" + backend)
				g := []string{"--config", cfg, "--root", root, "--backend", backend}
				r := bulkhead(t, "", append(g, "run", "--bundle", workspaceBundle(t, src, script), id)...)
				if r.code == 0 || strings.Contains(r.stdout, "root-only") {
					t.Fatalf("a workspace of %s was handed over: exit %d, stdout %q", own.name, r.code, r.stdout)
				}
				t.Logf("refused: %s", r.stderr)
				for _, want := range []string{own.says, "workspace_owners", src, "refuses mounts[/workspace]", "(rule workspace: "} {
					if !strings.Contains(r.stderr, want) {
						t.Errorf("the refusal does not say %q", want)
					}
				}
				if m := mountsUnder(t, root); len(m) > 0 {
					t.Fatalf("mounts left after the refusal:\n%s", strings.Join(m, "\n"))
				}
				if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); !os.IsNotExist(err) {
					t.Fatalf("state directory left after the refusal (%v)", err)
				}

				cfg, _ = workspaceConfig(t, "[profiles.default]\nworkspace_owners = [\"0\", \"1000-60000\"]\n")
				id = uniqueID("wsowner-" + backend)
				g = []string{"--config", cfg, "--root", root, "--backend", backend}
				out := must(t, append(g, "run", "--bundle", workspaceBundle(t, src, script), id)...)
				if !strings.Contains(out, "root-only") {
					t.Fatalf("with workspace_owners naming 0 the workspace is not the sandbox's: %q", out)
				}
			})
		}
	}
}

// TestWorkspacePrivateSourceRefused: a directory of an ordinary user that
// the user keeps from others (a 0700 ~/.mozilla) shows the sandbox
// nothing through a read-only bind; as a workspace the id map would open
// it whole, so it is refused, and nothing is left behind.
func TestWorkspacePrivateSourceRefused(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			src := rootOwnedTree(t, 1000, 1000)
			if err := os.Chmod(src, 0o700); err != nil {
				t.Fatal(err)
			}
			cfg, _ := workspaceConfig(t, "")
			id := uniqueID("wsprivate-" + backend)
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			r := bulkhead(t, "", append(g, "run", "--bundle", workspaceBundle(t, src, "cat /workspace/private/key"), id)...)
			if r.code == 0 || strings.Contains(r.stdout, "root-only") {
				t.Fatalf("a 0700 source of uid 1000 was handed over: exit %d, stdout %q", r.code, r.stdout)
			}
			t.Logf("refused: %s", r.stderr)
			for _, want := range []string{"mode 0700", "keeps it from others", src, "refuses mounts[/workspace]", "(rule workspace: "} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("the refusal does not say %q", want)
				}
			}
			if m := mountsUnder(t, root); len(m) > 0 {
				t.Fatalf("mounts left after the refusal:\n%s", strings.Join(m, "\n"))
			}
			if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); !os.IsNotExist(err) {
				t.Fatalf("state directory left after the refusal (%v)", err)
			}
		})
	}
}
