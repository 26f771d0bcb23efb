package egresshost

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// Verdicts counts the audit log's egress lines by outcome.
func Verdicts(t *testing.T, audit string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		var e struct{ Event, Outcome string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "egress" {
			n[e.Outcome]++
		}
	}
	return n
}

// AllowedDestinations lists the destinations of the audit log's allowed egress lines,
// once each.
func AllowedDestinations(t *testing.T, audit string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		var e struct{ Event, Outcome, Destination string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "egress" && e.Outcome == "allowed" {
			out[e.Destination] = true
		}
	}
	return out
}
