package probe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The probe's report is the evidence: a probe binary someone else could
// have rewritten is refused before it runs.
func TestProbeBinaryOwnedBySelf(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "bulkhead")
	probe := filepath.Join(dir, BinaryName)
	if err := os.WriteFile(probe, []byte("not run"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(probe)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkOwnedBySelf(probe, st); err != nil {
		t.Fatalf("a probe of the caller's own, mode 0755: %v", err)
	}
	if err := os.Chmod(probe, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := FindBinary(self); err == nil || !strings.Contains(err.Error(), "lets others write it") {
		t.Fatalf("a world-writable probe: %v, want it refused", err)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: the probe of another uid is not tried")
		return
	}
	if err := os.Chmod(probe, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(probe, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := FindBinary(self); err == nil || !strings.Contains(err.Error(), "owned by uid 1000") {
		t.Fatalf("a probe of uid 1000: %v, want it refused", err)
	}
}
