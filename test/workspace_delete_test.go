package test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/engine"
)

// symlinkedRoot is a --root reached through a symlink, the way dockerd
// hands over /var/run/docker/runtime-runc/moby while /var/run -> /run:
// the kernel's mount table shows only the resolved path.
func symlinkedRoot(t *testing.T) (given, real string) {
	t.Helper()
	dir := t.TempDir()
	real = filepath.Join(dir, "run", "root")
	if err := os.MkdirAll(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "var"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../run", filepath.Join(dir, "var", "run")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "var", "run", "root"), real
}

type deleteAudit struct{ Event, ID, Outcome, Error string }

// deleteAudits lists the audit log's delete lines for id, in order.
func deleteAudits(t *testing.T, cfg, id string) []deleteAudit {
	t.Helper()
	f, err := os.Open(filepath.Join(filepath.Dir(cfg), "audit.jsonl"))
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	var out []deleteAudit
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for s.Scan() {
		var e deleteAudit
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			t.Fatalf("audit line %.200q: %v", s.Text(), err)
		}
		if e.Event == "delete" && e.ID == id {
			out = append(out, e)
		}
	}
	return out
}

// TestWorkspaceDeleteSymlinkedRoot: under a --root reached through a
// symlink, delete of a container with a workspace, and a create the
// backend fails (or delete --force of one it created), leave no mount,
// state directory or process, and the delete's audit line says deleted
// with no error.
func TestWorkspaceDeleteSymlinkedRoot(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root, real := symlinkedRoot(t)
			cfg, _ := workspaceConfig(t, "")
			src := workspaceSource(t)
			g := []string{"--config", cfg, "--root", root, "--backend", backend}

			id := uniqueID("wsl-" + backend)
			runToEnd(t, g, workspaceBundle(t, src, "echo y > /workspace/x"), id)
			must(t, append(g, "delete", id)...)
			engine.AssertNothingLeft(t, id, root)
			if m := mountsUnder(t, real); len(m) > 0 {
				t.Errorf("mounts left after delete:\n%s", strings.Join(m, "\n"))
			}
			if a := deleteAudits(t, cfg, id); len(a) != 1 || a[0].Outcome != "deleted" || a[0].Error != "" {
				t.Errorf("audit of delete: %+v, want one line deleted with no error", a)
			}

			failed := uniqueID("wslf-" + backend)
			b := bundle.New(t, []string{"/no/such/program"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: src, Options: []string{"rbind"}})
			})
			r := bulkhead(t, "", append(g, "create", "--bundle", b, failed)...)
			if r.code == 0 {
				// runsc looks for the program only at start: then delete
				// --force of the created container must leave nothing.
				must(t, append(g, "delete", "--force", failed)...)
			} else if strings.Contains(r.stderr, "cleanup:") {
				t.Errorf("the failed create could not clean up: %s", r.stderr)
			}
			engine.AssertNothingLeft(t, failed, root)
			if m := mountsUnder(t, real); len(m) > 0 {
				t.Errorf("mounts left after a failed create:\n%s", strings.Join(m, "\n"))
			}
		})
	}
}

// TestWorkspaceDeleteBusy: while a host process holds a file open in a
// container's workspace, delete cannot unmount it. It must fail (exit
// non-zero, naming the mount), detach nothing lazily (the overlay stays
// visible in the mount table) and say so in the audit line; once the file
// is closed, delete again removes everything.
func TestWorkspaceDeleteBusy(t *testing.T) {
	needRoot(t, "runc")
	root, real := symlinkedRoot(t)
	cfg, _ := workspaceConfig(t, "")
	src := workspaceSource(t)
	g := []string{"--config", cfg, "--root", root, "--backend", "runc"}
	id := uniqueID("wsbusy")
	runToEnd(t, g, workspaceBundle(t, src, "echo y > /workspace/x"), id)

	merged := filepath.Join(real, "bulkhead", id, "ws", "0", "merged")
	f, err := os.Open(filepath.Join(merged, "x"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bulkhead(t, "", append(g, "delete", id)...)
	if r.code == 0 {
		t.Fatalf("delete succeeded while %s was open", f.Name())
	}
	if !strings.Contains(r.stderr, "unmount "+merged) || !strings.Contains(r.stderr, "busy") {
		t.Errorf("delete's error does not name the busy mount %s:\n%s", merged, r.stderr)
	}
	if m := mountsUnder(t, merged); len(m) != 1 {
		t.Errorf("the busy overlay is not in the mount table as it is (lazily detached?):\n%s", strings.Join(m, "\n"))
	}
	a := deleteAudits(t, cfg, id)
	if len(a) != 1 || a[0].Outcome != "delete failed" || !strings.Contains(a[0].Error, merged) {
		t.Errorf("audit of the failed delete: %+v, want one line 'delete failed' naming %s", a, merged)
	}

	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	must(t, append(g, "delete", id)...)
	engine.AssertNothingLeft(t, id, root)
	if m := mountsUnder(t, real); len(m) > 0 {
		t.Errorf("mounts left after the second delete:\n%s", strings.Join(m, "\n"))
	}
	if a := deleteAudits(t, cfg, id); len(a) != 2 || a[1].Outcome != "deleted" || a[1].Error != "" {
		t.Errorf("audit of the second delete: %+v, want deleted with no error", a)
	}
}
