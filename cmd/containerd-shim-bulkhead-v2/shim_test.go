package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	taskv2 "github.com/containerd/containerd/api/runtime/task/v2"
	taskAPI "github.com/containerd/containerd/api/runtime/task/v3"
	"github.com/containerd/containerd/api/types"
	"github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/typeurl/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

func TestRuntimeName(t *testing.T) {
	for argv0, want := range map[string]string{
		"/usr/local/bin/containerd-shim-bulkhead-v2":        "bulkhead",
		"containerd-shim-bulkhead-runsc-v2":                 "bulkhead-runsc",
		"/opt/x/containerd-shim-bulkhead-strict-v2":         "bulkhead-strict",
		"/usr/bin/containerd-shim-runc-v2":                  "bulkhead", // never another runtime
		"/tmp/go-build123/b001/containerd-shim-bulkhead-v2": "bulkhead",
		"shim": "bulkhead",
		"":     "bulkhead",
	} {
		if got := runtimeName(argv0); got != want {
			t.Errorf("runtimeName(%q) = %q, want %q", argv0, got, want)
		}
	}
}

func TestFindRuntime(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bulkhead-test-rt")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(binaryEnv, "")
	t.Setenv("PATH", dir)
	if got, err := findRuntime("bulkhead-test-rt"); err != nil || got != bin {
		t.Errorf("on PATH: %q, %v; want %q", got, err, bin)
	}
	t.Setenv("PATH", "/nonexistent")
	if _, err := findRuntime("bulkhead-test-rt"); err == nil {
		t.Error("found a runtime that is nowhere: the shim must fail closed")
	}
	// start never takes the runtime from its (containerd's) environment.
	t.Setenv(binaryEnv, bin)
	if _, err := findRuntime("bulkhead-test-rt"); err == nil {
		t.Errorf("findRuntime read %s", binaryEnv)
	}
	// The long-running shim takes what start resolved.
	if got, err := runtimeFromEnv(); err != nil || got != bin {
		t.Errorf("from %s: %q, %v", binaryEnv, got, err)
	}
	t.Setenv(binaryEnv, "relative/bulkhead")
	if _, err := runtimeFromEnv(); err == nil {
		t.Errorf("a relative %s was accepted", binaryEnv)
	}
	if err := os.Chmod(bin, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(binaryEnv, bin)
	if _, err := runtimeFromEnv(); err == nil {
		t.Error("a file that is not executable was accepted")
	}
}

func TestSystemdCgroupsPath(t *testing.T) {
	for path, want := range map[string]bool{
		"kubepods-burstable-pod1.slice:cri-containerd:abc": true,
		"system.slice:docker:abc":                          true,
		"/kubepods/burstable/pod1/abc":                     false,
		"/bulkhead/abc":                                    false,
		"":                                                 false,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"linux":{"cgroupsPath":"`+path+`"}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := systemdCgroupsPath(dir); got != want {
			t.Errorf("systemdCgroupsPath(%q) = %v, want %v", path, got, want)
		}
	}
	if systemdCgroupsPath(t.TempDir()) {
		t.Error("a bundle without config.json is systemd")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"linux":{"cgroupsPath":"system.slice:cri-containerd:abc"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if !inferSystemd(dir, true) {
		t.Error("systemd path where systemd runs: not the systemd driver")
	}
	if inferSystemd(dir, false) {
		t.Error("systemd path where systemd does not run: the systemd driver, which fails every create")
	}
	s := &service{binary: "/b"}
	out, err := s.runcOptions(nil, true, "/run/containerd/runc")
	if err != nil || !unmarshalRunc(t, out).SystemdCgroup {
		t.Errorf("systemd path without options: SystemdCgroup not set (%v)", err)
	}
	explicit, _ := typeurl.MarshalAnyToProto(&options.Options{SystemdCgroup: false})
	out, _ = s.runcOptions(explicit, true, "/run/containerd/runc")
	if unmarshalRunc(t, out).SystemdCgroup {
		t.Error("runc options that chose cgroupfs were overridden")
	}
}

func unmarshalRunc(t *testing.T, a *anypb.Any) *options.Options {
	t.Helper()
	v, err := typeurl.UnmarshalAny(a)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := v.(*options.Options)
	if !ok {
		t.Fatalf("options are %T, want runc options", v)
	}
	return o
}

// Whatever options a create request carries, the container's runtime is
// bulkhead and its state root the containerd's own; fields of runc
// options other than BinaryName and Root are kept. A Root other than the
// containerd's own is refused.
func TestCreateOptionsNameBulkhead(t *testing.T) {
	s := &service{binary: "/usr/local/bin/bulkhead"}
	const root = "/var/lib/ctrd-b/state/runc"
	runcOpts, err := typeurl.MarshalAnyToProto(&options.Options{BinaryName: "/usr/sbin/runc", Root: root, SystemdCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	// What CRI sends a runtime type other than io.containerd.runc.v2.
	generic := &anypb.Any{TypeUrl: "runtimeoptions.v1.Options", Value: []byte{0x0a, 0x03, 'a', 'b', 'c'}}
	for name, in := range map[string]*anypb.Any{"none": nil, "empty": {}, "runc": runcOpts, "cri generic": generic} {
		out, err := s.runcOptions(in, false, root)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o := unmarshalRunc(t, out)
		if o.BinaryName != s.binary || o.Root != root {
			t.Errorf("%s: BinaryName %q and Root %q, want %q and %q", name, o.BinaryName, o.Root, s.binary, root)
		}
		if name == "runc" && !o.SystemdCgroup {
			t.Errorf("runc options lost their fields: %+v", o)
		}
	}
	other, _ := typeurl.MarshalAnyToProto(&options.Options{Root: "/run/containerd/runc"})
	if _, err := s.runcOptions(other, false, root); err == nil || !strings.Contains(err.Error(), "runc option Root") {
		t.Errorf("another containerd's Root: %v, want it refused", err)
	}
}

// A task's state root is its containerd's: <state>/runc, runc's default
// for the host's containerd, whose state is /run/containerd.
func TestRuntimeRootOfTheTasksContainerd(t *testing.T) {
	for bundle, want := range map[string]string{
		"/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc":  "/run/containerd/runc",
		"/var/lib/ctrd-b/state/io.containerd.runtime.v2.task/t/abc": "/var/lib/ctrd-b/state/runc",
		"/tmp/bundle": "",
		"relative/io.containerd.runtime.v2.task/t/abc": "",
	} {
		got, err := runtimeRoot(bundle)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("bundle %s: root %q (%v), want %q", bundle, got, err, want)
		}
	}
}

// The task v2 and v3 messages are wire-compatible: the v2 service's
// conversion keeps every field.
func TestTaskV2Conversion(t *testing.T) {
	v2 := &taskv2.CreateTaskRequest{ID: "c1", Bundle: "/b", Terminal: true, Stdout: "/o",
		Rootfs: []*types.Mount{{Type: "overlay", Source: "overlay", Options: []string{"lowerdir=/l"}}}}
	var v3 taskAPI.CreateTaskRequest
	if err := convert(v2, &v3); err != nil {
		t.Fatal(err)
	}
	back := &taskv2.CreateTaskRequest{}
	if err := convert(&v3, back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(v2, back) || v3.ID != "c1" || v3.Rootfs[0].Options[0] != "lowerdir=/l" {
		t.Errorf("conversion lost fields: %v -> %v -> %v", v2, &v3, back)
	}
}

func TestLegacyCaller(t *testing.T) {
	t.Setenv("MAX_SHIM_VERSION", "")
	t.Setenv("GRPC_ADDRESS", "")
	if !legacyCaller() {
		t.Error("containerd 1.6 (no MAX_SHIM_VERSION, no GRPC_ADDRESS) not detected")
	}
	t.Setenv("MAX_SHIM_VERSION", "2")
	t.Setenv("GRPC_ADDRESS", "/run/containerd/containerd.sock")
	if legacyCaller() {
		t.Error("containerd 2.x taken for 1.6")
	}
}
