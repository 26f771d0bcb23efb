package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The caller's environment is not the backend's: what runc, the dynamic
// loader or libcontainer would act on is gone, what bulkhead reads stays,
// and PATH is the system's.
func TestScrubEnvironment(t *testing.T) {
	gone := []string{"TMPDIR", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "LD_PRELOAD", "_LIBCONTAINER_INITPIPE", "GODEBUG", "XDG_RUNTIME_DIR", "SOMETHING_NO_RULE_NAMES"}
	for _, k := range gone {
		t.Setenv(k, "1")
	}
	t.Setenv("BULKHEAD_CONFIG", "/etc/bulkhead/x.toml")
	t.Setenv("PATH", "/home/someone/bin:/usr/sbin:/usr/bin")
	ScrubEnvironment()
	for _, k := range gone {
		if v, ok := os.LookupEnv(k); ok {
			t.Errorf("%s=%s kept", k, v)
		}
	}
	if os.Getenv("BULKHEAD_CONFIG") != "/etc/bulkhead/x.toml" {
		t.Errorf("BULKHEAD_CONFIG %q: want it kept", os.Getenv("BULKHEAD_CONFIG"))
	}
	if os.Getenv("PATH") != SystemPath {
		t.Errorf("PATH %q: want the system's, not the caller's", os.Getenv("PATH"))
	}
}

// A backend named without a path is looked up in the system's
// directories: a "runc" planted in a directory of the caller's PATH is
// never the backend.
func TestResolveBackendIgnoresCallersPath(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"sh", "bulkhead-planted-backend"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	cfg := &Config{Backends: map[string]BackendConfig{"sh": {Path: "sh", Kind: "runc"}, "planted": {Path: "bulkhead-planted-backend", Kind: "runc"}}}
	b, err := cfg.ResolveBackend("sh")
	if err != nil || filepath.Dir(b.Path) == dir || !strings.Contains(SystemPath, filepath.Dir(b.Path)) {
		t.Errorf("sh resolved to %v (%v), want the system's", b, err)
	}
	if b, err := cfg.ResolveBackend("planted"); err == nil {
		t.Errorf("a backend only on the caller's PATH resolved to %s", b.Path)
	}
}
