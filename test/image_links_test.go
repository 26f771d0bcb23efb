package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// runc lays out /dev itself, and runc 1.1 writes /dev/ptmx and the
// /dev/fd, stdin, stdout and stderr links through plain host paths: an
// image whose /dev is a link to a host directory had them written there,
// as root, on the host. Such an image is refused, and the directory it
// names stays as it was.
func TestImageDevLinkRefused(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	victim := t.TempDir()
	b := bundle.New(t, []string{"true"})
	dev := filepath.Join(b, "rootfs", "dev")
	if err := os.RemoveAll(dev); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, dev); err != nil {
		t.Fatal(err)
	}
	id := uniqueID("devlink")
	r := bulkhead(t, "", "--root", root, "run", "--bundle", b, id)
	t.Cleanup(func() { bulkhead(t, "", "--root", root, "delete", "--force", id) })
	if r.code == 0 || !strings.Contains(r.stderr, "mounts[/dev]") || !strings.Contains(r.stderr, "make it a directory in the image") {
		t.Errorf("run of an image whose /dev is a link: exit %d, want mounts[/dev] refused\n%s", r.code, r.stderr)
	}
	left, err := os.ReadDir(victim)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("the host directory the image's /dev names now holds %v", names)
	}
	assertGone(t, root, "runc", id)
}
