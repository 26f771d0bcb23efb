package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	taskAPI "github.com/containerd/containerd/api/runtime/task/v3"
	"github.com/containerd/containerd/api/types"
	"golang.org/x/sys/unix"
)

// A stream is none or an existing FIFO: a URI (binary://, file://) or a
// path of anything else is refused.
func TestStdioRefusal(t *testing.T) {
	dir := t.TempDir()
	fifo, file := filepath.Join(dir, "out"), filepath.Join(dir, "shadow")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	if err := stdioRefusal("", fifo, ""); err != nil {
		t.Errorf("a FIFO: %v", err)
	}
	for _, bad := range []string{"binary:///bin/sh?-c=id", "file:///etc/cron.d/x", "fifo://" + fifo, file, link, filepath.Join(dir, "missing"), "/dev/sda"} {
		if err := stdioRefusal(bad, "", ""); err == nil || !strings.Contains(err.Error(), "is refused") {
			t.Errorf("stdin %q: %v, want it refused", bad, err)
		}
	}
}

// Rootfs mounts are overlay, bind or tmpfs, with none of containerd's
// own options.
func TestRootfsMountsRefusal(t *testing.T) {
	ok := []*types.Mount{{Type: "overlay", Source: "overlay", Options: []string{"lowerdir=/a", "upperdir=/b", "workdir=/c"}},
		{Type: "bind", Source: "/srv/x", Options: []string{"rbind", "ro"}}, {Type: "tmpfs", Source: "tmpfs"}}
	if err := rootfsMountsRefusal(ok); err != nil {
		t.Errorf("containerd's snapshot mounts: %v", err)
	}
	for _, bad := range []*types.Mount{{Type: "ext4", Source: "/dev/loop0"}, {Type: "ext4", Source: "/srv/img", Options: []string{"loop"}},
		{Type: "bind", Source: "/srv/img", Options: []string{"loop"}}, {Type: "bind", Source: "/srv/x", Options: []string{"X-containerd.mkdir.path=/x"}}} {
		if err := rootfsMountsRefusal([]*types.Mount{bad}); err == nil || !strings.Contains(err.Error(), "is refused") {
			t.Errorf("%v: %v, want it refused", bad, err)
		}
	}
}

// A checkpoint, whose image path the client names, is refused.
func TestCheckpointRefused(t *testing.T) {
	s := &service{binary: "/b"}
	if _, err := s.Checkpoint(context.Background(), &taskAPI.CheckpointTaskRequest{ID: "c1", Path: "/etc/x"}); err == nil || !strings.Contains(err.Error(), "is refused") {
		t.Errorf("checkpoint to /etc/x: %v, want it refused", err)
	}
}
