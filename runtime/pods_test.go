package runtime

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
)

// A namespace path may be joined only when it is the init of a container
// bulkhead enforced under the same profile in this root.
func TestJoinableFor(t *testing.T) {
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Real processes stand in for the sandboxes' inits: a record holds
	// only while its pid is still the process that started then.
	pod, audited, lax, reused := sleeper(t), sleeper(t), sleeper(t), sleeper(t)
	for _, rec := range []*Record{
		{ID: "pod", Profile: "default", Mode: specs.Enforce, InitPid: pod, InitStart: initStart(pod)},
		{ID: "audited", Profile: "default", Mode: specs.Audit, InitPid: audited, InitStart: initStart(audited)},
		{ID: "lax", Profile: "lax", Mode: specs.Enforce, InitPid: lax, InitStart: initStart(lax)},
		{ID: "reused", Profile: "default", Mode: specs.Enforce, InitPid: reused, InitStart: initStart(reused) - 1},
	} {
		if err := reg.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	def := specs.DefaultProfile()
	join := reg.joinableFor(&def)
	cases := []struct {
		kind rspec.LinuxNamespaceType
		path string
		want bool
	}{
		{rspec.NetworkNamespace, nsPath(pod, "net"), true},
		{rspec.IPCNamespace, nsPath(pod, "ipc"), true},
		{rspec.NetworkNamespace, nsPath(pod, "ipc"), false},         // kind and file differ
		{rspec.NetworkNamespace, "/proc/1/ns/net", false},           // the host's
		{rspec.NetworkNamespace, nsPath(os.Getpid(), "net"), false}, // not bulkhead's
		{rspec.NetworkNamespace, "/var/run/netns/cni-1", false},
		{rspec.NetworkNamespace, nsPath(audited, "net"), false}, // audit mode: no boundary
		{rspec.NetworkNamespace, nsPath(lax, "net"), false},     // another profile
		{rspec.NetworkNamespace, nsPath(reused, "net"), false},  // the pid now belongs to another process
		{rspec.NetworkNamespace, fmt.Sprintf("/proc/%d/../1/ns/net", pod), false},
	}
	for _, c := range cases {
		if got := join(c.kind, c.path); got != c.want {
			t.Errorf("%s %s: joinable %v, want %v", c.kind, c.path, got, c.want)
		}
	}
}

func nsPath(pid int, kind string) string { return fmt.Sprintf("/proc/%d/ns/%s", pid, kind) }

// sleeper starts a process that lives as long as the test.
func sleeper(t *testing.T) int {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func TestSandboxFor(t *testing.T) {
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pod, gone := sleeper(t), sleeper(t)
	for _, rec := range []*Record{
		{ID: "pod", Profile: "default", Mode: specs.Enforce, InitPid: pod, InitStart: initStart(pod)},
		{ID: "gone", Profile: "default", Mode: specs.Enforce, InitPid: gone, InitStart: initStart(gone) + 1},
	} {
		if err := reg.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	def := specs.DefaultProfile()
	joinable := reg.sandboxFor(&def)
	for id, want := range map[string]bool{"pod": true, "gone": false, "other": false, "../pod": false} {
		if got := joinable(id); got != want {
			t.Errorf("sandbox %s: joinable %v, want %v", id, got, want)
		}
	}
}
