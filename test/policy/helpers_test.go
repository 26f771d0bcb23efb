package policy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// result is what one bulkhead invocation printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

func needRunc(t *testing.T) {
	t.Helper()
	binaries.NeedRoot(t, "runc")
}

// bulkhead runs the binary; env entries are added to the test's
// environment.
func bulkhead(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	r := binaries.Cmd{Stdin: stdin, Env: env}.Run(t, binaries.Bulkhead(t), args...)
	return result{r.Stdout, r.Stderr, r.Code}
}

func must(t *testing.T, env []string, args ...string) string {
	t.Helper()
	r := bulkhead(t, "", env, args...)
	if r.code != 0 {
		t.Fatalf("bulkhead %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// lastErrorLine is the msg of the last "level":"error" line of a
// --log-format json log: what containerd and dockerd show the user.
func lastErrorLine(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("log: %v", err)
	}
	defer f.Close()
	last := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", sc.Text(), err)
		}
		if line.Level == "error" {
			last = line.Msg
		}
	}
	return last
}

// writeConfig writes a root-owned 0644 bulkhead configuration.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sections splits probe output into "== name" sections.
func sections(out string) map[string]string {
	m := map[string]string{}
	name := ""
	for _, l := range strings.Split(out, "\n") {
		if n, ok := strings.CutPrefix(l, "== "); ok {
			name = n
			continue
		}
		if name != "" {
			m[name] += l + "\n"
		}
	}
	return m
}

// statusField returns the value of one /proc/PID/status line.
func statusField(status, key string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// assertRefused: the run exited non-zero, named the rule on stderr and as
// the last error line of the --log file (what engines show), and the
// workload, whose output starts with "== ", never ran.
func assertRefused(t *testing.T, r result, logFile, rule string) {
	t.Helper()
	if r.code == 0 {
		t.Fatalf("ran, want refused by rule %s\n%s", rule, r.stdout)
	}
	want := "rule " + rule
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not name %q: %s", want, r.stderr)
	}
	if last := lastErrorLine(t, logFile); !strings.Contains(last, want) {
		t.Errorf("last error line of --log does not name %q: %q", want, last)
	}
	if strings.Contains(r.stdout, "== ") {
		t.Error("the workload ran")
	}
}

// hostileBundle writes a busybox bundle running script in a new temporary
// directory, with mutate applied to a spec that has linux.resources.
func hostileBundle(t *testing.T, script string, mutate func(*rspec.Spec)) string {
	t.Helper()
	dir := t.TempDir()
	if err := bundle.Make(dir, []string{"sh", "-c", script}, func(s *rspec.Spec) {
		if s.Linux.Resources == nil {
			s.Linux.Resources = &rspec.LinuxResources{}
		}
		mutate(s)
	}); err != nil {
		t.Fatal(err)
	}
	return dir
}
