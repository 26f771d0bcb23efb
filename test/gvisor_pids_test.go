package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// Under runsc the workload's process limit is RLIMIT_NPROC inside the
// sandbox, and the host's pids.max only bounds gVisor's own threads. With
// too little room for those (a ptrace stub per process, a thread in it for
// each Sentry thread that ran it), a sandbox died at its host limit once an
// exec'd shell had started 20 processes. Below the default limit of 64 a
// job's processes all start; past it the job gets EAGAIN and the sandbox
// lives on.
func TestGVisorProcessesUpToTheLimit(t *testing.T) {
	needRoot(t, "runsc")
	g := []string{"--root", stateRoot(t), "--backend", "runsc"}
	id := uniqueID("gvisor-pids")
	if r := bulkhead(t, "", append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "600"}), id)...); r.code != 0 {
		t.Fatalf("create: exit %d\n%s", r.code, r.stderr)
	}
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	must(t, append(g, "start", id)...)

	spawn := func(n string) result {
		return bulkhead(t, "", append(g, "exec", id, "sh", "-c",
			"n=0; for i in $(seq "+n+"); do sleep 3 & n=$((n+1)); done; echo started $n; wait; echo done")...)
	}
	if r := spawn("40"); r.code != 0 || !strings.Contains(r.stdout, "started 40") || !strings.Contains(r.stdout, "done") {
		t.Fatalf("40 processes under a limit of 64: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r := spawn("150")
	if !strings.Contains(r.stderr, "can't fork") && !strings.Contains(r.stderr, "Resource temporarily unavailable") {
		t.Fatalf("150 processes under a limit of 64: exit %d, want EAGAIN from the shell\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if s := containerState(t, g, id); s.Status != "running" {
		t.Fatalf("after a job met its process limit the sandbox is %q, want it running", s.Status)
	}
}

// An `exec --process` file on runsc asks for no process limit at all; the
// exec'd process gets the container's (the profile's 64), and the audit
// line says it was tightened. runsc versions that apply an exec's rlimits
// would otherwise lift the sandbox's limit for it.
func TestGVisorExecKeepsTheProcessLimit(t *testing.T) {
	needRoot(t, "runsc")
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("audit_log = %q\n", audit)), 0o644); err != nil {
		t.Fatal(err)
	}
	g := []string{"--config", config, "--root", stateRoot(t), "--backend", "runsc"}
	id := uniqueID("gvisor-exec-nproc")
	if r := bulkhead(t, "", append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "600"}), id)...); r.code != 0 {
		t.Fatalf("create: exit %d\n%s", r.code, r.stderr)
	}
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	must(t, append(g, "start", id)...)

	unlimited := ^uint64(0)
	proc := rspec.Process{Args: []string{"sh", "-c", "ulimit -u"}, Env: []string{"PATH=/bin"}, Cwd: "/",
		User:    rspec.User{UID: 65534, GID: 65534},
		Rlimits: []rspec.POSIXRlimit{{Type: "RLIMIT_NPROC", Hard: unlimited, Soft: unlimited}}}
	data, err := json.Marshal(proc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "process.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := strings.TrimSpace(must(t, append(g, "exec", "--process", path, id)...)); out != "64" {
		t.Errorf("ulimit -u in a process exec'd asking for no limit: %q, want the container's 64", out)
	}
	var found bool
	for _, e := range auditEvents(t, audit) {
		if e["event"] != "exec" || e["id"] != id {
			continue
		}
		ds, _ := e["decisions"].([]any)
		for _, d := range ds {
			m, _ := d.(map[string]any)
			// The container's own limit holds an exec first; gVisor's
			// rule says so where the container named none.
			if m["field"] == "process.rlimits[RLIMIT_NPROC]" && m["action"] == "tightened" && (m["after"] == "64/64" || m["after"] == "soft=64 hard=64") {
				found = true
			}
		}
	}
	if !found {
		data, _ := os.ReadFile(audit)
		t.Fatalf("no exec line of %s says RLIMIT_NPROC was tightened to 64/64:\n%s", id, data)
	}
}
