package test

import (
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A gVisor checkpoint image restores its tasks with the identity,
// capabilities and seccomp filter they had, which no check from the host
// sees inside the sandbox: an enforced profile refuses restore on runsc,
// whatever the image holds, and leaves nothing behind.
func TestRestoreOnRunscRefused(t *testing.T) {
	needRoot(t, "runsc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runsc"}
	id := uniqueID("restore-runsc")
	r := bulkhead(t, "", append(g, "restore", "--image-path", t.TempDir(), "--bundle", bundle.New(t, []string{"true"}), id)...)
	if r.code == 0 {
		bulkhead(t, "", append(g, "delete", "--force", id)...)
		t.Fatal("restore on runsc under the default profile was handed over")
	}
	if !strings.Contains(r.stderr, "restore on runsc") {
		t.Fatalf("refused, but not for restoring on runsc:\n%s", r.stderr)
	}
	assertGone(t, root, "runsc", id)
}
