package test

import (
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestCreateTakenIDSaysSo: a create under the id of a running container
// is refused because the id is taken, as runc says, not by a rule about
// the cgroup the caller never named; the running container is untouched.
func TestCreateTakenIDSaysSo(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		id := uniqueID("taken-" + backend)
		b := bundle.New(t, []string{"sleep", "300"})
		must(t, append(g, "run", "--detach", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		r := bulkhead(t, "", append(g, "create", "--bundle", b, id)...)
		if r.code == 0 || !strings.Contains(r.stderr, "container id already exists") || strings.Contains(r.stderr, "cgroups_path") {
			t.Fatalf("create under a running container's id: exit %d, stderr %q; want the id named as taken", r.code, r.stderr)
		}
		if s := containerState(t, g, id); s.Status != "running" {
			t.Fatalf("the running container after the refused create: %q", s.Status)
		}
	})
}
