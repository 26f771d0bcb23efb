package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestLogFormat: with --log FILE --log-format json, as containerd passes
// them, every line bulkhead adds is a JSON object with runc's lowercase
// "level", "msg" and "time"; a refusal is the last "error" line, and
// stdout stays empty for create.
func TestLogFormat(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	log := filepath.Join(t.TempDir(), "log.json")
	b := bundle.New(t, []string{"true"})
	id := uniqueID("log")
	r := bulkhead(t, "", "--root", root, "--log", log, "--log-format", "json", "create", "--bundle", b, id)
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("create: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	must(t, "--root", root, "delete", "--force", id)

	refused := bundle.New(t, []string{"true"})
	s, err := bundle.Read(refused)
	if err != nil {
		t.Fatal(err)
	}
	s.Linux.Sysctl = map[string]string{"kernel.core_pattern": "|/tmp/x"}
	if err := bundle.Write(refused, s); err != nil {
		t.Fatal(err)
	}
	r = bulkhead(t, "", "--root", root, "--log", log, "--log-format", "json", "create", "--bundle", refused, id+"-refused")
	if r.code == 0 {
		t.Fatal("a kernel.core_pattern sysctl was not refused")
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var last map[string]any
	for _, l := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(l), &entry); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		for _, key := range []string{"level", "msg", "time"} {
			if _, ok := entry[key]; !ok {
				t.Fatalf("log line without %q: %q", key, l)
			}
		}
		if entry["level"] == "error" {
			last = entry
		}
	}
	if msg, _ := last["msg"].(string); !strings.Contains(msg, "rule sysctl") || !strings.Contains(msg, "kernel.core_pattern") {
		t.Fatalf("the last error line does not name the rule and the field: %v", last)
	}
}

// TestUnwritableLog: a log path that cannot be opened is bad input, as it
// is to runc and runsc: one line on stderr names it, the exit is not 0,
// and no container was made.
func TestUnwritableLog(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	b := bundle.New(t, []string{"true"})
	id := uniqueID("nolog")
	r := bulkhead(t, "", "--root", root, "--log", "/nonexistent/dir/log.json", "run", "--bundle", b, id)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code == 0 || len(lines) != 1 || !strings.Contains(lines[0], "/nonexistent/dir/log.json") {
		t.Fatalf("run with an unwritable log: exit %d, stderr %q; want one line naming the path and a non-zero exit", r.code, r.stderr)
	}
	if l := bulkhead(t, "", "--root", root, "list", "-q"); l.code != 0 || strings.TrimSpace(l.stdout) != "" {
		t.Fatalf("after a refused run, list says (exit %d): %q", l.code, l.stdout)
	}
	if _, err := exec.Command("runc", "--root", filepath.Join(root, "runc"), "state", id).CombinedOutput(); err == nil {
		t.Fatalf("runc has a container %s after a run refused for its log", id)
	}
}

// TestInvokedAsBulkheadRunsc: the bulkhead-runsc symlink makes runsc the
// backend without any flag, as `docker run --runtime=bulkhead-runsc` does.
func TestInvokedAsBulkheadRunsc(t *testing.T) {
	needRoot(t, "runsc")
	root := stateRoot(t)
	b := bundle.New(t, []string{"sleep", "60"})
	id := uniqueID("argv0")
	if r := (binaries.Cmd{}).Run(t, filepath.Join(binaries.Dir(t), "bulkhead-runsc"), "--root", root, "create", "--bundle", b, id); r.Code != 0 {
		t.Fatalf("bulkhead-runsc create: exit %d: %s", r.Code, r.Stderr)
	}
	t.Cleanup(func() { bulkhead(t, "", "--root", root, "delete", "--force", id) })
	if out, err := exec.Command("runsc", "--root", filepath.Join(root, "runsc"), "state", id).CombinedOutput(); err != nil {
		t.Fatalf("runsc does not know the container bulkhead-runsc created: %v\n%s", err, out)
	}
}
