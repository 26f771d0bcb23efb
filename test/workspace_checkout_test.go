package test

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/checkout"
)

// TestWorkspaceCheckout: a git checkout owned by an ordinary user and one
// owned by root are the sandbox user's inside, on runc and gVisor: it
// edits, creates, renames and deletes, git status shows it, the host tree
// (owners and modes included) stays as it was, and the kept patch applies
// with git apply to reproduce the container's view.
func TestWorkspaceCheckout(t *testing.T) {
	for _, backend := range backends {
		for _, own := range []struct {
			name       string
			uid, other int
		}{{"uid1000", 1000, 0}, {"root", 0, 1000}} {
			t.Run(backend+"/"+own.name, func(t *testing.T) {
				needRoot(t, backend)
				checkout.NeedGit(t)
				root := stateRoot(t)
				cfg, _ := workspaceConfig(t, checkout.OwnersConfig(own.uid))
				src := checkout.Make(t, own.uid, own.other)
				before := checkout.Snapshot(t, src)
				id := uniqueID("co-" + backend)
				g := []string{"--config", cfg, "--root", root, "--backend", backend}
				b := bundle.New(t, []string{"sh", "-c", checkout.Job}, func(s *rspec.Spec) {
					s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: src, Options: []string{"rbind", "rw"}})
				})
				if err := checkout.AddGit(filepath.Join(b, "rootfs")); err != nil {
					t.Fatal(err)
				}

				out := must(t, append(g, "run", "--bundle", b, id)...)
				t.Logf("inside:\n%s", out)
				checkout.Check(t, out)

				if after := checkout.Snapshot(t, src); after != before {
					t.Fatalf("host checkout changed (contents, modes or owners)")
				}
				patch := must(t, append(g, "changes", "export", id)...)
				t.Logf("patch:\n%s", patch)
				checkout.CheckPatch(t, src, patch, out)
			})
		}
	}
}

// TestWorkspaceNoIDMapRefused: a source whose filesystem cannot be
// id-mapped (ramfs, as any filesystem on a kernel without id-mapped
// mounts) and that the sandbox user does not own is refused with the
// reason, and nothing is left behind; never a workspace the job cannot
// write.
func TestWorkspaceNoIDMapRefused(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "")
			src := filepath.Join(t.TempDir(), "ramfs")
			if err := os.Mkdir(src, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("bulkhead-test", src, "ramfs", 0, "mode=0755"); err != nil {
				t.Skipf("no ramfs to stand for a filesystem without id-mapped mounts: %v", err)
			}
			t.Cleanup(func() { _ = syscall.Unmount(src, 0) })
			if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(src, 1000, 1000); err != nil {
				t.Fatal(err)
			}
			id := uniqueID("wsnoidmap-" + backend)
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			r := bulkhead(t, "", append(g, "create", "--bundle", workspaceBundle(t, src, "true"), id)...)
			if r.code == 0 {
				bulkhead(t, "", append(g, "delete", "--force", id)...)
				t.Fatalf("a workspace on ramfs owned by 1000 was created")
			}
			t.Logf("refused: %s", r.stderr)
			for _, want := range []string{"source owned by 1000:1000, sandbox user 65534:65534", "needs id-mapped mounts", "Linux 5.12+"} {
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

// TestWorkspaceCheckoutBinary: a binary file the job writes into a
// user's checkout is named by the patch export, which cannot carry it,
// and is in the tar export byte for byte.
func TestWorkspaceCheckoutBinary(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			checkout.NeedGit(t)
			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "")
			src := checkout.Make(t, 1000, 0)
			id := uniqueID("cobin-" + backend)
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			want := "\x89PNG\r\n\x1a\n\x00\x01\x02binary"
			must(t, append(g, "run", "--bundle", workspaceBundle(t, src, `printf '\211PNG\r\n\032\n\000\001\002binary' > /workspace/logo.png`), id)...)
			r := bulkhead(t, "", append(g, "changes", "export", id)...)
			if r.code != 0 || strings.Contains(r.stdout, "logo.png") || !strings.Contains(r.stderr, "logo.png: binary file") {
				t.Fatalf("patch export: exit %d, stdout %q, stderr %q; want logo.png left out and named", r.code, r.stdout, r.stderr)
			}
			r = bulkhead(t, "", append(g, "changes", "export", "--format", "tar", id)...)
			if r.code != 0 {
				t.Fatalf("tar export: exit %d %s", r.code, r.stderr)
			}
			tr := tar.NewReader(strings.NewReader(r.stdout))
			for {
				hdr, err := tr.Next()
				if err != nil {
					t.Fatalf("tar export lacks logo.png (%v)", err)
				}
				if strings.TrimPrefix(hdr.Name, "./") != "logo.png" {
					continue
				}
				data, err := io.ReadAll(tr)
				if err != nil || string(data) != want || hdr.Mode&0o777 != 0o644 {
					t.Fatalf("logo.png in the tar: %q mode %o (%v), want %q mode 644", data, hdr.Mode, err, want)
				}
				return
			}
		})
	}
}
