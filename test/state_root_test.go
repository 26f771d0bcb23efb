package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestOtherContainersStateRefused: a --root below bind_roots (these
// tests keep theirs in /tmp) holds other containers' records, pins,
// handed specs and workspace layers. Binding any of it, or the root, is
// refused on both backends, as it is below /run.
func TestOtherContainersStateRefused(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		other := uniqueID("other-" + backend)
		must(t, append(g, "create", "--bundle", workspaceBundle(t, workspaceSource(t), "true"), other)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", other)...) })
		for _, src := range []string{
			root,
			filepath.Join(root, "bulkhead", other),
			filepath.Join(root, "bulkhead", other, "ws", "0", "upper"),
		} {
			id := uniqueID("peek-" + backend)
			b := bundle.New(t, []string{"true"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/peek", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
			})
			r := bulkhead(t, "", append(g, "run", "--bundle", b, id)...)
			if r.code == 0 || !strings.Contains(r.stderr, "rule host_mounts") || !strings.Contains(r.stderr, "engine") {
				t.Errorf("%s bound: exit %d\n%s", src, r.code, r.stderr)
			}
		}
	})
}

// TestStateRootOthersMayChangeIsRefused: a --root in a directory another
// user owns, or a sticky one, lets another user put records and runc state
// there for root's verbs to act on (delete --force killed the host process
// a forged record or a forged runc state named and removed its cgroup).
// Every verb refuses such a root, naming the directory, before it reads or
// makes anything there.
func TestStateRootOthersMayChangeIsRefused(t *testing.T) {
	needRoot(t, "runc")
	owned := filepath.Join(t.TempDir(), "owned")
	if err := os.Mkdir(owned, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(owned, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(t.TempDir(), "sticky")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	b := bundle.New(t, []string{"true"})
	for _, c := range []struct{ root, dir, want string }{
		{filepath.Join(owned, "state"), owned, owned + " (uid 1000, mode 0755) can be changed by others than root"},
		{sticky, sticky, sticky + " (uid 0, mode 1777) can be changed by others than root"},
	} {
		id := uniqueID("state-root")
		t.Cleanup(func() { bulkhead(t, "", "--root", c.root, "delete", "--force", id) })
		for _, args := range [][]string{
			{"run", "--bundle", b, id},
			{"create", "--bundle", b, id},
			{"delete", "--force", id},
			{"kill", id, "KILL"},
			{"state", id},
			{"list"},
		} {
			r := bulkhead(t, "", append([]string{"--root", c.root}, args...)...)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("%s with --root %s: exit %d, want a refusal naming %s\nstdout: %s\nstderr: %s", args[0], c.root, r.code, c.dir, r.stdout, r.stderr)
			}
		}
		if entries, _ := os.ReadDir(c.dir); len(entries) != 0 {
			t.Errorf("bulkhead made %v in %s", entries, c.dir)
		}
	}
}
