package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// An image whose /etc/passwd leads into /tmp let the job put a FIFO there:
// runc's init, which opens the file as root with every capability and no
// seccomp filter at each exec, blocked on it, every exec failed after two
// minutes, the inits stayed in the container, and the job released the
// caller's command later, unverified. runc's create refuses such an image,
// naming the file, and leaves nothing; runsc, which reads neither file,
// runs it.
func TestAccountFilesOnlyReadOnly(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		b := bundle.New(t, []string{"sleep", "60"})
		passwd := filepath.Join(b, "rootfs", "etc", "passwd")
		if err := os.MkdirAll(filepath.Dir(passwd), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Remove(passwd)
		if err := os.Symlink("/tmp/passwd", passwd); err != nil {
			t.Fatal(err)
		}
		id := uniqueID("passwd-" + backend)
		r := bulkhead(t, "", append(g, "create", "--bundle", b, id)...)
		if backend == "runsc" {
			if r.code != 0 {
				t.Fatalf("runsc, which reads no account file, refused the image: %s", r.stderr)
			}
			must(t, append(g, "delete", "--force", id)...)
			return
		}
		if r.code == 0 {
			bulkhead(t, "", append(g, "delete", "--force", id)...)
			t.Fatal("runc created a container whose /etc/passwd leads into /tmp")
		}
		if !strings.Contains(r.stderr, "/etc/passwd leads to /tmp/passwd") {
			t.Errorf("the refusal does not name /etc/passwd and where it leads:\n%s", r.stderr)
		}
		assertGone(t, root, backend, id)
	})
}
