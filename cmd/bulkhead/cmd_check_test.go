package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestCheckCommand runs `bulkhead check` as an operator would: the exit
// status says whether create would run the container, stdout carries the
// report, and the bundle is left as it was.
func TestCheckCommand(t *testing.T) {
	bin := binaries.Bulkhead(t)
	good := bundle.New(t, []string{"true"})
	bad := bundle.New(t, []string{"true"}, func(s *rspec.Spec) {
		s.Process.Cwd = "/proc/self"
	})
	root := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		dir      string
		wantCode int
		stdout   []string
		stderr   string
	}{
		{"bundle flag", []string{"check", "--bundle", good}, "", 0,
			[]string{"validation, not containment", "verdict: WOULD RUN", "+++ config.json (as bulkhead hands it to the backend)", `+			"uid": 65534,`}, ""},
		{"config path", []string{"check", filepath.Join(good, "config.json")}, "", 0, []string{"verdict: WOULD RUN"}, ""},
		{"current directory", []string{"check"}, good, 0, []string{"verdict: WOULD RUN"}, ""},
		{"refused", []string{"check", "--bundle", bad}, "", 1,
			[]string{"verdict: REFUSED", "rule cwd refuses process.cwd /proc/self"}, "would refuse this container (cwd)"},
		{"json", []string{"check", "--format", "json", "-b", bad}, "", 1, []string{`"runs": false`, `"notice": "validation, not containment`}, ""},
		{"unknown profile", []string{"check", "--profile", "nope", "-b", good}, "", 1, nil, `unknown profile "nope"`},
		{"bad format", []string{"check", "--format", "yaml", "-b", good}, "", 1, nil, "want text or json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(filepath.Join(good, "config.json"))
			r := binaries.Cmd{Dir: tc.dir}.Run(t, bin, append([]string{"--root", root}, tc.args...)...)
			code, stdout, stderr := r.Code, r.Stdout, r.Stderr
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q: %s", tc.stderr, stderr)
			}
			if tc.name == "json" {
				var v map[string]any
				if err := json.Unmarshal([]byte(stdout), &v); err != nil {
					t.Errorf("--format json output is not JSON: %v", err)
				}
			}
			after, _ := os.ReadFile(filepath.Join(good, "config.json"))
			if !bytes.Equal(before, after) {
				t.Fatal("check changed the bundle")
			}
		})
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("check left state in --root: %v", entries)
	}
}
