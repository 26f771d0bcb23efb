package seccomp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestJobsOwnFilterOnTop: a job that stacks a filter of its own on the
// profile's (a browser's sandbox does) still holds the profile's, which
// the kernel runs first: an exec into it is verified and runs, and the job
// is not taken for one whose filter was replaced.
func TestJobsOwnFilterOnTop(t *testing.T) {
	need(t, "runc")
	b := bundle.New(t, []string{"/bin/stacked"})
	cProgram(t, b, "stacked")
	e := newEnv(t, "")
	id := e.id()
	t.Cleanup(func() { e.bulkhead("bulkhead", "delete", "--force", id) })
	// The detached container keeps its stdio: /dev/null, not the
	// harness's pipes, and the log file for bulkhead's own lines.
	logFile := filepath.Join(e.dir, "run.log")
	run := exec.Command(filepath.Join(binaries.Dir(t), "bulkhead"), "--root", e.root, "--config", e.config, "--log", logFile,
		"run", "--detach", "--bundle", b, id)
	if err := run.Run(); err != nil {
		log, _ := os.ReadFile(logFile)
		t.Fatalf("run --detach: %v\n%s", err, log)
	}
	// The filter is in once the job's own program has run a moment; the
	// exec's own verification then reads the job's process too.
	for i := 0; i < 3; i++ {
		r := e.bulkhead("bulkhead", "exec", id, "/bin/echo", "hi")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "hi" {
			t.Fatalf("exec %d into a job with its own filter on top: exit %d, stdout %q, stderr %q", i, r.code, r.stdout, r.stderr)
		}
	}
	if r := e.bulkhead("bulkhead", "state", id); !strings.Contains(r.stdout, `"running"`) {
		t.Fatalf("the job after the execs: %s %s", r.stdout, r.stderr)
	}
}

// TestNoSeccompListener: a job may add filters of its own, but not make
// itself the supervisor of its calls: a user notification outranks a
// trace, and the supervisor lets the call run.
func TestNoSeccompListener(t *testing.T) {
	need(t, "runc", "runsc")
	b := bundle.New(t, []string{"/bin/listener"})
	cProgram(t, b, "listener")
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			out := newEnv(t, "").run(be.entry, b)
			t.Logf("%s:\n%s", be.name, out)
			for _, want := range []string{"listener errno 1", "plain ok"} {
				if !strings.Contains(out, want+"\n") {
					t.Errorf("no line %q", want)
				}
			}
		})
	}
}
