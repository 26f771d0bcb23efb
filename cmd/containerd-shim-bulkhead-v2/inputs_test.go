package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	taskAPI "github.com/containerd/containerd/api/runtime/task/v3"
	"github.com/containerd/containerd/api/types"
	"github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/shim"
	"github.com/containerd/typeurl/v2"
	"google.golang.org/protobuf/proto"
)

// A rootfs is one overlay, bind or tmpfs mount at the rootfs itself, with
// flags that narrow it and its filesystem's options only; an overlay's
// layers are containerd's snapshots.
func TestRootfsMountsRefusal(t *testing.T) {
	for _, ok := range [][]*types.Mount{{{Type: "bind", Source: "/srv/x", Options: []string{"rbind", "ro"}}}, {{Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1m", "nosuid"}}}, nil} {
		if err := rootfsMountsRefusal("/run/containerd/io.containerd.runtime.v2.task/default/c1", "c1", ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	bind := &types.Mount{Type: "bind", Source: "/srv/x", Options: []string{"rbind", "ro"}}
	for _, bad := range [][]*types.Mount{
		{{Type: "ext4", Source: "/dev/loop0"}}, {{Type: "ext4", Source: "/srv/img", Options: []string{"loop"}}},
		{{Type: "bind", Source: "/srv/img", Options: []string{"loop"}}}, {{Type: "bind", Source: "/srv/x", Options: []string{"X-containerd.mkdir.path=/x"}}},
		{bind, bind}, {{Type: "bind", Source: "/srv/x", Target: "bin", Options: []string{"rbind"}}},
		{{Type: "bind", Source: "/srv/x", Options: []string{"rbind", "remount"}}}, {{Type: "bind", Source: "/srv/x", Options: []string{"rbind", "rshared"}}},
		{{Type: "bind", Source: "/srv/x", Options: []string{"rbind", "uidmap=0:1000:1"}}}, {{Type: "tmpfs", Source: "tmpfs", Options: []string{"huge=always"}}},
		{{Type: "overlay", Source: "overlay", Options: []string{"lowerdir=/a", "upperdir=/b", "workdir=/c"}}},
	} {
		if err := rootfsMountsRefusal("/run/containerd/io.containerd.runtime.v2.task/default/c1", "c1", bad); err == nil || !strings.Contains(err.Error(), "is refused") {
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

// A spec naming a runc shim group is refused before any shim is joined;
// CRI's sandbox id is not, and the socket it keys differs by runtime.
func TestShimGroup(t *testing.T) {
	dir := t.TempDir()
	for spec, refused := range map[string]bool{
		`{"annotations":{"io.containerd.runc.v2.group":"other"}}`:                              true,
		`{"annotations":{"io.kubernetes.cri.sandbox-id":"pod1"}}`:                              false,
		`{"process":{"args":["sh"]}}`:                                                          false,
		`{"annotations":{"io.containerd.runc.v2.group":""}}`:                                   true,
		`{"annotations":{"io.kubernetes.cri.sandbox-id":"../../containerd.sock/k8s.io/pod1"}}`: true,
		`{"annotations":{"io.kubernetes.cri.sandbox-id":".."}}`:                                true,
		`{"annotations":{"io.kubernetes.cri.sandbox-id":""}}`:                                  true,
		`{"ANNOTATIONS":{"io.kubernetes.cri.sandbox-id":"a/b"}}`:                               true,
	} {
		config := filepath.Join(dir, "config.json")
		if err := os.WriteFile(config, []byte(spec), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := groupRefusal(config); (err != nil) != refused {
			t.Errorf("%s: %v, want refused %v", spec, err, refused)
		}
	}
	ctx := namespaces.WithNamespace(context.Background(), "k8s.io")
	address := "/run/containerd/containerd.sock"
	sockets := map[string]bool{}
	for _, a := range []string{address, runtimeKeyedAddress(address, "bulkhead"), runtimeKeyedAddress(address, "bulkhead-runsc")} {
		s, err := shim.SocketAddress(ctx, a, "pod1", false)
		if err != nil {
			t.Fatal(err)
		}
		sockets[s] = true
	}
	if len(sockets) != 3 {
		t.Errorf("plain runc, bulkhead and bulkhead-runsc share a shim socket for group pod1: %v", sockets)
	}
}
