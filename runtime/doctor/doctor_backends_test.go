package doctor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/runtime/backend"
)

func findCheck(t *testing.T, checks []Check, name string) Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q among %+v", name, checks)
	return Check{}
}

// wantFail asserts a fail line whose finding and fix say what they must.
func wantFail(t *testing.T, c Check, found, fix string) {
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

// TestBackendVulnerable: a runc that runs, whose version predates a
// fix and whose changelog does not name it, fails that CVE's line with
// the fixed versions and runsc as the way out; the changelog decides.
func TestBackendVulnerable(t *testing.T) {
	script := filepath.Join(t.TempDir(), "runc")
	body := "#!/bin/sh\ncase \"$1\" in --version) printf 'runc version 1.2.7\\ncommit: v1.2.7\\n';; *) exit 1;; esac\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	changelog := gzipFixture(t, "changelog-deb12u1.txt")
	fromFixture := func(string) (*Changelog, error) {
		text, err := readGzip(changelog)
		return &Changelog{Source: changelog, Package: "runc", Version: "1.2.7-1", Text: text}, err
	}
	resolve := func() (*backend.Backend, error) { return &backend.Backend{Name: "runc", Path: script}, nil }
	b, checks := Backend("runc", script, []string{"default"}, resolve, fromFixture)
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

// TestBackendAbsentAndUnused: a configured backend that is not installed
// fails the doctor when a profile uses it, and is no finding at all when
// none does (crun on a Debian host); either way nothing is returned to
// check live.
func TestBackendAbsentAndUnused(t *testing.T) {
	resolve := func() (*backend.Backend, error) {
		return nil, fmt.Errorf("backend crun: %w", errors.New(`"crun" is not an executable`))
	}
	b, checks := Backend("crun", "crun", nil, resolve, nil)
	if c := findCheck(t, checks, "backend crun"); b != nil || c.Status != StatusOK || !strings.Contains(c.Found, "no profile uses it") {
		t.Errorf("an absent backend no profile uses: %+v", c)
	}
	b, checks = Backend("crun", "crun", []string{"fast"}, resolve, nil)
	if b != nil {
		t.Error("an absent backend was returned")
	}
	wantFail(t, findCheck(t, checks, "backend crun"), "used by profile fast", "install crun")
}
