package specs

import "testing"

// Every rule belongs to exactly one control of the table, and every
// control names a rule that exists.
func TestControlsCoverRules(t *testing.T) {
	owner := map[string]string{}
	for _, c := range Controls {
		for _, r := range c.Rules {
			if prev, ok := owner[r]; ok {
				t.Errorf("rule %s belongs to %q and %q", r, prev, c.Name)
			}
			owner[r] = c.Name
		}
	}
	for _, r := range Rules {
		if _, ok := owner[r.Name]; !ok {
			t.Errorf("rule %s is in no control of the table", r.Name)
		}
		delete(owner, r.Name)
	}
	for r, c := range owner {
		t.Errorf("control %q names rule %s, which does not exist", c, r)
	}
}
