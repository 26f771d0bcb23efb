package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
// waits so itself is read in full and has the container swept in full: it
// fails within the harness's bound, not 30 s per process, with the error
// and the audit line saying the workload kept each one in vfork(); those
// processes are killed, the others hold and run on, and the next exec
// succeeds. The plain exec of the reviewer's case (true) before it either
// succeeds or fails so too.
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

	r := bulkhead(t, "", env, "--root", root, "exec", id, "true")
	if r.code != 0 && !strings.Contains(r.stderr, "in vfork()") {
		t.Fatalf("exec true: exit %d without naming the vfork wait:\n%s", r.code, r.stderr)
	}
	t.Logf("exec true: exit %d %s", r.code, r.stderr)
	// Judged in full, which no ptrace stop lets the reviewer's exec
	// always be, and which killed what it could not read.
	r = bulkhead(t, "", env, "--root", root, "exec", id, "/bin/vforkpark", "self")
	if r.code <= 0 {
		t.Fatalf("exec of a process that waits in vfork: exit %d, want refused (-1 is the harness's kill):\n%s", r.code, r.stderr)
	}
	t.Logf("exec vforkpark self: %s", r.stderr)
	if !strings.Contains(r.stderr, "verification after exec: the workload kept it in vfork()") {
		t.Errorf("the error does not say the exec'd process waited in vfork():\n%s", r.stderr)
	}
	var verdict string
	entries, _ := readAudit(t, auditLog)
	for _, e := range entries {
		if e.Event == "exec-verify" && e.ID == id {
			verdict = e.Outcome + ": " + e.Error
		}
	}
	if !strings.HasPrefix(verdict, "killed: ") {
		t.Errorf("last exec-verify line of the audit log %q, want killed", verdict)
	}
	for _, pid := range waiting {
		if !strings.Contains(r.stderr, fmt.Sprintf("process %d in the container: the workload kept it in vfork()", pid)) {
			t.Errorf("the error does not name process %d, which waited in vfork()", pid)
		}
		if !strings.Contains(verdict, fmt.Sprintf("process %d in the container: the workload kept it in vfork()", pid)) {
			t.Errorf("the audit line does not name process %d, which waited in vfork()", pid)
		}
		// The init never reaps: a zombie is one that was killed.
		if state := procState(pid); state != "Z" && state != "" {
			t.Errorf("process %d still there after the exec, state %s", pid, state)
		}
	}
	if procState(st.Pid) != "S" {
		t.Errorf("the container's init, which held, is in state %q", procState(st.Pid))
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
