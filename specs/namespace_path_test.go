package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestNamespacePathPid: only /proc/<pid>/ns/<file>, written exactly so,
// names a process.
func TestNamespacePathPid(t *testing.T) {
	for path, want := range map[string]int{
		"/proc/42/ns/net":         42,
		"/proc/42/ns/ipc":         0, // another file than the type's
		"/proc/42/root/../ns/net": 0,
		"/proc/42//ns/net":        0,
		"/proc/042/ns/net":        0,
		"/proc/+42/ns/net":        0,
		"/proc/1/ns/net":          0,
		"proc/42/ns/net":          0,
		"/var/run/netns/cni-1":    0,
	} {
		if got, ok := NamespacePathPid(path, rspec.NetworkNamespace); got != want || ok != (want != 0) {
			t.Errorf("NamespacePathPid(%s) = %d, %v, want %d", path, got, ok, want)
		}
	}
	if pid, ok := NamespacePathPid("/proc/42/ns/mnt", rspec.MountNamespace); !ok || pid != 42 {
		t.Errorf("mount namespace path: %d, %v", pid, ok)
	}
}
