package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// No mount of the caller's lands in /.bulkhead, where a gVisor sandbox's
// execs start through bulkhead's seccomp-exec: an image whose /workspace
// linked there had runsc mount the checkout over the directory and bind
// the program at the checkout's own link, into the job's /tmp, where the
// job put a program of its own that ran every exec with no filter. A
// link leads the mount there as a name does; both backends refuse it,
// and nothing is left.
func TestMountsKeptOutOfOwnDir(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		checkout := t.TempDir()
		if err := os.Symlink("/tmp/d/seccomp-exec", filepath.Join(checkout, "seccomp-exec")); err != nil {
			t.Fatal(err)
		}
		// A checkout as a developer's clone is, owned by a workspace owner.
		for _, p := range []string{checkout, filepath.Join(checkout, "seccomp-exec")} {
			if err := os.Lchown(p, 1000, 1000); err != nil {
				t.Fatal(err)
			}
		}
		for _, dst := range []string{"/workspace", "/.bulkhead/seccomp-exec"} {
			b := bundle.New(t, []string{"sleep", "60"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: dst, Type: "bind", Source: checkout, Options: []string{"rbind", "ro"}})
			})
			if err := os.Symlink("/.bulkhead", filepath.Join(b, "rootfs", "workspace")); err != nil {
				t.Fatal(err)
			}
			id := uniqueID("own-dir-" + backend)
			r := bulkhead(t, "", append(g, "create", "--bundle", b, id)...)
			if r.code == 0 {
				bulkhead(t, "", append(g, "delete", "--force", id)...)
				t.Fatalf("a bind at %s, which leads into /.bulkhead, was handed to %s", dst, backend)
			}
			if !strings.Contains(r.stderr, "mounts["+dst+"]") || !strings.Contains(r.stderr, "bulkhead's own directory") {
				t.Fatalf("a bind at %s: refused, but not for landing in /.bulkhead:\n%s", dst, r.stderr)
			}
			assertGone(t, root, backend, id)
		}
	})
}
