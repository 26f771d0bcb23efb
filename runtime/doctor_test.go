package runtime

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/runtime/doctor"
)

// findCheck returns the check named name, failing the test without it.
func findCheck(t *testing.T, checks []doctor.Check, name string) doctor.Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q among %+v", name, checks)
	return doctor.Check{}
}

// wantFail asserts a fail line whose finding and fix say what they must.
func wantFail(t *testing.T, c doctor.Check, found, fix string) {
	t.Helper()
	if c.Status != doctor.StatusFail {
		t.Errorf("%s: status %s, want fail (%s)", c.Name, c.Status, c.Found)
	}
	if !strings.Contains(c.Found, found) {
		t.Errorf("%s: found %q, want it to say %q", c.Name, c.Found, found)
	}
	if c.Fix == "" || !strings.Contains(c.Fix, fix) {
		t.Errorf("%s: fix %q, want it to say %q", c.Name, c.Fix, fix)
	}
}

func doctorTestConfig(t *testing.T) *Config {
	t.Helper()
	cfg, err := LoadConfig("", false)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func noChangelog(string) (*doctor.Changelog, error) { return nil, nil }

func TestDoctorBackendPathMissing(t *testing.T) {
	cfg := doctorTestConfig(t)
	missing := filepath.Join(t.TempDir(), "no-such-runc")
	cfg.Backends["runc"] = BackendConfig{Path: missing}
	b, checks := backendChecks(cfg, "runc", noChangelog)
	if b != nil {
		t.Error("a missing backend was returned for the live check")
	}
	wantFail(t, findCheck(t, checks, "backend runc"), "not found", "[backends.runc] path")
	if len(checks) != 1 {
		t.Errorf("a missing backend gets one line, got %+v", checks)
	}
}

func TestDoctorBackendExitsNonZero(t *testing.T) {
	cfg := doctorTestConfig(t)
	script := filepath.Join(t.TempDir(), "runc")
	body := "#!/bin/sh\necho 'runc: cannot load libseccomp.so.2' >&2\nexit 3\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Backends["runc"] = BackendConfig{Path: script}
	b, checks := backendChecks(cfg, "runc", noChangelog)
	if b != nil {
		t.Error("a backend that does not run was returned for the live check")
	}
	c := findCheck(t, checks, "backend runc")
	wantFail(t, c, "exited with status 3: runc: cannot load libseccomp.so.2", "reinstall it")
}

func TestDoctorConfigWritableByOthers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the file must be root's for its mode to be what is judged")
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("default_profile = \"default\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	g := &Globals{}
	g.SetConfig(path, true)
	cfg, c := doctorConfig(g)
	wantFail(t, c, "lets others than root write it", "chmod")
	if cfg == nil || cfg.DefaultProfile != "default" {
		t.Error("the built-in configuration does not stand in for a refused file")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, c := doctorConfig(g); c.Status != doctor.StatusOK {
		t.Errorf("a root-owned 0644 file: %+v", c)
	}
}

// TestDoctorReport: a run with a missing backend as configured by file
// says fail in its text and JSON, and Err names the failed check.
func TestDoctorReport(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the configuration file must be root's")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	body := "[backends.runc]\npath = \"" + filepath.Join(dir, "gone", "runc") + "\"\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &Globals{Root: filepath.Join(dir, "state")}
	g.SetConfig(path, true)
	rep := Doctor(context.Background(), g, doctor.Options{Backend: "runc", Changelog: noChangelog,
		DockerConfig: filepath.Join(dir, "daemon.json"), ContainerdConfig: filepath.Join(dir, "config.toml.ctd")})
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	if !strings.Contains(text.String(), "fail  backend runc") || !strings.Contains(text.String(), "-- fix: install runc") {
		t.Errorf("text lacks the fail line and its fix")
	}
	if !strings.Contains(js.String(), `"status": "fail"`) || !strings.Contains(js.String(), `"fail": 1`) {
		t.Errorf("json:\n%s", js.String())
	}
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "backend runc") {
		t.Errorf("Err() = %v", err)
	}
}

// TestDoctorDirs: a state directory others can write fails; one that does
// not exist yet is judged by the directory it will be created in.
func TestDoctorDirs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the directories must be root's")
	}
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	wantFail(t, doctor.RootOnlyPath("state directory", open), "lets group or others write", "chmod go-w "+open)
	wantFail(t, doctor.RootOnlyPath("audit log", filepath.Join(open, "log", "audit.jsonl")), open+": mode 0777", "chmod go-w")
	if c := doctor.RootOnlyPath("state directory", filepath.Join(dir, "new")); c.Status != doctor.StatusOK || !strings.Contains(c.Found, "absent") {
		t.Errorf("a new directory below a root-only one: %+v", c)
	}
}
