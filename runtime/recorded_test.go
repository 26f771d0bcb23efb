package runtime

import (
	"errors"
	"os"
	"testing"
)

// TestNoRecordInRuncsWords: a verb on an id bulkhead has no record of
// says what runc says of it, and names no file of bulkhead's.
func TestNoRecordInRuncsWords(t *testing.T) {
	g := &Globals{Root: t.TempDir(), Config: "/nonexistent/bulkhead-config.toml"}
	_, err := lookupRecorded(g, "exec", "nosuch")
	if err == nil || err.Error() != "exec nosuch: container does not exist" || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lookupRecorded = %v, want runc's words wrapping os.ErrNotExist", err)
	}
}
