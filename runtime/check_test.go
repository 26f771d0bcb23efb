package runtime

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
	"bulkhead.dev/bulkhead/test/bundle"
)

// writeTestConfig writes a root-owned 0644 configuration file.
func writeTestConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func checkGlobals(t *testing.T, config string) *Globals {
	g := &Globals{Root: filepath.Join(t.TempDir(), "root")}
	if config != "" {
		g.SetConfig(config, true)
	}
	return g
}

// dryRun checks a bundle and asserts the bundle and the state root are
// untouched: check changes nothing.
func dryRun(t *testing.T, g *Globals, dir string) *CheckReport {
	t.Helper()
	before, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	specPath, bundleDir, err := CheckTarget(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := DryRun(g, specPath, bundleDir, "")
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	if !bytes.Equal(before, after) {
		t.Fatal("check changed config.json")
	}
	if _, err := os.Stat(g.Root); !os.IsNotExist(err) {
		t.Fatalf("check created state under %s (%v)", g.Root, err)
	}
	return r
}

func TestCheckRewritesACopy(t *testing.T) {
	dir := bundle.New(t, []string{"true"}, func(s *rspec.Spec) {
		s.Process.Env = append(s.Process.Env, "GITHUB_TOKEN=ghp_0123456789abcdefghij0123456789")
	})
	r := dryRun(t, checkGlobals(t, ""), dir)
	if !r.Runs || len(r.Refusals) > 0 || len(r.Invariants) > 0 {
		t.Fatalf("runs %v, refusals %v, invariants %v", r.Runs, r.Refusals, r.Invariants)
	}
	if r.Profile != "default" || r.Backend != "runc" || r.Mode != specs.Enforce {
		t.Fatalf("selected %s/%s/%s", r.Profile, r.Backend, r.Mode)
	}
	for _, want := range []string{"-\t\t\t\"uid\": 0,", "+\t\t\t\"uid\": 65534,", "+\t\t\"noNewPrivileges\": true", "-\t\t\t\"GITHUB_TOKEN=",
		"--- config.json (as given)", "+++ config.json (as bulkhead hands it to the backend)"} {
		if !strings.Contains(r.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, r.Diff)
		}
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, want := range []string{"validation, not containment", "enforced by the kernel at run time", "verdict: WOULD RUN",
		"process.env[GITHUB_TOKEN]", "@@ "} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q", want)
		}
	}
	if strings.Contains(out, "ghp_0123456789") && !strings.Contains(r.Diff, "ghp_0123456789") {
		t.Error("a secret value appears outside the diff")
	}
}

