package docker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/checkout"
	"bulkhead.dev/bulkhead/test/engine"
)

const gitImage = "bulkhead-git"

// TestWorkspaceCheckout: `docker run --rm -v SRC:/workspace` on a git
// checkout owned by uid 1000 and on one owned by root (with workspace_owners
// naming root), on runc and gVisor:
// the job edits it as a formatter would and git status shows the edits
// inside; after Docker removed the container, the kept patch applies with
// git apply and reproduces the container's view; SRC is unchanged.
func TestWorkspaceCheckout(t *testing.T) {
	checkout.NeedGit(t)
	d := daemon(t)
	rootfs := t.TempDir()
	if err := bundle.Rootfs(rootfs); err != nil {
		t.Fatal(err)
	}
	if err := checkout.AddGit(rootfs); err != nil {
		t.Fatal(err)
	}
	if err := d.Import(rootfs, gitImage); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"runc", "runsc"} {
		for _, own := range []struct {
			name       string
			uid, other int
		}{{"uid1000", 1000, 0}, {"root", 0, 1000}} {
			t.Run(backend+"/"+own.name, func(t *testing.T) {
				binaries.NeedRoot(t, backend)
				dir := t.TempDir()
				config := filepath.Join(dir, "config.toml")
				body := fmt.Sprintf("changes_dir = %q\naudit_log = %q\n%s", filepath.Join(dir, "changes"), filepath.Join(dir, "audit.jsonl"), checkout.OwnersConfig(own.uid))
				if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(config, 0o644); err != nil {
					t.Fatal(err)
				}
				registerRuntime(t, d, "bulkhead-co", "--config", config, "--backend", backend)

				src := checkout.Make(t, own.uid, own.other)
				before := checkout.Snapshot(t, src)
				cidfile := filepath.Join(t.TempDir(), "cid")
				r := d.Run(t, "run", "--rm", "--cidfile", cidfile, "--runtime=bulkhead-co", "-v", src+":/workspace", gitImage, "sh", "-c", checkout.Job)
				t.Logf("inside:\n%s", r.Stdout)
				if r.Code != 0 {
					t.Fatalf("the job failed\n%s\ndockerd log:\n%s", r, d.LogTail(10))
				}
				checkout.Check(t, r.Stdout)
				cid, err := os.ReadFile(cidfile)
				if err != nil {
					t.Fatal(err)
				}
				id := strings.TrimSpace(string(cid))

				g := []string{"--config", config, "--root", d.RuntimeRoot()}
				var patch string
				if !engine.Eventually(10*time.Second, func() bool {
					out, err := exec.Command(binaries.Bulkhead(t), append(g, "changes", "export", id)...).Output()
					patch = string(out)
					return err == nil && patch != ""
				}) {
					out, _ := exec.Command(binaries.Bulkhead(t), append(g, "changes", "export", id)...).CombinedOutput()
					t.Fatalf("no kept changes for %s:\n%s\ndockerd log:\n%s", id, out, d.LogTail(20))
				}
				checkout.CheckPatch(t, src, patch, r.Stdout)
				if after := checkout.Snapshot(t, src); after != before {
					t.Fatalf("the host checkout changed (contents, modes or owners)")
				}
				if m := leftMounts(t, d.RuntimeRoot(), id, src); len(m) > 0 {
					t.Fatalf("mounts left after docker run --rm:\n%s", strings.Join(m, "\n"))
				}
			})
		}
	}
}
