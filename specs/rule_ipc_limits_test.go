package specs

import (
	"os"
	"strconv"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestIPCLimits: a container's own IPC namespace gets the bounds, a
// caller's smaller value stands, a larger one or one that is no number is
// tightened; a pod member's namespace is its sandbox's and is left alone.
func TestIPCLimits(t *testing.T) {
	s := &rspec.Spec{Linux: &rspec.Linux{
		Namespaces: []rspec.LinuxNamespace{{Type: rspec.IPCNamespace}},
		Sysctl:     map[string]string{"kernel.shm_rmid_forced": "0", "kernel.msgmni": "8", "kernel.shmmax": "99999999999", "kernel.sem": "500 x 16"},
	}}
	ruleIPCLimits(testContext(), s)
	pages := strconv.FormatInt((256<<20)/int64(os.Getpagesize()), 10)
	for key, want := range map[string]string{
		"kernel.shm_rmid_forced": "1", "kernel.msgmni": "8", "kernel.shmmax": "268435456", "kernel.shmall": pages,
		"kernel.msgmnb": "16384", "kernel.msgmax": "8192", "kernel.sem": "250 32000 16 128",
	} {
		if got := s.Linux.Sysctl[key]; got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	member := &rspec.Spec{Linux: &rspec.Linux{Namespaces: []rspec.LinuxNamespace{{Type: rspec.IPCNamespace, Path: "/proc/42/ns/ipc"}}}}
	if ds := ruleIPCLimits(testContext(), member); len(ds) != 0 || len(member.Linux.Sysctl) != 0 {
		t.Errorf("a pod member's sysctls were set: %v", member.Linux.Sysctl)
	}
}
