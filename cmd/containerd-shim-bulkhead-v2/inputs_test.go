package main

import (
	"context"
	"strings"
	"testing"

	taskAPI "github.com/containerd/containerd/api/runtime/task/v3"
	"github.com/containerd/containerd/api/types"
)

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

