package policy

import (
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestExecAtPidsLimitSaysSo: a job whose processes take every pid of the
// default profile's limit leaves no room for what an exec starts. When
// runc's init dies setting up, runc says only that a pipe broke, or the
// init's crash is all there is; when the exec'd process cannot fork, it
// says "can't fork". Either way the exec fails and its last line names
// the limit.
func TestExecAtPidsLimitSaysSo(t *testing.T) {
	needRunc(t)
	// The shell that fills the limit ends at its first refused fork; the
	// init stays, and one pid is left. The sleeps let go of stdio, so an
	// exec of the same shell ends with it, not with them.
	const forks = `i=0; while [ $i -lt 100 ]; do sleep 600 </dev/null >/dev/null 2>&1 & i=$((i+1)); done`
	fill := "(" + forks + "); exec sleep 600"
	root, id, _ := running(t, nil, func(s *rspec.Spec) { s.Process.Args = []string{"sh", "-c", fill} })
	namesLimit := func(what string, r result) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if last := lines[len(lines)-1]; r.code == 0 || !strings.Contains(last, "the container reached its pids limit (pids.max 64)") {
			t.Errorf("%s: exit %d, last line %q, want a failure naming the pids limit\n%s", what, r.code, last, r.stderr)
		}
	}
	// A runc init joins the cgroup with the threads it has, which the
	// limit lets in; it fails only when it starts one more, which it
	// mostly does. Each detached exec leaves a process, so they are run
	// until one fails.
	// On a loaded machine an exec'd process can also get no CPU for the
	// whole of its verification, with no fork refused: it is killed and
	// the exec fails closed, for a reason that is not the limit. That
	// exec is not counted, a few times at most.
	unread := 0
	for i := 0; i < 100; i++ {
		r := bulkhead(t, "", nil, "--root", root, "exec", "--detach", id, "sleep", "600")
		if r.code == 0 {
			continue
		}
		if strings.Contains(r.stderr, "could not be read within") && strings.Contains(r.stderr, "killed") && unread < 3 {
			unread++
			t.Logf("a detached exec was starved and killed, not counted: %s", strings.TrimSpace(r.stderr))
			continue
		}
		t.Logf("a detached exec failed after %d that succeeded", i)
		namesLimit("detached exec", r)
		break
	}
	// The exec'd process's own forks are refused once it has taken what
	// is left, whatever runc's init did: the shell ends at the first.
	namesLimit("exec of a shell that forks", bulkhead(t, "", nil, "--root", root, "exec", id, "sh", "-c", forks))
}
