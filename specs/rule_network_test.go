package specs

import (
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func netns(s *rspec.Spec) []rspec.LinuxNamespace {
	var out []rspec.LinuxNamespace
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == rspec.NetworkNamespace {
			out = append(out, ns)
		}
	}
	return out
}

func TestRuleNetwork(t *testing.T) {
	fresh := func(t *testing.T, s *rspec.Spec) {
		t.Helper()
		if n := netns(s); len(n) != 1 || n[0].Path != "" {
			t.Fatalf("network namespaces %+v, want one new", n)
		}
	}
	withNet := func(path string) func(s *rspec.Spec) {
		return func(s *rspec.Spec) {
			s.Linux.Namespaces = []rspec.LinuxNamespace{{Type: rspec.NetworkNamespace, Path: path}}
		}
	}
	pod := func(c *Context) {
		c.JoinableNamespace = func(kind rspec.LinuxNamespaceType, p string) bool {
			return strings.HasPrefix(p, "/var/run/netns/bulkhead-")
		}
	}
	runRule(t, ruleNetwork, []ruleCase{
		{name: "no namespace", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "linux.namespaces[network]", Added)
			fresh(t, s)
		}},
		{name: "host's namespace", spec: withNet("/proc/1/ns/net"), want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "linux.namespaces[network]", Tightened)
			fresh(t, s)
		}},
		{name: "named netns not ours", spec: withNet("/var/run/netns/x"), want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "linux.namespaces[network]", Tightened)
			fresh(t, s)
		}},
		{name: "duplicate entries", spec: func(s *rspec.Spec) {
			s.Linux.Namespaces = []rspec.LinuxNamespace{{Type: rspec.NetworkNamespace}, {Type: rspec.NetworkNamespace, Path: "/proc/1/ns/net"}}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) { fresh(t, s) }},
		{name: "pod sandbox kept", ctx: pod, spec: withNet("/var/run/netns/bulkhead-pod1"),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "linux.namespaces[network]", Kept)
				if netns(s)[0].Path == "" {
					t.Fatal("pod path dropped")
				}
			}},
		{name: "caller profile", ctx: func(c *Context) { c.Profile.Network = NetworkCaller },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				if len(netns(s)) != 0 {
					t.Fatal("changed although not enforced")
				}
			}},
	})
}

// TestRuleNetworkHostPodRefused: a CRI pod sandbox on the host's network
// is refused, since the engine goes on serving the pod there; any other
// container on it gets a new namespace.
func TestRuleNetworkHostPodRefused(t *testing.T) {
	sandbox := &rspec.Spec{Annotations: map[string]string{AnnotationCRIContainerType: "sandbox"}, Linux: &rspec.Linux{}}
	ds := ruleNetwork(testContext(), sandbox)
	if !refused(ds) || !strings.Contains(ds[len(ds)-1].Why, "hostNetwork") {
		t.Errorf("a host-network pod sandbox: %+v, want a refusal naming hostNetwork", ds)
	}
	plain := &rspec.Spec{Linux: &rspec.Linux{}}
	if ds := ruleNetwork(testContext(), plain); refused(ds) || namespaceIndex(plain.Linux, rspec.NetworkNamespace) < 0 {
		t.Errorf("a container on the host's network: %+v, want a new namespace", ds)
	}
}
