package runtime

import (
	"testing"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
	"bulkhead.dev/bulkhead/specs"
)

// Every probe control belongs to exactly one control of the table, and
// the table names only probe controls that exist.
func TestControlsCoverProbe(t *testing.T) {
	owner := map[string]string{}
	for _, c := range specs.Controls {
		for _, p := range c.Probe {
			if prev, ok := owner[p]; ok {
				t.Errorf("probe control %s belongs to %q and %q", p, prev, c.Name)
			}
			owner[p] = c.Name
		}
	}
	for _, p := range protocol.Controls {
		if _, ok := owner[p]; !ok {
			t.Errorf("probe control %s is in no control of the table", p)
		}
		delete(owner, p)
	}
	for p, c := range owner {
		t.Errorf("control %q names probe control %s, which the probe does not have", c, p)
	}
}
