package test

import (
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A start that fails because the container already runs leaves it
// running, on both backends: the end a failed start gives a runsc sandbox
// that never started must not reach one that did (a pod's sandbox ended
// every container of the pod).
func TestSecondStartLeavesItRunning(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		b := bundle.New(t, []string{"sleep", "60"})
		id := uniqueID("twice-" + backend)
		must(t, append(g, "create", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		must(t, append(g, "start", id)...)
		if r := bulkhead(t, "", append(g, "start", id)...); r.code == 0 {
			t.Fatalf("a second start succeeded on %s", backend)
		}
		if out := must(t, append(g, "state", id)...); !strings.Contains(out, `"status": "running"`) && !strings.Contains(out, `"status":"running"`) {
			t.Errorf("after a second start the container is not running:\n%s", out)
		}
	})
}
