package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestLineShowsWhatTheJobChose: a destination the job asked for with a
// bidi override and a zero-width space reads back exactly from the line,
// and the file holds neither: a denied line cannot show reversed or pass
// for a listed host's.
func TestLineShowsWhatTheJobChose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	dest := "allowed.example.com\u202emoc.live\u200b:443"
	if err := Write(path, &Entry{Event: "egress", ID: "job", Outcome: "denied", Destination: dest}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("\u202e")) || bytes.Contains(data, []byte("\u200b")) {
		t.Errorf("the audit line holds the job's hidden runes raw: %q", data)
	}
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil || e.Destination != dest {
		t.Errorf("the audit line reads back %q (%v), want %q", e.Destination, err, dest)
	}
}