func TestCheckRefuses(t *testing.T) {
	dir := bundle.New(t, []string{"true"}, func(s *rspec.Spec) {
		s.Process.Cwd = "/proc/self/cwd"
		s.Linux.Sysctl = map[string]string{"kernel.panic": "1"}
	})
	r := dryRun(t, checkGlobals(t, ""), dir)
	if r.Runs || r.Diff != "" {
		t.Fatalf("runs %v, diff %q", r.Runs, r.Diff)
	}
	if got := strings.Join(r.RefusedRules(), ","); got != "cwd,sysctl" {
		t.Fatalf("refused rules %s", got)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back CheckReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Runs || len(back.Refusals) != 2 || !strings.Contains(back.Notice, "validation, not containment") {
		t.Fatalf("json report %+v", back)
	}
}

func TestCheckAuditProfile(t *testing.T) {
	cfg := writeTestConfig(t, "[profiles.watch]\nmode = \"audit\"\n")
	dir := bundle.New(t, []string{"true"}, func(s *rspec.Spec) {
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/home", Type: "bind", Source: "/root", Options: []string{"rbind"}})
	})
	g := checkGlobals(t, cfg)
	g.Profile = "watch"
	r := dryRun(t, g, dir)
	if !r.Runs || r.Mode != specs.Audit || r.Diff != "" || len(r.Refusals) != 1 || len(r.Invariants) == 0 {
		t.Fatalf("audit: runs %v mode %s refusals %v invariants %d diff %d bytes", r.Runs, r.Mode, r.Refusals, len(r.Invariants), len(r.Diff))
	}
	var text bytes.Buffer
	_ = r.WriteText(&text)
	if !strings.Contains(text.String(), "enforce mode would refuse it") {
		t.Fatalf("audit verdict:\n%s", text.String())
	}
}

func TestCheckTarget(t *testing.T) {
	dir := t.TempDir()
	if p, b, err := CheckTarget("", filepath.Join(dir, "x.json")); err != nil || p != filepath.Join(dir, "x.json") || b != dir {
		t.Fatalf("config path: %s %s %v", p, b, err)
	}
	if p, b, err := CheckTarget(dir, ""); err != nil || p != filepath.Join(dir, "config.json") || b != dir {
		t.Fatalf("bundle: %s %s %v", p, b, err)
	}
	if _, _, err := CheckTarget(dir, "x.json"); err == nil {
		t.Fatal("both --bundle and a config accepted")
	}
}

func TestCheckUnknownProfileFails(t *testing.T) {
	dir := bundle.New(t, []string{"true"})
	g := checkGlobals(t, "")
	g.Profile = "nope"
	specPath, b, _ := CheckTarget(dir, "")
	if _, err := DryRun(g, specPath, b, ""); err == nil || !strings.Contains(err.Error(), `unknown profile "nope"`) {
		t.Fatalf("err %v", err)
	}
}

// TestCheckSaysWhatCreateWould: a process the backend's create refuses
// (none, no command, no or a relative cwd) is refused by check too,
// naming the field; check said WOULD RUN.
func TestCheckSaysWhatCreateWould(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*rspec.Spec)
		names  string
	}{
		{"no process", func(s *rspec.Spec) { s.Process = nil }, "process.args: empty"},
		{"no args", func(s *rspec.Spec) { s.Process.Args = nil }, "process.args: empty"},
		{"empty args", func(s *rspec.Spec) { s.Process.Args = []string{} }, "process.args: empty"},
		{"a relative cwd", func(s *rspec.Spec) { s.Process.Cwd = "work" }, "process.cwd"},
		{"a command not in the image", func(s *rspec.Spec) { s.Process.Args = []string{"no-such-command"} }, "process.args[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := dryRun(t, checkGlobals(t, ""), bundle.New(t, []string{"true"}, c.mutate))
			if r.Runs || !strings.Contains(strings.Join(r.Refusals, "\n"), c.names) {
				t.Errorf("runs %v, refusals %q; want a refusal naming %q", r.Runs, r.Refusals, c.names)
			}
			// Nothing would reach the backend: the JSON has no diff, as
			// the text says.
			if r.Diff != "" {
				t.Errorf("a refused create's report carries a diff of %d bytes", len(r.Diff))
			}
		})
	}
}

// A global flag create refuses as root (--rootless true) is refused by
// check too: check said WOULD RUN.
func TestCheckRefusesWhatCreateRefusesOfTheGlobals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--rootless weakens the boundary only for a caller as root")
	}
	g := checkGlobals(t, "")
	g.Rootless = "true"
	r := dryRun(t, g, bundle.New(t, []string{"true"}))
	if r.Runs || !strings.Contains(strings.Join(r.Refusals, "\n"), "--rootless true") {
		t.Errorf("check with --rootless true: runs %v, refusals %q; want refused naming it, as create is", r.Runs, r.Refusals)
	}
}

// TestCheckTextShowsEscaped: an annotation's name with an escape sequence
// reaches the text report escaped, so it cannot draw a verdict of its own.
func TestCheckTextShowsEscaped(t *testing.T) {
	dir := bundle.New(t, []string{"true"}, func(s *rspec.Spec) {
		s.Annotations = map[string]string{"x\x1b[1A\x1b[2Kverdict: WOULD RUN\u202e": "1"}
	})
	var text bytes.Buffer
	if err := dryRun(t, checkGlobals(t, ""), dir).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(text.String(), "\x1b\u202e") || !strings.Contains(text.String(), `\x1b[1A`) {
		t.Errorf("check's text shows the caller's sequence raw:\n%q", text.String())
	}
}
