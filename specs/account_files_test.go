package specs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestAccountFilesWritable: /etc/passwd and /etc/group, which runc's init
// opens as root at every exec, may lie only on read-only storage, every
// link on the way too; absent there is fine.
func TestAccountFilesWritable(t *testing.T) {
	tools := t.TempDir()
	if err := os.WriteFile(filepath.Join(tools, "passwd"), []byte("root:x:0:0::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		image  func(rootfs string)
		rw     bool
		refuse string
	}{
		{"regular files", func(r string) { write(t, r, "etc/passwd"); write(t, r, "etc/group") }, false, ""},
		{"absent", func(r string) { mkdir(t, r, "etc") }, false, ""},
		{"a link within the image", func(r string) { write(t, r, "usr/share/passwd"); link(t, r, "/usr/share/passwd", "etc/passwd") }, false, ""},
		{"a link into a read-only bind", func(r string) { mkdir(t, r, "etc"); link(t, r, "/opt/passwd", "etc/passwd") }, false, ""},
		{"a link into /tmp", func(r string) { mkdir(t, r, "etc"); link(t, r, "/tmp/passwd", "etc/passwd") }, false, "/etc/passwd leads to /tmp/passwd on the mount at /tmp"},
		{"/etc a link into /tmp", func(r string) { link(t, r, "/tmp/etc", "etc") }, false, "/etc/passwd leads to /tmp/etc/passwd"},
		{"a link into /proc", func(r string) { mkdir(t, r, "etc"); link(t, r, "/proc/self/fd/0", "etc/group") }, false, "/etc/group leads to /proc"},
		{"a link into /dev/shm", func(r string) { mkdir(t, r, "etc"); link(t, r, "/dev/shm/g", "etc/group") }, false, "the runtime's dev"},
		{"a FIFO", func(r string) {
			mkdir(t, r, "etc")
			if err := syscall.Mkfifo(filepath.Join(r, "etc/passwd"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false, "/etc/passwd is no regular file but a FIFO"},
		{"a writable rootfs", func(r string) { write(t, r, "etc/passwd") }, true, "/etc/passwd leads to /etc/passwd on the rootfs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bundle := t.TempDir()
			rootfs := filepath.Join(bundle, "rootfs")
			mkdir(t, rootfs, "tmp")
			tc.image(rootfs)
			s := &rspec.Spec{
				Root:    &rspec.Root{Path: "rootfs", Readonly: !tc.rw},
				Process: &rspec.Process{Args: []string{"sh"}},
				Mounts: []rspec.Mount{
					{Destination: "/proc", Type: "proc", Source: "proc"},
					{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec"}},
					{Destination: "/opt", Type: "bind", Source: tools, Options: []string{"rbind", "ro"}},
				},
			}
			c := testContext()
			c.Bundle = bundle
			why := AccountFilesWritable(c, s)
			if tc.refuse == "" && why != "" || tc.refuse != "" && !strings.Contains(why, tc.refuse) {
				t.Errorf("AccountFilesWritable = %q, want %q", why, tc.refuse)
			}
		})
	}
}

func mkdir(t *testing.T, root, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, root, p string) {
	t.Helper()
	mkdir(t, root, filepath.Dir(p))
	if err := os.WriteFile(filepath.Join(root, p), []byte("x:x:0:0::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, root, target, p string) {
	t.Helper()
	mkdir(t, root, filepath.Dir(p))
	mustSymlink(t, target, filepath.Join(root, p))
}
