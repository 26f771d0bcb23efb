package egresshost

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// egressLine is what the tests read of an audit log's egress line.
type egressLine struct{ Outcome, Destination string }

// egressLines reads the audit log's egress lines.
func egressLines(t *testing.T, audit string) []egressLine {
	t.Helper()
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	var out []egressLine
	for _, line := range strings.Split(string(data), "\n") {
		var e struct{ Event, Outcome, Destination string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "egress" {
			out = append(out, egressLine{e.Outcome, e.Destination})
		}
	}
	return out
}

// Verdicts counts the audit log's egress lines by outcome.
func Verdicts(t *testing.T, audit string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, e := range egressLines(t, audit) {
		n[e.Outcome]++
	}
	return n
}

// AllowedDestinations lists the destinations of the audit log's allowed egress lines,
// once each.
func AllowedDestinations(t *testing.T, audit string) map[string]bool {
	t.Helper()
	return destinations(t, audit, "allowed")
}

// DeniedDestinations lists the destinations of the audit log's denied egress lines,
// once each.
func DeniedDestinations(t *testing.T, audit string) map[string]bool {
	t.Helper()
	return destinations(t, audit, "denied")
}

func destinations(t *testing.T, audit, outcome string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, e := range egressLines(t, audit) {
		if e.Outcome == outcome {
			out[e.Destination] = true
		}
	}
	return out
}
