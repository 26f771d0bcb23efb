package runtime

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/cgroups"
)

// findCheck returns the check named name, failing the test without it.
func findCheck(t *testing.T, checks []DoctorCheck, name string) DoctorCheck {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q among %+v", name, checks)
	return DoctorCheck{}
}

// wantFail asserts a fail line whose finding and fix say what they must.
func wantFail(t *testing.T, c DoctorCheck, found, fix string) {
	t.Helper()
	if c.Status != StatusFail {
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

func noChangelog(string) (*Changelog, error) { return nil, nil }

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

// TestDoctorBackendVulnerable: a runc that runs, whose version predates a
// fix and whose changelog does not name it, fails that CVE's line with
// the fixed versions and runsc as the way out; the changelog decides.
func TestDoctorBackendVulnerable(t *testing.T) {
	cfg := doctorTestConfig(t)
	script := filepath.Join(t.TempDir(), "runc")
	body := "#!/bin/sh\ncase \"$1\" in --version) printf 'runc version 1.2.7\\ncommit: v1.2.7\\n';; *) exit 1;; esac\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Backends["runc"] = BackendConfig{Path: script}
	changelog := gzipFixture(t, "changelog-deb12u1.txt")
	fromFixture := func(string) (*Changelog, error) {
		text, err := readGzip(changelog)
		return &Changelog{Source: changelog, Package: "runc", Version: "1.2.7-1", Text: text}, err
	}
	b, checks := backendChecks(cfg, "runc", fromFixture)
	if b == nil {
		t.Fatal("a running backend was not returned")
	}
	for _, id := range []string{"CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"} {
		c := findCheck(t, checks, "backend runc "+id)
		wantFail(t, c, "does not name "+id, "1.2.8 / 1.3.3 / 1.4.0-rc.3")
		if !strings.Contains(c.Fix, "runsc") || !strings.Contains(c.Found, changelog) {
			t.Errorf("%s: %+v", id, c)
		}
	}
	if c := findCheck(t, checks, "backend runc CVE-2024-21626"); c.Status != StatusOK {
		t.Errorf("1.2.7 has the 2024 fix upstream: %+v", c)
	}
	// runc features exits 1 in the script: a warning, not a pass.
	if c := findCheck(t, checks, "backend runc features"); c.Status != StatusWarn {
		t.Errorf("features that failed: %+v", c)
	}
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
	if _, c := doctorConfig(g); c.Status != StatusOK {
		t.Errorf("a root-owned 0644 file: %+v", c)
	}
}

// v1Tree lays out a cgroup v1 fixture with the controllers named.
func v1Tree(t *testing.T, controllers ...string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string][]string{
		"pids":    {"cgroup.procs"},
		"memory":  {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"},
		"cpu":     {"cpu.cfs_period_us"},
		"devices": {"devices.list"},
	}
	for _, ctl := range controllers {
		if err := os.MkdirAll(filepath.Join(root, ctl), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files[ctl] {
			if err := os.WriteFile(filepath.Join(root, ctl, f), []byte("1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func TestDoctorMissingController(t *testing.T) {
	t.Run("v1", func(t *testing.T) {
		full := doctorCgroups([]cgroups.Option{cgroups.WithV1Root(v1Tree(t, "pids", "memory", "cpu", "devices"))})
		for _, c := range full {
			if c.Status != StatusOK {
				t.Errorf("complete v1 tree: %+v", c)
			}
		}
		checks := doctorCgroups([]cgroups.Option{cgroups.WithV1Root(v1Tree(t, "memory", "cpu", "devices"))})
		wantFail(t, findCheck(t, checks, "cgroup pids"), "no pids hierarchy", "mount -t cgroup -o pids")
		if c := findCheck(t, checks, "cgroup memory"); c.Status != StatusOK {
			t.Errorf("memory is there: %+v", c)
		}
	})
	t.Run("v1 without swap accounting", func(t *testing.T) {
		root := v1Tree(t, "pids", "memory", "cpu", "devices")
		if err := os.Remove(filepath.Join(root, "memory", "memory.memsw.limit_in_bytes")); err != nil {
			t.Fatal(err)
		}
		checks := doctorCgroups([]cgroups.Option{cgroups.WithV1Root(root)})
		wantFail(t, findCheck(t, checks, "cgroup memory swap"), "no swap accounting", "swapaccount=1")
	})
	t.Run("v2", func(t *testing.T) {
		root := t.TempDir()
		write := func(name, data string) {
			if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("cgroup.controllers", "cpuset cpu io memory pids\n")
		write("cgroup.subtree_control", "cpu memory\n")
		checks := doctorCgroups([]cgroups.Option{cgroups.WithV2Mountpoint(root)})
		wantFail(t, findCheck(t, checks, "cgroup pids"), "not enabled in", "echo +pids > "+root+"/cgroup.subtree_control")
		if c := findCheck(t, checks, "cgroup cpu"); c.Status != StatusOK {
			t.Errorf("cpu is enabled: %+v", c)
		}
	})
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
	rep := Doctor(context.Background(), g, DoctorOptions{Backend: "runc", Changelog: noChangelog,
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
	wantFail(t, rootOnlyPath("state directory", open), "lets group or others write", "chmod go-w "+open)
	wantFail(t, rootOnlyPath("audit log", filepath.Join(open, "log", "audit.jsonl")), open+": mode 0777", "chmod go-w")
	if c := rootOnlyPath("state directory", filepath.Join(dir, "new")); c.Status != StatusOK || !strings.Contains(c.Found, "absent") {
		t.Errorf("a new directory below a root-only one: %+v", c)
	}
}
