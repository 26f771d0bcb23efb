package egresshost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Brokers lists the pids of the egress brokers of container id: the
// broker verb, at each stage, ends its command line with the id (the
// serving broker keeps no other of bulkhead's flags).
func Brokers(id string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if len(args) > 2 && args[len(args)-1] == id && slices.Contains(args, "broker") && !slices.Contains(args, "--spawn") {
			pids = append(pids, pid)
		}
	}
	return pids
}

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
