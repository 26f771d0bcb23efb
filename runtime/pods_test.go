package runtime

import (
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
	for _, rec := range []*Record{
		{ID: "pod", Profile: "default", Mode: specs.Enforce, InitPid: 4242},
		{ID: "audited", Profile: "default", Mode: specs.Audit, InitPid: 4343},
		{ID: "lax", Profile: "lax", Mode: specs.Enforce, InitPid: 4444},
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
		{rspec.NetworkNamespace, "/proc/4242/ns/net", true},
		{rspec.IPCNamespace, "/proc/4242/ns/ipc", true},
		{rspec.NetworkNamespace, "/proc/4242/ns/ipc", false}, // kind and file differ
		{rspec.NetworkNamespace, "/proc/1/ns/net", false},    // the host's
		{rspec.NetworkNamespace, "/proc/9999/ns/net", false}, // not bulkhead's
		{rspec.NetworkNamespace, "/var/run/netns/cni-1", false},
		{rspec.NetworkNamespace, "/proc/4343/ns/net", false}, // audit mode: no boundary
		{rspec.NetworkNamespace, "/proc/4444/ns/net", false}, // another profile
		{rspec.NetworkNamespace, "/proc/4242/../1/ns/net", false},
	}
	for _, c := range cases {
		if got := join(c.kind, c.path); got != c.want {
			t.Errorf("%s %s: joinable %v, want %v", c.kind, c.path, got, c.want)
		}
	}
}
