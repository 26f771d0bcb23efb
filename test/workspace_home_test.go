package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkspaceHomeRefused: the id map gives the sandbox the owner's
// rights over the whole workspace, so a tree holding credentials at its
// top, as a home does wherever it lives (/home/staff/alice,
// /srv/users/alice), is refused as a workspace: its 0600 keys would be
// the sandbox's. Without them the same tree is the job's to edit.
func TestWorkspaceHomeRefused(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			home := filepath.Join(t.TempDir(), "staff", "alice")
			key := filepath.Join(home, ".ssh", "id_ed25519")
			if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(key, []byte("alice-secret-key\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, "notes.txt"), []byte("notes\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{filepath.Dir(home), home, filepath.Dir(key), key, filepath.Join(home, "notes.txt")} {
				if err := os.Chown(p, 1000, 1000); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range []string{filepath.Dir(home), home} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "")
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			script := "cat /workspace/.ssh/id_ed25519; echo edited >> /workspace/notes.txt && echo wrote"
			id := uniqueID("wshome-" + backend)
			r := bulkhead(t, "", append(g, "run", "--bundle", workspaceBundle(t, home, script), id)...)
			if r.code == 0 || strings.Contains(r.stdout, "alice-secret-key") {
				t.Fatalf("a home's credentials were handed over: exit %d, stdout %q", r.code, r.stdout)
			}
			if !strings.Contains(r.stderr, ".ssh") {
				t.Errorf("the refusal does not name .ssh:\n%s", r.stderr)
			}
			if m := mountsUnder(t, root); len(m) > 0 {
				t.Fatalf("mounts left after the refusal:\n%s", strings.Join(m, "\n"))
			}

			if err := os.RemoveAll(filepath.Dir(key)); err != nil {
				t.Fatal(err)
			}
			out := must(t, append(g, "run", "--bundle", workspaceBundle(t, home, script), uniqueID("wshome-"+backend))...)
			if !strings.Contains(out, "wrote") {
				t.Fatalf("the tree without credentials is not the job's to edit: %q", out)
			}
		})
	}
}

// TestWorkspaceHiddenHomeDirRefused: below a home, a hidden directory
// (~/.local, with the owner's 0700 keyrings in it) is the owner's
// application state: the id map would hand the sandbox the keys a
// read-only bind keeps from it. It is refused as a workspace; a read-only
// bind of it elsewhere still shows only what others may read.
func TestWorkspaceHiddenHomeDirRefused(t *testing.T) {
	needRoot(t, "runc")
	home := filepath.Join("/home", uniqueID("bh-home"))
	t.Cleanup(func() { os.RemoveAll(home) })
	keyring := filepath.Join(home, ".local", "share", "keyrings", "login.keyring")
	if err := os.MkdirAll(filepath.Dir(keyring), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyring, []byte("KEYRING-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(keyring), 0o700); err != nil {
		t.Fatal(err)
	}
	err := filepath.Walk(home, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, 1000, 1000)
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := workspaceConfig(t, "")
	g := []string{"--config", cfg, "--root", stateRoot(t), "--backend", "runc"}
	script := "cat /workspace/share/keyrings/login.keyring"
	r := bulkhead(t, "", append(g, "run", "--bundle", workspaceBundle(t, filepath.Join(home, ".local"), script), uniqueID("wshidden"))...)
	if r.code == 0 || strings.Contains(r.stdout, "KEYRING-SECRET") {
		t.Fatalf("a home's hidden directory was id-mapped: exit %d, stdout %q", r.code, r.stdout)
	}
	if !strings.Contains(r.stderr, ".local") {
		t.Errorf("the refusal does not name .local:\n%s", r.stderr)
	}
}
