package test

import (
	"strings"
	"testing"

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
