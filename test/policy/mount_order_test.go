package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestDeeperCallerMountNotHidden: a host directory bound below /tmp (a
// pod's hostPath volume at /tmp/<name>) stays visible in the container,
// though the policy adds its own /tmp tmpfs; runc mounts in the order of
// the spec, and the tmpfs used to come last and hide the bind.
func TestDeeperCallerMountNotHidden(t *testing.T) {
	needRunc(t)
	host := t.TempDir()
	// The sandbox user is not root: the directory and file must be
	// readable for it, as the default profile's identity rule intends.
	if err := os.Chmod(host, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "marker"), []byte("from-the-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := bundle.New(t, []string{"/bin/cat", "/tmp/foo/marker"}, func(s *rspec.Spec) {
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/tmp/foo", Type: "bind", Source: host, Options: []string{"rbind", "ro"}})
	})
	root := t.TempDir()
	id := "mount-order-" + filepath.Base(root)
	t.Cleanup(func() { bulkhead(t, "", nil, "--root", root, "delete", "--force", id) })
	r := bulkhead(t, "", nil, "--root", root, "run", "--bundle", b, id)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "from-the-host" {
		t.Fatalf("run: exit %d, stdout %q, want the host's marker\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}
