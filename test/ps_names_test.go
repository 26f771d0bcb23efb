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
// it was, so `bulkhead ps` cleared the operator's screen; a name holding a
// line break and tabs began a row of the job's making, padded like any
// other. The table now comes escaped on both backends, and on runsc only
// with a row per process; the json format stays the backend's.
func TestPsEscapesProcessNames(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		ps := func(tag, name string) result {
			id := uniqueID("psname-" + tag + "-" + backend)
			script := `n="/tmp/busybox$(printf '` + name + `')"; ln -s /bin/busybox "$n" && exec "$n" sleep 300`
			must(t, append(g, "run", "--detach", "--bundle", bundle.New(t, []string{"sh", "-c", script}), id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			// The shell's own command line names busybox too: the
			// table is the job's once no row is that line any more.
			var r result
			deadline := time.Now().Add(20 * time.Second)
			for (!strings.Contains(r.stdout, "busybox") || strings.Contains(r.stdout, "sh -c")) && r.stderr == "" && time.Now().Before(deadline) {
				r = bulkhead(t, "", append(g, "ps", id)...)
				time.Sleep(200 * time.Millisecond)
			}
			if js := must(t, append(g, "ps", "--format", "json", id)...); strings.Contains(js, "\x1b") || !strings.HasPrefix(strings.TrimSpace(js), "[") {
				t.Fatalf("ps --format json: %q", js)
			}
			return r
		}

		// runc's table comes through procps, which shows each escape as '?'
		r := ps("esc", `\033[2J\033[8m`)
		if strings.Contains(r.stdout, "\x1b") || !strings.Contains(r.stdout, "busybox") || strings.Count(r.stdout, "\n") != 2 ||
			backend == "runsc" && !strings.Contains(r.stdout, `busybox\x1b[2J\x1b[8m`) {
			t.Fatalf("ps table, want a heading and one row, the name escaped:\n%q\n%s", r.stdout, r.stderr)
		}

		r = ps("nl", `\n0\t7\t1\t0`)
		switch {
		case backend == "runc" && (r.code != 0 || strings.Count(r.stdout, "\n") != 2):
			t.Fatalf("ps table, want a heading and one row:\n%q\n%s", r.stdout, r.stderr)
		case backend == "runsc" && (r.code == 0 || strings.Contains(r.stdout, "busybox") || !strings.Contains(r.stderr, "holds a line break")):
			t.Fatalf("ps table of a name with a line break: %d\n%q\n%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestPsWhileProcessesComeAndGo: a job that forks without pause leaves
// ps's table readable; the processes a table shows need not be the ones
// a moment later.
func TestPsWhileProcessesComeAndGo(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		id := uniqueID("pschurn-" + backend)
		must(t, append(g, "run", "--detach", "--bundle", bundle.New(t, []string{"sh", "-c", "while :; do /bin/true; done"}), id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		for i := 0; i < 10; i++ {
			if r := bulkhead(t, "", append(g, "ps", id)...); r.code != 0 || !strings.HasPrefix(r.stdout, "UID") {
				t.Fatalf("ps %d while processes come and go: exit %d\n%s%s", i, r.code, r.stdout, r.stderr)
			}
		}
	})
}
