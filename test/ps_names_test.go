package test

import (
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/bundle"
)

// The container names its processes: a job that runs busybox through a
// symlink whose name holds escape sequences and a line break (nothing it
// wrote is executed) gets that name as its command. runsc's ps table
// printed it as it was, so `bulkhead ps` cleared the operator's screen,
// and the line break began a row of the job's making; the table now comes
// escaped, a row per process, on both backends, and the json format stays
// the backend's.
func TestPsEscapesProcessNames(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			id := uniqueID("psname-" + backend)
			g := []string{"--root", root, "--backend", backend}
			script := `n="/tmp/busybox$(printf '\033[2J\n6553')"; ln -s /bin/busybox "$n" && exec "$n" sleep 300`
			must(t, append(g, "run", "--detach", "--bundle", bundle.New(t, []string{"sh", "-c", script}), id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			var out string
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(out, "busybox") && time.Now().Before(deadline) {
				out = bulkhead(t, "", append(g, "ps", id)...).stdout
				time.Sleep(200 * time.Millisecond)
			}
			// runc's table comes through procps, which shows each escape as a dot
			if strings.Contains(out, "\x1b") || !strings.Contains(out, "busybox") || strings.Count(out, "\n") != 2 ||
				backend == "runsc" && !strings.Contains(out, `busybox\x1b[2J\x0a655`) {
				t.Fatalf("ps table, want a heading and one row, the name escaped:\n%q", out)
			}
			if js := must(t, append(g, "ps", "--format", "json", id)...); strings.Contains(js, "\x1b") || !strings.HasPrefix(strings.TrimSpace(js), "[") {
				t.Fatalf("ps --format json: %q", js)
			}
		})
	}
}
