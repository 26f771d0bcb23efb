package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/vforkpark"
)

// parkedChildren is how many processes the workload keeps in a vfork
// wait: at 30 s each, one after another, they held an exec four minutes,
// past the two minutes the harness allows.
const parkedChildren = 8

// TestExecVforkParked: a workload keeps processes in a vfork wait (their
// vfork children never execute a program), where no ptrace stop reaches
// them and their seccomp filters cannot be read. An exec whose process
// waits so itself is judged in full and has the container swept in full:
// it fails within the harness's bound, not 30 s per process, with the
// error and the audit line saying the workload kept each one in vfork();
// those processes are killed, the others hold and run on, and the next
// exec succeeds. The plain exec of the reviewer's case (true) before it
// either succeeds or fails so too.
func TestExecVforkParked(t *testing.T) {
	needRunc(t)
	prog := vforkpark.Build(t)
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	env := []string{"BULKHEAD_CONFIG=" + writeConfig(t, fmt.Sprintf("audit_log = %q\n", auditLog))}
	dir := bundle.New(t, []string{"/bin/vforkpark", "children", strconv.Itoa(parkedChildren)})
	data, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rootfs/bin/vforkpark"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "state")
	id := fmt.Sprintf("vforkparked-%d", os.Getpid())
	must(t, env, "--root", root, "create", "--bundle", dir, id)
	t.Cleanup(func() { bulkhead(t, "", env, "--root", root, "delete", "--force", id) })
	must(t, env, "--root", root, "start", id)
	var st struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(must(t, env, "--root", root, "state", id)), &st); err != nil || st.Pid == 0 {
		t.Fatalf("state: %v", err)
	}
	var waiting []int
	for i := 0; i < 1000 && len(waiting) < parkedChildren; i++ {
		time.Sleep(10 * time.Millisecond)
		waiting = inVforkWait(st.Pid)
	}
	if len(waiting) < parkedChildren {
		t.Fatalf("%d of the init's children in a vfork wait, want %d", len(waiting), parkedChildren)
	}

	// The reviewer's exec: its process read in time has the container
	// swept by /proc status alone, which a vfork wait does not hinder;
	// one that ended before has it swept in full, as below.
	r := bulkhead(t, "", env, "--root", root, "exec", id, "true")
	if r.code != 0 && !strings.Contains(r.stderr, "in vfork()") {
		t.Fatalf("exec true: exit %d without naming the vfork wait:\n%s", r.code, r.stderr)
	}
	t.Logf("exec true: exit %d %s", r.code, r.stderr)
	refusals := r.stderr
	// A process that waits in vfork itself is judged in full, and the
	// container swept in full after it is killed, unless it was read
	// before it executed the program (as runc's init): then it holds,
	// the sweep by /proc status is not hindered, and, detached, it runs
	// on. So it is tried until one is judged waiting.
	full := false
	for i := 0; i < 10 && !full; i++ {
		r = bulkhead(t, "", env, "--root", root, "exec", "--detach", id, "/bin/vforkpark", "self")
		switch {
		case r.code == 0:
			t.Logf("exec vforkpark self %d: read before it waited, verified", i)
		case r.code > 0 && strings.Contains(r.stderr, "verification after exec: the workload kept it in vfork()"):
			t.Logf("exec vforkpark self %d: %s", i, r.stderr)
			refusals += r.stderr
			full = true
		default:
			t.Fatalf("exec of a process that waits in vfork: exit %d (-1 is the harness's kill), without naming the vfork wait:\n%s", r.code, r.stderr)
		}
	}
	if !full {
		t.Fatal("ten execs of a process that waits in vfork were all read before it did")
	}
	var verdicts []string
	entries, _ := readAudit(t, auditLog)
	for _, e := range entries {
		if e.Event == "exec-verify" && e.ID == id {
			verdicts = append(verdicts, e.Outcome+": "+e.Error)
		}
	}
	if len(verdicts) < 2 || !strings.HasPrefix(verdicts[len(verdicts)-1], "killed: ") {
		t.Fatalf("exec-verify lines of the audit log %q, want one per exec, the last killed", verdicts)
	}
	for _, pid := range waiting {
		named := regexp.MustCompile(fmt.Sprintf(`process %d \([^)]*\) in the container: the workload kept it in vfork\(\)`, pid))
		if !named.MatchString(refusals) {
			t.Errorf("no error names process %d, which waited in vfork()", pid)
		}
		if !named.MatchString(strings.Join(verdicts, "\n")) {
			t.Errorf("no audit line names process %d, which waited in vfork()", pid)
		}
		// The init never reaps: a zombie is one that was killed.
		if state := procState(pid); state != "Z" && state != "" {
			t.Errorf("process %d still there after the execs, state %s", pid, state)
		}
	}
	// Held: alive, whether it sleeps or runs at the moment it is looked
	// at (on a busy machine it may be handling its killed children's
	// SIGCHLD).
	if s := procState(st.Pid); s == "Z" || s == "X" || s == "" {
		t.Errorf("the container's init, which held, is in state %q", s)
	}
	must(t, env, "--root", root, "exec", id, "true")
}

// inVforkWait lists the children of pid that sleep uninterruptibly while
// a child of theirs runs: those in a vfork wait.
func inVforkWait(pid int) []int {
	var out []int
	for _, c := range children(pid) {
		if procState(c) == "D" && len(children(c)) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func children(pid int) []int {
	p := strconv.Itoa(pid)
	data, _ := os.ReadFile("/proc/" + p + "/task/" + p + "/children")
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// procState is the state letter of /proc/PID/stat, "" once it is gone.
func procState(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
