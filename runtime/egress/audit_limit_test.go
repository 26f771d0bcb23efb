package egress

import (
	"strings"
	"testing"
	"time"
)

// A job that makes connections as fast as it can, with names as long as a
// request line allows, gets a bounded number of bounded lines, and the
// count of the rest.
func TestLimitAudit(t *testing.T) {
	var lines []Connection
	// A clock that stands still: all 1000 come at once, however long the
	// machine takes to run the loop.
	start := time.Now()
	l := newAuditLimit(func(c Connection) { lines = append(lines, c) }, func() time.Time { return start })
	long := strings.Repeat("b", 60000) + ".x:1"
	for i := 0; i < 1000; i++ {
		l.audit(Connection{Destination: long, Verdict: "denied", Reason: long + " is not in the profile's egress list"})
	}
	l.flush()
	if len(lines) != auditBurst+1 {
		t.Fatalf("%d lines for 1000 connections at once, want %d and a count", len(lines), auditBurst)
	}
	last := lines[len(lines)-1]
	if last.Verdict != "left out" || !strings.Contains(last.Reason, "denied") {
		t.Fatalf("last line %+v, want the count of the lines left out", last)
	}
	for _, l := range lines {
		if len(l.Destination) > auditFieldMax+32 || len(l.Reason) > auditFieldMax+32 {
			t.Fatalf("a line of %d and %d bytes, want fields cut to %d", len(l.Destination), len(l.Reason), auditFieldMax)
		}
	}
}
