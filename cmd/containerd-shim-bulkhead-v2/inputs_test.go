package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	taskAPI "github.com/containerd/containerd/api/runtime/task/v3"
	"github.com/containerd/containerd/api/types"
	"github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/typeurl/v2"
	"google.golang.org/protobuf/proto"
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

// runc options naming a cgroup for the shim are refused; others, and
// none, are not.
func TestShimCgroupRefusal(t *testing.T) {
	wire := func(o *options.Options) *bytes.Reader {
		a, err := typeurl.MarshalAnyToProto(o)
		if err != nil {
			t.Fatal(err)
		}
		data, err := proto.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.NewReader(data)
	}
	if err := shimCgroupRefusal(wire(&options.Options{ShimCgroup: "/kubepods/pod1/victim"})); err == nil || !strings.Contains(err.Error(), "ShimCgroup \"/kubepods/pod1/victim\" is refused") {
		t.Errorf("ShimCgroup: %v, want it refused", err)
	}
	for name, in := range map[string]*bytes.Reader{"none": bytes.NewReader(nil), "other options": wire(&options.Options{SystemdCgroup: true})} {
		if err := shimCgroupRefusal(in); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
