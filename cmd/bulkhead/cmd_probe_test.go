package main

import (
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/runtime"
)

// A skipped control fails `bulkhead probe` as a failed one does: neither
// is evidence that the control held.
func TestProbeVerdict(t *testing.T) {
	row := func(name, result string) runtime.ProbeControl {
		return runtime.ProbeControl{Name: name, Result: result, Pass: result == runtime.ProbePass}
	}
	cases := []struct {
		name string
		rep  runtime.ProbeReport
		want string // "" for a pass
	}{
		{"all held", runtime.ProbeReport{Finished: true, Pass: true, Controls: []runtime.ProbeControl{row("etc", "pass"), row("cpu", "pass")}}, ""},
		{"skipped", runtime.ProbeReport{Finished: true, Controls: []runtime.ProbeControl{row("workspace", "skipped"), row("cpu", "pass")}}, "skipped: workspace"},
		{"failed", runtime.ProbeReport{Finished: true, Controls: []runtime.ProbeControl{row("etc", "fail")}}, "did not hold: etc"},
		{"unfinished", runtime.ProbeReport{Controls: []runtime.ProbeControl{row("etc", "pass")}}, "did not finish"},
		// A report marked passing with a skipped row still fails.
		{"pass flag and a skip", runtime.ProbeReport{Finished: true, Pass: true, Controls: []runtime.ProbeControl{row("memory", "skipped")}}, "skipped: memory"},
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
