package policy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/runtime/audit"
	"bulkhead.dev/bulkhead/specs"
	"bulkhead.dev/bulkhead/test/bundle"
)

// auditConfig is a configuration whose default profile only records:
// BULKHEAD_CONFIG points at it, as an administrator trying the policy on a
// fleet would.
func auditConfig(t *testing.T) (env []string, auditLog string) {
	t.Helper()
	auditLog = filepath.Join(t.TempDir(), "audit.jsonl")
	cfg := writeConfig(t, fmt.Sprintf("default_profile = %q\naudit_log = %q\n\n[profiles.observe]\nmode = \"audit\"\n", "observe", auditLog))
	return []string{"BULKHEAD_CONFIG=" + cfg}, auditLog
}

// readAudit parses every line of the audit log; a line that is not one
// JSON object fails the test.
func readAudit(t *testing.T, path string) ([]audit.Entry, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	var entries []audit.Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	for n := 1; sc.Scan(); n++ {
		var e audit.Entry
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil || dec.More() {
			t.Fatalf("audit line %d is not one JSON object (%v): %.200q", n, err, sc.Text())
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return entries, data
}

// TestAuditModeHandsSpecOverUnchanged: in audit mode the caller's
// config.json reaches runc byte for byte and stays so while the container
// lives; the process keeps what the caller asked for (root, its
// capabilities), and the audit log holds what enforcement would change,
// naming secret variables without their values.
func TestAuditModeHandsSpecOverUnchanged(t *testing.T) {
	needRunc(t)
	env, auditLog := auditConfig(t)
	caps := []string{"CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_NET_RAW"}
	dir := bundle.New(t, []string{"sleep", "60"}, func(s *rspec.Spec) {
		s.Process.Capabilities = &rspec.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}
		s.Process.Env = append(s.Process.Env, "GITHUB_TOKEN="+secretValues[0])
	})
	original, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(when string) {
		t.Helper()
		now, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil || !bytes.Equal(now, original) {
			t.Fatalf("config.json changed %s (err %v)", when, err)
		}
	}
	root := filepath.Join(t.TempDir(), "state")
	id := fmt.Sprintf("audit-%d", os.Getpid())
	must(t, env, "--root", root, "create", "--bundle", dir, id)
	t.Cleanup(func() { bulkhead(t, "", env, "--root", root, "delete", "--force", id) })
	unchanged("after create")
	must(t, env, "--root", root, "start", id)
	unchanged("after start")

	status := must(t, env, "--root", root, "exec", id, "cat", "/proc/1/status")
	unchanged("after exec")
	// CAP_KILL 5, CAP_NET_BIND_SERVICE 10, CAP_NET_RAW 13.
	const asked = "0000000000002420"
	for key, want := range map[string]string{"CapEff": asked, "CapBnd": asked, "Uid": "0\t0\t0\t0", "NoNewPrivs": "1"} {
		if got := statusField(status, key); got != want {
			t.Errorf("container init: %s %q, want the caller's %q", key, got, want)
		}
	}
	environ, err := os.ReadFile(filepath.Join("/proc", pidOf(t, env, root, id), "environ"))
	if err != nil || !bytes.Contains(environ, []byte("GITHUB_TOKEN=")) {
		t.Errorf("audit mode: the caller's environment was changed (err %v)", err)
	}

	entries, raw := readAudit(t, auditLog)
	if bytes.Contains(raw, []byte(secretValues[0])) {
		t.Error("the audit log holds a secret value")
	}
	var create *audit.Entry
	for i := range entries {
		if entries[i].Event == "create" && entries[i].ID == id {
			create = &entries[i]
		}
	}
	if create == nil {
		t.Fatalf("no create entry for %s in the audit log:\n%s", id, raw)
	}
	if create.Mode != specs.Audit || create.Profile != "observe" || !strings.Contains(create.Outcome, "audit mode") ||
		create.SpecAfter != create.SpecBefore {
		t.Errorf("create entry: mode %s profile %s outcome %q sha before %s after %s",
			create.Mode, create.Profile, create.Outcome, create.SpecBefore, create.SpecAfter)
	}
	want := map[string]bool{"capabilities tightened": false, "user tightened": false, "environment removed": false, "pids added": false}
	for _, d := range create.Decisions {
		k := d.Rule + " " + string(d.Action)
		if _, ok := want[k]; ok {
			want[k] = true
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("audit decisions lack %q", k)
		}
	}
	if strings.Join(create.SecretsGone, ",") != "GITHUB_TOKEN" {
		t.Errorf("secret names recorded %v, want [GITHUB_TOKEN]", create.SecretsGone)
	}
}

func pidOf(t *testing.T, env []string, root, id string) string {
	t.Helper()
	var st struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(must(t, env, "--root", root, "state", id)), &st); err != nil || st.Pid == 0 {
		t.Fatalf("state %s: %v", id, err)
	}
	return fmt.Sprint(st.Pid)
}

// TestAuditLogParallel: 16 containers run at once, each appending a line
// of several kilobytes; every line must still be one whole JSON object
// with its secret names and without their values.
func TestAuditLogParallel(t *testing.T) {
	needRunc(t)
	env, auditLog := auditConfig(t)
	const n = 16
	var wg sync.WaitGroup
	results := make([]result, n)
	for i := 0; i < n; i++ {
		dir := bundle.New(t, []string{"true"}, func(s *rspec.Spec) {
			s.Process.Env = append(s.Process.Env, "AWS_SECRET_ACCESS_KEY="+secretValues[1], fmt.Sprintf("JOB=%d", i))
		})
		root := filepath.Join(t.TempDir(), "state")
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = bulkhead(t, "", env, "--root", root, "run", "--bundle", dir, fmt.Sprintf("par-%d-%d", os.Getpid(), i))
		}(i)
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("run %d: exit %d: %s", i, r.code, r.stderr)
		}
	}
	entries, raw := readAudit(t, auditLog)
	if bytes.Contains(raw, []byte(secretValues[1])) {
		t.Error("the audit log holds a secret value")
	}
	seen := map[string]bool{}
	for _, e := range entries {
		seen[e.ID] = true
		if e.Event == "run" && strings.Join(e.SecretsGone, ",") != "AWS_SECRET_ACCESS_KEY" {
			t.Errorf("%s: secret names %v", e.ID, e.SecretsGone)
		}
	}
	for i := 0; i < n; i++ {
		if id := fmt.Sprintf("par-%d-%d", os.Getpid(), i); !seen[id] {
			t.Errorf("no audit line for %s", id)
		}
	}
	t.Logf("%d audit lines, %d bytes, all valid JSON", len(entries), len(raw))
}
