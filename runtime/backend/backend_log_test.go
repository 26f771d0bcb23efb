package backend

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLastBackendError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.json")
	old := `{"level":"error","msg":"from an earlier call","time":"2026-01-01T00:00:00Z"}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	offset := LogSize(path)
	if got := LastError(path, offset); got != "" {
		t.Errorf("nothing written since the offset, got %q", got)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	lines := `{"level":"info","msg":"bulkhead: create x","time":"2026-01-01T00:00:01Z"}
{"level":"error","msg":"runc create failed: unable to start container process: error setting rlimit type 6: operation not permitted","time":"2026-01-01T00:00:01Z"}
{"level":"warning","msg":"later warning","time":"2026-01-01T00:00:01Z"}
`
	if _, err := f.WriteString(lines); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want := "runc create failed: unable to start container process: error setting rlimit type 6: operation not permitted"
	if got := LastError(path, offset); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := LastError(filepath.Join(t.TempDir(), "missing"), 0); got != "" {
		t.Errorf("missing log: %q", got)
	}
	text := filepath.Join(t.TempDir(), "log.txt")
	if err := os.WriteFile(text, []byte(`time="x" level=error msg="runsc: cannot start"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := LastError(text, 0); got != "runsc: cannot start" {
		t.Errorf("text format: %q", got)
	}
}
