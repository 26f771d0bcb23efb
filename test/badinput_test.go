package test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	bhstate "bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestBadInput: every kind of bad input gets one clear line on stderr, a
// non-zero exit and no panic, and leaves nothing behind.
func TestBadInput(t *testing.T) {
	needRoot(t, "runc")
	good := bundle.New(t, []string{"true"})
	malformed := bundle.New(t, []string{"true"})
	if err := os.WriteFile(filepath.Join(malformed, "config.json"), []byte(`{"ociVersion": "1.0.2", "process": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	unknownKey := bundle.New(t, []string{"true"})
	data, _ := os.ReadFile(filepath.Join(unknownKey, "config.json"))
	if err := os.WriteFile(filepath.Join(unknownKey, "config.json"), []byte(strings.Replace(string(data), "{", `{"processs": {},`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Root reads any file whatever its mode; a directory cannot be read
	// as one.
	unreadableConfig := t.TempDir()
	badToml := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(badToml, []byte("default_profile = \"default\"\nno_such_key = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// What root would read without end, block on, or read for the
	// bundle's author: a config.json that is no regular file of its own.
	zeroes, fifo, shadow, huge := bundle.New(t, []string{"true"}), bundle.New(t, []string{"true"}), bundle.New(t, []string{"true"}), bundle.New(t, []string{"true"})
	for b, link := range map[string]string{zeroes: "/dev/zero", shadow: "/etc/shadow"} {
		if err := os.Remove(filepath.Join(b, "config.json")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(link, filepath.Join(b, "config.json")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(fifo, "config.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(fifo, "config.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(huge, "config.json"), 64<<20); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string // a phrase the one line must contain
	}{
		{"missing bundle", []string{"create", "--bundle", filepath.Join(dir, "nope"), "x1"}, "no such file"},
		{"bundle without config.json", []string{"create", "--bundle", t.TempDir(), "x15"}, "has no config.json: pass the bundle's directory with --bundle"},
		{"malformed config.json", []string{"create", "--bundle", malformed, "x2"}, "config.json"},
		{"unknown field in config.json", []string{"create", "--bundle", unknownKey, "x3"}, "processs"},
		{"unknown backend", []string{"--backend", "nosuch", "create", "--bundle", good, "x4"}, `unknown backend "nosuch"`},
		{"unknown profile", []string{"--profile", "nosuch", "create", "--bundle", good, "x5"}, `unknown profile "nosuch"`},
		{"unknown verb", []string{"frobnicate", "x6"}, `unknown command "frobnicate"`},
		{"unknown flag", []string{"create", "--frobnicate", "x7"}, "frobnicate"},
		{"unreadable config file", []string{"--config", unreadableConfig, "create", "--bundle", good, "x8"}, unreadableConfig},
		{"config file missing", []string{"--config", filepath.Join(dir, "none.toml"), "create", "--bundle", good, "x9"}, "none.toml"},
		{"unknown config key", []string{"--config", badToml, "create", "--bundle", good, "x10"}, "no_such_key"},
		{"invalid id", []string{"create", "--bundle", good, "../escape"}, "invalid container id"},
		{"no id", []string{"create", "--bundle", good}, "container id"},
		{"config.json a symlink to /dev/zero", []string{"create", "--bundle", zeroes, "x11"}, "is a symlink"},
		{"config.json a symlink to /etc/shadow", []string{"create", "--bundle", shadow, "x12"}, "is a symlink"},
		{"config.json a FIFO", []string{"create", "--bundle", fifo, "x13"}, "not a regular file"},
		{"config.json a FIFO, checked", []string{"check", "--bundle", fifo}, "not a regular file"},
		{"config.json of 64 MiB", []string{"create", "--bundle", huge, "x14"}, "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := stateRoot(t)
			r := bulkhead(t, "", append([]string{"--root", root}, c.args...)...)
			if r.code == 0 {
				t.Fatalf("exit 0, want non-zero; stderr %q", r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 {
				t.Fatalf("stderr has %d lines, want one:\n%s", len(lines), r.stderr)
			}
			if !strings.Contains(lines[0], c.want) || !strings.HasPrefix(lines[0], "bulkhead: ") {
				t.Fatalf("stderr %q, want a line starting with \"bulkhead: \" naming %q", lines[0], c.want)
			}
			if strings.Contains(r.stderr, "panic") || r.stdout != "" {
				t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
			}
			entries, _ := os.ReadDir(filepath.Join(root, "bulkhead"))
			for _, e := range entries {
				if e.Name() != bhstate.LockName {
					t.Errorf("left behind: %s", e.Name())
				}
			}
		})
	}
}
