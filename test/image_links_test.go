package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

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

// runc 1.1 looks a bind's destination up twice: to mount, and again to
// make the mount read-only, through the tree with the source in it. An
// image link /p/x -> . puts the bind at /p, and the source's own
// x -> /q sent the remount to /q: the source was mounted writable and
// the job wrote into the host directory. Such a spec is refused.
func TestBindRemountMovedByASourceLink(t *testing.T) {
	needRoot(t, "runc")
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(src, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/q", filepath.Join(src, "x")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _ := workspaceConfig(t, fmt.Sprintf("[profiles.default]\nbind_roots = [%q]\n", dir))
	b := bundle.New(t, []string{"sh", "-c", "echo pwned > /p/written"}, func(s *rspec.Spec) {
		s.Mounts = append(s.Mounts,
			rspec.Mount{Destination: "/q", Type: "bind", Source: other, Options: []string{"bind", "ro"}},
			rspec.Mount{Destination: "/p/x", Type: "bind", Source: src, Options: []string{"bind", "ro"}})
	})
	for _, d := range []string{"p", "q"} {
		if err := os.MkdirAll(filepath.Join(b, "rootfs", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".", filepath.Join(b, "rootfs", "p", "x")); err != nil {
		t.Fatal(err)
	}
	root := stateRoot(t)
	id := uniqueID("remount")
	r := bulkhead(t, "", "--config", cfg, "--root", root, "run", "--bundle", b, id)
	t.Cleanup(func() { bulkhead(t, "", "--config", cfg, "--root", root, "delete", "--force", id) })
	if r.code == 0 || !strings.Contains(r.stderr, "for the remount that makes it read-only") {
		t.Errorf("run with a source whose link moves runc's remount: exit %d, want mounts[/p/x] refused\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(src, "written")); err == nil {
		t.Errorf("the job wrote into the bind's host directory")
	}
}

// runc 1.1 makes a tmpfs read-only after every mount is in place, looking
// its destination up again; verification looks there too. A later bind
// whose links moved that lookup left the tmpfs writable while both went
// to another mount. Such a spec is refused.
func TestTmpfsFinalRemountMovedByALaterBind(t *testing.T) {
	needRoot(t, "runc")
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"q": "/p", "t": "/c"} {
		if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _ := workspaceConfig(t, fmt.Sprintf("[profiles.default]\nbind_roots = [%q]\n", dir))
	b := bundle.New(t, []string{"sh", "-c", "touch /a/t/written && echo WRITABLE"}, func(s *rspec.Spec) {
		s.Mounts = append(s.Mounts,
			rspec.Mount{Destination: "/p/q/t", Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "size=1m"}},
			rspec.Mount{Destination: "/c", Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "size=1m"}},
			rspec.Mount{Destination: "/z/z/p", Type: "bind", Source: src, Options: []string{"bind", "ro"}})
	})
	rootfs := filepath.Join(b, "rootfs")
	for _, d := range []string{"a", "c", "p"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{"p/q": "/a", "z": "."} {
		if err := os.Symlink(target, filepath.Join(rootfs, name)); err != nil {
			t.Fatal(err)
		}
	}
	root := stateRoot(t)
	id := uniqueID("final-remount")
	r := bulkhead(t, "", "--config", cfg, "--root", root, "run", "--bundle", b, id)
	t.Cleanup(func() { bulkhead(t, "", "--config", cfg, "--root", root, "delete", "--force", id) })
	if r.code == 0 || strings.Contains(r.stdout, "WRITABLE") || !strings.Contains(r.stderr, "once every mount is in place") {
		t.Errorf("run with a later bind moving a read-only tmpfs's last lookup: exit %d, stdout %q, want mounts[/p/q/t] refused\n%s", r.code, r.stdout, r.stderr)
	}
}
