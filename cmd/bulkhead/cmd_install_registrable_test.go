package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An engine runs the registered binary as root for every container: one
// another user could replace is not registered.
func TestRegistrableOnlyRootsAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown the binary's directory")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "bulkhead")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := registrable(exe); err != nil {
		t.Fatalf("root's binary in root's directory: %v", err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := registrable(exe); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("a binary in a directory uid 65534 owns: %v, want refused naming it", err)
	}
}
