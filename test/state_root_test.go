package test

import (
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestOtherContainersStateRefused: a --root below bind_roots (these
// tests keep theirs in /tmp) holds other containers' records, pins,
// handed specs and workspace layers. Binding any of it, or the root, is
// refused on both backends, as it is below /run.
func TestOtherContainersStateRefused(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		other := uniqueID("other-" + backend)
		must(t, append(g, "create", "--bundle", workspaceBundle(t, workspaceSource(t), "true"), other)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", other)...) })
		for _, src := range []string{
			root,
			filepath.Join(root, "bulkhead", other),
			filepath.Join(root, "bulkhead", other, "ws", "0", "upper"),
		} {
			id := uniqueID("peek-" + backend)
			b := bundle.New(t, []string{"true"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/peek", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
			})
			r := bulkhead(t, "", append(g, "run", "--bundle", b, id)...)
			if r.code == 0 || !strings.Contains(r.stderr, "rule host_mounts") || !strings.Contains(r.stderr, "engine") {
				t.Errorf("%s bound: exit %d\n%s", src, r.code, r.stderr)
			}
		}
	})
}
