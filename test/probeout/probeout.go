// Package probeout reads what bulkhead-probe prints inside a container
// started by an engine: one JSON line per control, then
// {"control":"done"}.
package probeout

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// Line is one control's result.
type Line struct {
	Control  string `json:"control"`
	Observed string `json:"observed"`
	Layer    string `json:"layer"`
	Pass     bool   `json:"pass"`
	Skipped  bool   `json:"skipped"`
	Detail   string `json:"detail"`
}

// Parse reads the probe's lines up to the done line; done reports whether
// it came (the probe did not die first). A line that is not JSON becomes
// a failed control, so it cannot pass unnoticed.
func Parse(out string) (lines []Line, done bool) {
	s := bufio.NewScanner(strings.NewReader(out))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		text := strings.TrimSpace(s.Text())
		if !strings.HasPrefix(text, "{") {
			continue
		}
		var l Line
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			lines = append(lines, Line{Control: "(not JSON)", Detail: text})
			continue
		}
		if l.Control == "done" {
			return lines, true
		}
		lines = append(lines, l)
	}
	return lines, false
}

// AssertPasses checks that the probe ran to its done line, reported at
// least min controls, and that every control passed.
func AssertPasses(t testing.TB, out string, min int) {
	t.Helper()
	lines, done := Parse(out)
	if !done {
		t.Fatalf("probe did not finish (no done line):\n%s", out)
	}
	if len(lines) < min {
		t.Fatalf("probe reported only %d controls:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if !l.Pass {
			t.Errorf("control %s FAIL: observed %q, layer %q: %s", l.Control, l.Observed, l.Layer, l.Detail)
		}
	}
	t.Logf("probe: %d controls passed", len(lines))
}
