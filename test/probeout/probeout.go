// Package probeout reads what bulkhead-probe prints inside a container
// started by an engine: one JSON line per control, then
// {"control":"done"}, and judges it the way `bulkhead probe` does where an
// engine test has no host side of its own: every control must have run
// and held, the workspace by the host folder staying unchanged.
package probeout

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// Line is one control's result.
type Line struct {
	Control  string `json:"control"`
	Observed string `json:"observed"`
	Layer    string `json:"layer"`
	Pass     bool   `json:"pass"`
	Result   string `json:"result"`
	Skipped  bool   `json:"skipped"`
	Detail   string `json:"detail"`
}

// Parse reads the probe's lines up to the done line; done reports whether
// it came (the probe did not die first). A line that is not JSON becomes
// a failed control, so it cannot pass unnoticed.
func Parse(out string) (lines []Line, done bool) {
	s := bufio.NewScanner(strings.NewReader(out))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		text := strings.TrimSpace(s.Text())
		if !strings.HasPrefix(text, "{") {
			continue
		}
		var l Line
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			lines = append(lines, Line{Control: "(not JSON)", Detail: text})
			continue
		}
		if l.Control == "done" {
			return lines, true
		}
		lines = append(lines, l)
	}
	return lines, false
}

// Workspace is a host folder to bind at /workspace: a user's, writable by
// anyone, so only the mount can keep the sandbox's write out of it, with one file
// whose survival shows the folder unchanged.
type Workspace struct{ Dir string }

const workspaceFile, workspaceText = "README", "host folder\n"

// NewWorkspace makes the folder in the test's temp dir.
func NewWorkspace(t testing.TB) *Workspace {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "workspace")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, workspaceFile), []byte(workspaceText), 0o644); err != nil {
		t.Fatal(err)
	}
	GiveToUser(t, dir)
	return &Workspace{Dir: dir}
}

// CheckoutOwner is the uid and gid of the user whose checkouts the tests
// bind at /workspace: an ordinary user's, which the default
// workspace_owners names. A root-owned folder is refused as a workspace.
const CheckoutOwner = 1000

// GiveToUser gives dir and everything below it to CheckoutOwner, as a
// user's own checkout is.
func GiveToUser(t testing.TB, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, CheckoutOwner, CheckoutOwner)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Unchanged reports whether the folder holds exactly what NewWorkspace
// put there.
func (w *Workspace) Unchanged() bool {
	ents, err := os.ReadDir(w.Dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != workspaceFile {
		return false
	}
	data, err := os.ReadFile(filepath.Join(w.Dir, workspaceFile))
	return err == nil && string(data) == workspaceText
}

// Held reports whether one line shows its control held. The workspace
// control's write goes through inside a copy-on-write workspace; there the
// host folder is the judge.
func (w *Workspace) Held(l Line) bool {
	if l.Control == "workspace" && l.Observed == "written" {
		return w.Unchanged()
	}
	return l.Pass && l.Result == "pass"
}

// AssertPasses checks that the probe ran to its done line and that every
// control bulkhead probe knows (protocol.Controls) reported exactly
// once and held: a missing, skipped or failed control fails the test.
func AssertPasses(t testing.TB, out string, ws *Workspace) {
	t.Helper()
	AssertControls(t, out, ws, protocol.Controls, nil)
}

// AssertControls is AssertPasses for the controls in want; hostJudged,
// when set, accepts a line that only the host can judge (gVisor's cpu).
func AssertControls(t testing.TB, out string, ws *Workspace, want []string, hostJudged func(Line) bool) {
	t.Helper()
	lines, done := Parse(out)
	if !done {
		t.Fatalf("probe did not finish (no done line):\n%s", out)
	}
	seen := map[string]int{}
	for _, l := range lines {
		seen[l.Control]++
		switch {
		case ws.Held(l):
		case hostJudged != nil && hostJudged(l):
		case l.Result == "skipped" || l.Skipped:
			t.Errorf("control %s SKIPPED: %s", l.Control, l.Detail)
		default:
			t.Errorf("control %s FAIL: observed %q, layer %q: %s", l.Control, l.Observed, l.Layer, l.Detail)
		}
	}
	for _, c := range want {
		if seen[c] != 1 {
			t.Errorf("control %s: %d lines, want 1", c, seen[c])
		}
	}
	t.Logf("probe: %d lines, %d controls required", len(lines), len(want))
}

// Starved tells whether the probe ran to its done line and every control
// held but cpu, which has no evidence either way: on a host whose other
// work leaves the sandbox too little CPU, a quota of 1 CPU cannot bite
// within the probe's deadline. Any other failure is not starvation.
func Starved(out string, ws *Workspace) bool {
	lines, done := Parse(out)
	if !done {
		return false
	}
	starved := false
	for _, l := range lines {
		switch {
		case ws.Held(l):
		case l.Control == "cpu" && !l.Skipped && strings.HasPrefix(l.Detail, "no evidence"):
			starved = true
		default:
			return false
		}
	}
	return starved
}

// Cut tells whether the output stops before the done line with every
// control in it held: the rest of the stream was lost on its way out (on
// a loaded host containerd 2's runc shim ended a `ctr run` with the
// container's status 0 and its output cut short), which is no evidence
// either way. A control that failed is not a cut.
func Cut(out string, ws *Workspace) bool {
	lines, done := Parse(out)
	if done || len(lines) == 0 {
		return false
	}
	for _, l := range lines {
		if !ws.Held(l) {
			return false
		}
	}
	return true
}

// UntilEvidence runs the probe (run) again, at most twice more, while its
// output is Starved or Cut, logging each such run; it returns the last
// output. A control that failed on an observation is never run again.
func UntilEvidence(t testing.TB, ws *Workspace, run func(attempt int) string) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		out := run(attempt)
		switch {
		case attempt == 3:
			return out
		case Starved(out, ws):
			t.Logf("attempt %d: the cpu control has no evidence either way (the host gave the spin too little CPU); probing again", attempt)
		case Cut(out, ws):
			t.Logf("attempt %d: the probe's output stops before its done line, every control in it held; probing again:\n%s", attempt, out)
		default:
			return out
		}
	}
}
