package test

import (
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A signal for a container that has ended is answered in runc's words on
// every backend: containerd's shim takes "container not running" for the
// end, and runsc's own "sandbox is not running" left a pod stopped again
// and again, for ever.
func TestKillOfAStoppedContainer(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		id := uniqueID("killstopped-" + backend)
		b := bundle.New(t, []string{"true"})
		must(t, append(g, "create", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		must(t, append(g, "start", id)...)
		waitStatus(t, g, id, "stopped")
		r := bulkhead(t, "", append(g, "kill", id, "KILL")...)
		if r.code == 0 || !strings.Contains(r.stderr, "container not running") {
			t.Fatalf("kill of a stopped container: exit %d\n%s", r.code, r.stderr)
		}
	})
}

// A container created and never started ends on a kill, as runc's does:
// an engine that gives up on a container before its start (a client's
// Create then Kill and Delete, CRI's removal of a container it created)
// kills it and deletes it, and a runsc sandbox that refused the signal
// was left for ever, its task neither killable nor deletable.
func TestKillOfACreatedContainer(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		id := uniqueID("killcreated-" + backend)
		b := bundle.New(t, []string{"true"})
		must(t, append(g, "create", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		must(t, append(g, "kill", id, "KILL")...)
		waitStatus(t, g, id, "stopped")
		must(t, append(g, "delete", id)...)
	})
}
