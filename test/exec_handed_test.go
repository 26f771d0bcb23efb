package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestExecJudgesTheHandedRoot: exec resolves its cwd in the root that was
// handed over, not in whatever root the caller's config.json names now.
// The caller's config.json is never rewritten, so after create it may
// point root.path at a decoy whose /w is a plain directory, while the
// container's own /w leads into /proc (CVE-2024-21626's path). exec read
// the caller's file and let `exec --cwd /w` through into /proc.
func TestExecJudgesTheHandedRoot(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "")
			b := bundle.New(t, []string{"sleep", "60"})
			if err := os.Symlink("/proc/self", filepath.Join(b, "rootfs", "w")); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(b, "decoy", "w"), 0o755); err != nil {
				t.Fatal(err)
			}
			g := []string{"--root", root, "--config", cfg, "--backend", backend}
			id := uniqueID("exec-handed-" + backend)
			must(t, append(g, "create", "--bundle", b, id)...)
			defer bulkhead(t, "", append(g, "delete", "--force", id)...)
			must(t, append(g, "start", id)...)

			exec := func() result {
				return bulkhead(t, "", append(g, "exec", "--cwd", "/w", id, "true")...)
			}
			if r := exec(); r.code == 0 || !strings.Contains(r.stderr, "under /proc") {
				t.Fatalf("exec --cwd /w into /proc: exit %d, stderr %q; want the cwd refused", r.code, r.stderr)
			}

			data, err := os.ReadFile(filepath.Join(b, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			var s rspec.Spec
			if err := json.Unmarshal(data, &s); err != nil {
				t.Fatal(err)
			}
			s.Root.Path = "decoy"
			if err := bundle.Write(b, &s); err != nil {
				t.Fatal(err)
			}
			if r := exec(); r.code == 0 || !strings.Contains(r.stderr, "under /proc") {
				t.Fatalf("exec --cwd /w after the caller's config.json named a decoy root: exit %d, stderr %q; want the cwd refused", r.code, r.stderr)
			}
		})
	}
}
