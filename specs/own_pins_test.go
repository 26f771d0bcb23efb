package specs

import (
	"os"
	"path/filepath"
	"testing"
)

// A pin is bulkhead's own only where its container's record is beside it.
func TestIsOwnPin(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "bulkhead", "c1")
	for _, d := range []string{"pins/1/sub", "ws/0/lower/sub", "ws/0/merged", "ws/0/upper"} {
		if err := os.MkdirAll(filepath.Join(state, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	pin := filepath.Join(state, "pins", "1")
	if isOwnPin(pin) {
		t.Errorf("%s without a record: taken for a pin", pin)
	}
	if err := os.WriteFile(filepath.Join(state, "record.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		pin: true, filepath.Join(pin, "sub"): true,
		filepath.Join(state, "ws/0/lower"): true, filepath.Join(state, "ws/0/lower/sub"): true,
		filepath.Join(state, "ws/0/merged"): false, filepath.Join(state, "ws/0/upper"): false, filepath.Join(state, "ws"): false,
		filepath.Join(state, "pins"): false, filepath.Join(state, "bundle"): false, "/srv/bulkhead/c1/pins/1": false,
	} {
		if got := isOwnPin(p); got != want {
			t.Errorf("isOwnPin(%s) = %v, want %v", p, got, want)
		}
	}
}
