package egress

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/runtime/state"
)

// TestAuditOverheadCoversTheLine: the egress audit budget charges a line
// its job-chosen fields and auditOverhead; what is written must never be
// more. A fixed 256 bytes undercounted a line of a 64-character id and a
// long profile name, so the documented daily bound did not hold.
func TestAuditOverheadCoversTheLine(t *testing.T) {
	rec := &state.Record{ID: strings.Repeat("0123456789abcdef", 4), Profile: "install-with-a-long-profile-name-" + strings.Repeat("p", 40),
		Backend: "runsc", Mode: "enforce"}
	log, err := os.Create(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	quoted := func(s string) int { b, _ := json.Marshal(s); return len(b) }
	for _, c := range []Connection{
		{Destination: "registry.npmjs.org:443", Address: "104.16.0.35:443", Verdict: "allowed", Sent: 1 << 40, Received: 1 << 50},
		{Destination: "a&b.example:80", Verdict: "denied", Reason: `a "quoted" reason`},
		{Verdict: "left out", Reason: "counted"},
	} {
		before, _ := log.Seek(0, 2)
		auditConnection(log, rec, c)
		after, _ := log.Seek(0, 2)
		charged := auditOverhead(rec) + quoted(c.Destination) + quoted(c.Address) + quoted(c.Reason)
		if written := int(after - before); written == 0 || written > charged {
			t.Errorf("%+v: a line of %d bytes charged %d", c, written, charged)
		}
	}
}
