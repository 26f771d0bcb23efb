package test

import (
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/bundle"
)

// The container names its processes: a job that runs busybox through a
// symlink whose name holds escape sequences (nothing it wrote is
// executed) gets that name as its command. runsc's ps table printed it as
// it was, so `bulkhead ps` cleared the operator's screen and hid what
// followed; the table now comes escaped on both backends, and the json
// format stays the backend's.
func TestPsEscapesProcessNames(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			id := uniqueID("psname-" + backend)
			g := []string{"--root", root, "--backend", backend}
			script := `n="/tmp/busybox$(printf '\033[2J\033[8m')"; ln -s /bin/busybox "$n" && exec "$n" sleep 300`
			must(t, append(g, "run", "--detach", "--bundle", bundle.New(t, []string{"sh", "-c", script}), id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			var out string
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(out, "busybox") && time.Now().Before(deadline) {
				out = bulkhead(t, "", append(g, "ps", id)...).stdout
				time.Sleep(200 * time.Millisecond)
			}
			// runc's table comes through procps, which shows each escape as a dot
			if strings.Contains(out, "\x1b") || !strings.Contains(out, "busybox") ||
				backend == "runsc" && !strings.Contains(out, `busybox\x1b[2J\x1b[8m`) {
				t.Fatalf("ps table, want the name escaped:\n%q", out)
			}
			if js := must(t, append(g, "ps", "--format", "json", id)...); strings.Contains(js, "\x1b") || !strings.HasPrefix(strings.TrimSpace(js), "[") {
				t.Fatalf("ps --format json: %q", js)
			}
		})
	}
}
