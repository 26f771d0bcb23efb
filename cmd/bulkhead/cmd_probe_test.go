package main

import (
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/runtime/probe"
)

// A skipped control fails `bulkhead probe` as a failed one does: neither
// is evidence that the control held.
func TestProbeVerdict(t *testing.T) {
	row := func(name, result string) probe.Control {
		return probe.Control{Name: name, Result: result, Pass: result == probe.Pass}
	}
	cases := []struct {
		name string
		rep  probe.Report
		want string // "" for a pass
	}{
		{"all held", probe.Report{Finished: true, Pass: true, Controls: []probe.Control{row("etc", "pass"), row("cpu", "pass")}}, ""},
		{"skipped", probe.Report{Finished: true, Controls: []probe.Control{row("workspace", "skipped"), row("cpu", "pass")}}, "skipped: workspace"},
		{"failed", probe.Report{Finished: true, Controls: []probe.Control{row("etc", "fail")}}, "did not hold: etc"},
		{"unfinished", probe.Report{Controls: []probe.Control{row("etc", "pass")}}, "did not finish"},
		// A report marked passing with a skipped row still fails.
		{"pass flag and a skip", probe.Report{Finished: true, Pass: true, Controls: []probe.Control{row("memory", "skipped")}}, "skipped: memory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.rep.Backend, c.rep.Profile = "runc", "default"
			err := probeVerdict(&c.rep)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("want pass, got %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("want an error naming %q, got %v", c.want, err)
			}
		})
	}
}
