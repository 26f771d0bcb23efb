package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestRootfsInADirectoryAnyoneWrites: a rootfs inside the bundle is taken
// for files the caller laid out, so the directories from the bundle down
// to the rootfs must be ones others may not write. With --bundle /tmp any
// directory there passed as the rootfs, another user's or a host
// service's with its socket, which a runc container could connect to;
// in a group's shared one, another user's private directory.
func TestRootfsInADirectoryAnyoneWrites(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		b := bundle.New(t, []string{"true"})
		refused := func(what, why string) {
			t.Helper()
			rootRefused(t, g, root, backend, b, what, why)
		}
		chmod(t, b, os.ModeSticky|0o777)
		refused("a bundle anyone may write to", b+", which holds the rootfs, may be written by others than its owner (mode 1777, group 0)")
		chmod(t, b, 0o700)

		shared := filepath.Join(b, "shared")
		if err := os.Mkdir(shared, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(b, "rootfs"), filepath.Join(shared, "rootfs")); err != nil {
			t.Fatal(err)
		}
		s, err := bundle.Read(b)
		if err != nil {
			t.Fatal(err)
		}
		s.Root.Path = "shared/rootfs"
		if err := bundle.Write(b, s); err != nil {
			t.Fatal(err)
		}
		chmod(t, shared, os.ModeSticky|0o777)
		refused("a rootfs below a directory of the bundle anyone may write to", shared+", which holds the rootfs, may be written by others than its owner (mode 1777, group 0)")
		// A group's shared directory, and a user's private one: alice's
		// files, which the job would read, and the mount points runc
		// would make there as root.
		if err := os.Chown(shared, 0, 100); err != nil {
			t.Fatal(err)
		}
		chmod(t, shared, os.ModeSetgid|0o775)
		refused("a rootfs below a directory a group shares", shared+", which holds the rootfs, may be written by others than its owner (mode 2775, group 100)")
		if err := os.Chown(shared, 1500, 1500); err != nil {
			t.Fatal(err)
		}
		chmod(t, shared, 0o700)
		refused("a rootfs below a user's private directory", shared+", which is or holds the rootfs, is uid 1500's and others may not enter it (mode 0700)")
		// Root's own, that an ACL opens to uid 1500 (udisks's
		// /media/<user>), is hers; one whose ACL lets her write, showing
		// as the group's w with root's own group, is hers to fill.
		if err := os.Chown(shared, 0, 0); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			named, other uint16
			why          string
		}{
			{5, 0, shared + ", which is or holds the rootfs, is uid 0's with an ACL for some users and others may not enter it (mode 0750)"},
			{7, 5, shared + ", which is or holds the rootfs, is uid 0's with an ACL for some users and its ACL may keep some users out (mode 0775)"},
		} {
			if err := unix.Setxattr(shared, "system.posix_acl_access", posixACL(1500, c.named, c.named, c.other), 0); err != nil {
				t.Fatalf("set an ACL on %s: %v", shared, err)
			}
			refused("a rootfs below root's directory with an ACL for uid 1500", c.why)
		}
		if err := unix.Removexattr(shared, "system.posix_acl_access"); err != nil {
			t.Fatal(err)
		}
		// As root's that a group other than root's may enter.
		if err := os.Chown(shared, 0, 50); err != nil {
			t.Fatal(err)
		}
		chmod(t, shared, 0o750)
		refused("a rootfs below root's directory group 50 may enter", shared+", which is or holds the rootfs, is uid 0's open to group 50 and others may not enter it (mode 0750)")
		if err := os.Chown(shared, 0, 0); err != nil {
			t.Fatal(err)
		}

		// The same bundle, the directory no longer anyone else's to write
		// or closed to others: run.
		chmod(t, shared, 0o755)
		must(t, append(g, "run", "--bundle", b, uniqueID("shared-ok-"+backend))...)
	})
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// rootRefused asserts that a create of bundle b is refused by the root
// rule for why, and that nothing of the container is left.
func rootRefused(t *testing.T, g []string, root, backend, b, what, why string) {
	t.Helper()
	id := uniqueID("root-refused-" + backend)
	r := bulkhead(t, "", append(g, "create", "--bundle", b, id)...)
	if r.code == 0 {
		bulkhead(t, "", append(g, "delete", "--force", id)...)
		t.Fatalf("%s: created", what)
	}
	if !strings.Contains(r.stderr, "root.path") || !strings.Contains(r.stderr, why) {
		t.Fatalf("%s: exit %d, stderr %q; want root.path refused: %s", what, r.code, r.stderr, why)
	}
	assertGone(t, root, backend, id)
}
