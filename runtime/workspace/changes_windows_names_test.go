package workspace

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWindowsDriveAndStreamNamesNeverExported: a name with a colon is a
// drive to Windows (C:/Users/x/... is that absolute path to an extractor
// there) or another file's stream (a.txt::$DATA is a.txt). No format
// carries one, as a name or as a link's target, and each is named as
// left out.
func TestWindowsDriveAndStreamNamesNeverExported(t *testing.T) {
	h := newHostileWorkspace(t)
	h.file("C:/Users/reviewer/AppData/Startup/evil.bat", []byte("evil\n"))
	h.file("D:evil.txt", []byte("evil\n"))
	h.file("keep.txt::$DATA", []byte("evil\n"))
	h.file("mine.txt", []byte("MINE\n"))
	if err := os.Symlink("C:/Windows/System32", filepath.Join(h.upperDir, "sys")); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"patch", "json", "tar"} {
		out, rejected, err := h.export(format, defaultChangeLimits)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		// json is the report: it names what was left out, and why.
		if format != "json" && (strings.Contains(out, "evil") || strings.Contains(out, "System32")) {
			t.Errorf("%s carries a drive or a stream:\n%s", format, out)
		}
		if format != "json" && !strings.Contains(out, "MINE") {
			t.Errorf("%s lost the job's ordinary file:\n%s", format, out)
		}
		joined := strings.Join(rejected, "\n")
		for _, name := range []string{"C:", "D:evil.txt", "keep.txt::$DATA", "sys"} {
			if !strings.Contains(joined, name) {
				t.Errorf("%s: %s not named as left out: %q", format, name, rejected)
			}
		}
	}
	// The copy kept at delete leaves them out too.
	cfg := h.keep()
	var kept bytes.Buffer
	rejected, err := Export(cfg, "/run/root-a", "c1", "tar", &kept)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(kept.String(), "evil") || strings.Contains(kept.String(), "System32") || !strings.Contains(kept.String(), "MINE") {
		t.Errorf("the kept tar:\n%s", kept.String())
	}
	if joined := strings.Join(rejected, "\n"); !strings.Contains(joined, "D:evil.txt") || !strings.Contains(joined, "sys") {
		t.Errorf("the kept tar does not name what it left out: %q", rejected)
	}
}
