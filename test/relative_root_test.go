package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// A --root given relative to the caller's directory is taken as runc
// takes it, from that directory: the container runs, and delete takes
// down the pins of its root file system and binds before it removes the
// state, so nothing the binds show of the host is removed through them.
func TestRelativeRoot(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			base := t.TempDir()
			host := filepath.Join(base, "hostdata")
			precious := filepath.Join(host, "precious.txt")
			if err := os.MkdirAll(host, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(precious, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(base, "config.toml")
			body := fmt.Sprintf("audit_log = %q\n[profiles.default]\nbind_roots = [%q]\n", filepath.Join(base, "audit.jsonl"), host)
			if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			b := bundle.New(t, []string{"cat", "/data/precious.txt"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: host, Options: []string{"rbind", "ro"}})
			})
			id := uniqueID("relroot-" + backend)
			g := []string{"--config", cfg, "--root", "relstate", "--backend", backend}
			run := func(args ...string) binaries.Result {
				return binaries.Cmd{Dir: base}.Run(t, binaries.Bulkhead(t), append(g, args...)...)
			}
			t.Cleanup(func() { run("delete", "--force", id) })
			r := run("run", "--bundle", b, id)
			if r.Code != 0 || !strings.Contains(r.Stdout, "keep") {
				t.Errorf("run with a relative --root: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
			}
			if _, err := os.Stat(precious); err != nil {
				t.Fatalf("the bound host file is gone: %v", err)
			}
			if _, err := os.Stat(filepath.Join(b, "rootfs", "bin", "busybox")); err != nil {
				t.Fatalf("the bundle's root file system was emptied: %v", err)
			}
			if m := mountsUnder(t, base); len(m) > 0 {
				t.Fatalf("mounts left:\n%s", strings.Join(m, "\n"))
			}
			if _, err := os.Stat(filepath.Join(base, "relstate", "bulkhead", id)); !os.IsNotExist(err) {
				t.Fatalf("state left (%v)", err)
			}
		})
	}
}
