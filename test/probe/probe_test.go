// Package probe holds the must-show tests of `bulkhead probe`: the default
// profile holds every control on runc and on runsc, each with the layer
// that answered, and the probe says FAIL when a profile is weaker.
package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/test/binaries"
)

type control struct {
	Name     string `json:"name"`
	Attempt  string `json:"attempt"`
	Observed string `json:"observed"`
	Layer    string `json:"layer"`
	Evidence string `json:"host_evidence"`
	Pass     bool   `json:"pass"`
	Result   string `json:"result"`
	Detail   string `json:"detail"`
}

type report struct {
	ID       string    `json:"id"`
	Profile  string    `json:"profile"`
	Backend  string    `json:"backend"`
	Finished bool      `json:"finished"`
	Pass     bool      `json:"pass"`
	Controls []control `json:"controls"`
}

func need(t *testing.T, backend string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the probe's container is created for real")
	}
	if _, err := exec.LookPath(backend); err != nil {
		t.Skipf("needs %s on PATH (hack/install-deps.sh installs it): %v", backend, err)
	}
}

// config writes a root-owned 0644 configuration: the built-in one plus
// extra, with the audit log and changes_dir in the test's temp dir.
func config(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	body := "audit_log = " + quote(filepath.Join(dir, "audit.jsonl")) + "\n" +
		"changes_dir = " + quote(filepath.Join(dir, "changes")) + "\n" + extra
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// probe runs `bulkhead probe --format json` and returns the report, the
// exit code and stderr. It then checks that nothing of the probe is left.
func probe(t *testing.T, cfg string, args ...string) (report, int, string) {
	t.Helper()
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	argv := append([]string{"--root", root, "--config", cfg, "probe", "--format", "json"}, args...)
	cmd := exec.CommandContext(ctx, binaries.Bulkhead(t), argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("bulkhead probe: %v", err)
	}
	var r report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("probe output is not one JSON report (%v):\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("bulkhead %s: exit %d in %s", strings.Join(argv, " "), code, time.Since(start).Round(time.Millisecond))
	for _, c := range r.Controls {
		v := "PASS"
		if !c.Pass {
			v = "FAIL"
		}
		t.Logf("%s %-13s %-40.40s %-38s %s", v, c.Name, c.Observed, c.Layer, c.Evidence)
	}
	// Nothing left: no record, no backend state, no cgroup.
	if ents, _ := os.ReadDir(filepath.Join(root, "bulkhead")); len(ents) > 1 { // the lock file stays
		t.Errorf("state left under %s/bulkhead: %v", root, ents)
	}
	if cg := runtime.DefaultCgroupsPath(root, r.ID); r.ID == "" || cgroups.Exists(cg) {
		t.Errorf("cgroup %s left behind (or no id)", cg)
	}
	for _, b := range []string{"runc", "runsc"} {
		if ents, _ := os.ReadDir(filepath.Join(root, b)); len(ents) > 0 {
			t.Errorf("%s state left: %v", b, ents)
		}
	}
	// Nor changes kept of the probe's workspace write.
	changes := filepath.Join(filepath.Dir(cfg), "changes")
	_ = filepath.WalkDir(changes, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.Contains(d.Name(), r.ID) {
			t.Errorf("changes of the probe's container kept: %s", path)
			return filepath.SkipDir
		}
		return nil
	})
	return r, code, stderr.String()
}

// probeForEvidence is probe, run again (at most twice more) while the cpu
// row alone did not hold and says it has no evidence either way: on a host
// whose other work leaves the sandbox too little CPU the quota cannot
// bite within the probe's deadline. Each run's rows are logged; a row
// that failed on an observation is never run again.
func probeForEvidence(t *testing.T, cfg string, args ...string) (report, int, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		r, code, stderr := probe(t, cfg, args...)
		var notHeld []control
		for _, c := range r.Controls {
			if !c.Pass {
				notHeld = append(notHeld, c)
			}
		}
		starved := len(notHeld) == 1 && notHeld[0].Name == "cpu" && strings.HasPrefix(notHeld[0].Detail, "no evidence")
		if !starved || attempt == 3 {
			return r, code, stderr
		}
		t.Logf("attempt %d: the cpu row has no evidence either way (%s); probing again", attempt, notHeld[0].Detail)
	}
}

func byName(r report) map[string]control {
	m := map[string]control{}
	for _, c := range r.Controls {
		m[c.Name] = c
	}
	return m
}

// runcLayers is the layer that must answer each control on runc.
var runcLayers = map[string]string{
	"workspace": "copy-on-write workspace", "etc": "read-only mount", "tmp-write": "tmpfs", "tmp-noexec": "tmpfs",
	"tmp-size": "tmpfs", "uid": "DAC", "capabilities": "capabilities", "no_new_privs": "no_new_privs",
	"network": "netns", "egress": "netns", "seccomp": "seccomp", "masked-proc": "masked mounts", "proc-sys": "DAC",
	"environment": "environment", "devices": "capabilities", "cpu": "cpu cgroup", "pids": "pids cgroup",
	"memory": "memory cgroup",
}

// runscLayers: what gVisor answers instead (README, "What gVisor answers
// instead").
var runscLayers = map[string]string{
	"etc":         "gVisor: DAC before read-only mount",
	"network":     "gVisor (Sentry)",
	"masked-proc": "gVisor (Sentry): its /proc has no such file",
	"egress":      "netns, gVisor (Sentry)",
	"devices":     "gVisor (Sentry)",
	"pids":        "gVisor (Sentry): RLIMIT_NPROC",
	"memory":      "memory cgroup (host OOM killer ends the whole sandbox)",
}

// runscMemoryLayers: gVisor's own accounting sometimes ends the sandbox
// before the host's OOM killer counts a kill; either layer holds the limit.
var runscMemoryLayers = []string{"memory cgroup (host OOM killer ends the whole sandbox)", "gVisor (Sentry): sandbox ended at the memory limit"}

func assertAllHold(t *testing.T, r report, code int, stderr string, layers map[string]string) {
	t.Helper()
	if code != 0 || !r.Pass || !r.Finished {
		t.Errorf("exit %d, pass %v, finished %v; stderr: %s", code, r.Pass, r.Finished, stderr)
	}
	got := byName(r)
	if len(got) != len(runcLayers) {
		t.Errorf("%d controls, want %d", len(got), len(runcLayers))
	}
	for name, layer := range runcLayers {
		if l, ok := layers[name]; ok {
			layer = l
		}
		c, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: no row", name)
		case !c.Pass || c.Result != "pass":
			t.Errorf("%s: %s observed %q layer %q evidence %q: %s", name, c.Result, c.Observed, c.Layer, c.Evidence, c.Detail)
		case name == "memory" && slices.Contains(runscMemoryLayers, layer) && slices.Contains(runscMemoryLayers, c.Layer):
		case c.Layer != layer && !(name == "cpu" && strings.HasPrefix(c.Layer, layer)):
			t.Errorf("%s: layer %q, want %q", name, c.Layer, layer)
		}
	}
}

func TestProbeDefaultProfileRunc(t *testing.T) {
	need(t, "runc")
	r, code, stderr := probeForEvidence(t, config(t, ""), "--backend", "runc")
	if r.Backend != "runc" || r.Profile != "default" {
		t.Errorf("ran %s/%s", r.Profile, r.Backend)
	}
	assertAllHold(t, r, code, stderr, nil)
	got := byName(r)
	for name, obs := range map[string]string{"workspace": "written", "etc": "EROFS", "network": "ENETUNREACH", "pids": "EAGAIN", "memory": "SIGKILL"} {
		if got[name].Observed != obs {
			t.Errorf("%s observed %q, want %q", name, got[name].Observed, obs)
		}
	}
	if !strings.HasPrefix(got["egress"].Observed, "no egress: ") {
		t.Errorf("egress observed %q, want \"no egress: ...\" for the default profile", got["egress"].Observed)
	}
	for _, name := range []string{"pids", "memory", "cpu"} {
		if got[name].Evidence == "" {
			t.Errorf("%s: no host evidence", name)
		}
	}
}

func TestProbeDefaultProfileRunsc(t *testing.T) {
	need(t, "runsc")
	r, code, stderr := probeForEvidence(t, config(t, ""), "--backend", "runsc")
	if r.Backend != "runsc" {
		t.Errorf("ran on %s", r.Backend)
	}
	assertAllHold(t, r, code, stderr, runscLayers)
	if got := byName(r)["network"].Observed; got != "EHOSTUNREACH" && got != "ENETUNREACH" {
		t.Errorf("network observed %q", got)
	}
}

// TestProbeCanFail: the probe is evidence only if it can say no. A profile
// in audit mode hands the careless bundle over unchanged; a profile with
// the caller's network and no pids limit opens exactly those two controls.
func TestProbeCanFail(t *testing.T) {
	need(t, "runc")
	cases := []struct {
		name, profile string
		fail          []string
		hold          []string
	}{
		{"audit", "[profiles.lax]\nmode = \"audit\"\n",
			[]string{"workspace", "etc", "uid", "capabilities", "network", "environment", "cpu", "pids", "memory"}, nil},
		{"caller-network-no-pids", "[profiles.lax]\nnetwork = \"caller\"\npids_limit = 0\n",
			[]string{"network", "pids"}, []string{"workspace", "etc", "uid", "capabilities", "seccomp", "memory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, code, stderr := probe(t, config(t, c.profile), "--profile", "lax", "--backend", "runc")
			if code == 0 || r.Pass {
				t.Errorf("exit %d, pass %v: a weaker profile must fail", code, r.Pass)
			}
			got := byName(r)
			for _, n := range c.fail {
				// A FAIL must be an observation: a row that is missing or
				// has no line proves nothing about the weakened control.
				g, ok := got[n]
				switch {
				case !ok:
					t.Errorf("%s: no row, want an observed FAIL", n)
				case g.Result != "fail" || g.Pass:
					t.Errorf("%s: %s (%s), want FAIL", n, g.Result, g.Observed)
				case g.Observed == "no line" || strings.HasPrefix(g.Detail, "no evidence"):
					t.Errorf("%s: FAIL without an observation (%s: %s), want the attempt's answer", n, g.Observed, g.Detail)
				}
			}
			for _, n := range c.hold {
				if !got[n].Pass || got[n].Result != "pass" {
					t.Errorf("%s: FAIL (%s), want PASS: only the weakened controls may fail", n, got[n].Observed)
				}
			}
			if n := got["network"]; !strings.HasPrefix(n.Observed, "interfaces ") {
				t.Errorf("network in the host's namespace must list interfaces and not connect: %q", n.Observed)
			}
			if !strings.Contains(stderr, "network") || !strings.Contains(stderr, "pids") {
				t.Errorf("stderr does not name the failed controls: %s", stderr)
			}
		})
	}
}

// TestProbeTextTable checks the human form once: a header, one row per
// control, the verdict line.
func TestProbeTextTable(t *testing.T) {
	need(t, "runc")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, binaries.Bulkhead(t), "--root", t.TempDir(), "--config", config(t, ""), "probe").Output()
	if err != nil {
		t.Logf("exit: %v", err)
	}
	s := string(out)
	for _, want := range []string{"CONTROL", "ATTEMPT", "OBSERVED", "LAYER", "HOST EVIDENCE", "RESULT", "pids.events max", "host verification at create"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
	t.Logf("\n%s", s)
}

// TestProbeWorkspaceModes: with the default copy-on-write workspace the
// write goes through inside and the host folder stays unchanged; with
// workspace_mode = "readonly" the read-only mount refuses it (EROFS).
func TestProbeWorkspaceModes(t *testing.T) {
	need(t, "runc")
	r, code, stderr := probeForEvidence(t, config(t, "[profiles.ro]\nworkspace_mode = \"readonly\"\n"), "--profile", "ro", "--backend", "runc")
	assertAllHold(t, r, code, stderr, map[string]string{"workspace": "read-only mount"})
	if w := byName(r)["workspace"]; w.Observed != "EROFS" {
		t.Errorf("readonly workspace: observed %q, want EROFS", w.Observed)
	}
}

// TestProbeRunscMemoryKeptAlive: under gVisor the memory row passes only
// when the allocation ended the sandbox. With a limit above the most the
// probe allocates (4 GiB, however large the profile's limit), the sandbox
// outlives the allocation: the row must FAIL, and never read as "sandbox
// ended".
func TestProbeRunscMemoryKeptAlive(t *testing.T) {
	need(t, "runsc")
	r, code, stderr := probe(t, config(t, "[profiles.roomy]\nbackend = \"runsc\"\nmemory = \"6g\"\n"), "--profile", "roomy", "--backend", "runsc")
	if code == 0 || r.Pass {
		t.Errorf("exit %d, pass %v: a memory limit the probe cannot reach must fail", code, r.Pass)
	}
	// Only a run that reached the memory attempt shows anything about it.
	if !r.Finished {
		t.Fatalf("the probe did not reach its done line: the sandbox ended before the memory attempt")
	}
	m, ok := byName(r)["memory"]
	switch {
	case !ok:
		t.Fatalf("no memory row")
	case m.Pass || m.Result != "fail":
		t.Errorf("memory %s (%s, %s): the sandbox survived the allocation", m.Result, m.Observed, m.Layer)
	case m.Observed == "sandbox ended":
		t.Errorf("memory reads as sandbox ended although the limit is above the allocation: %+v", m)
	}
	if !strings.Contains(stderr, "memory") {
		t.Errorf("stderr does not name memory: %s", stderr)
	}
}

// memoryCeilingMiB is the ceiling a memory row's attempt names ("... up
// to N MiB"), 0 when it names none.
func memoryCeilingMiB(attempt string) int {
	var n int
	if i := strings.LastIndex(attempt, "up to "); i >= 0 {
		fmt.Sscanf(attempt[i:], "up to %d MiB", &n)
	}
	return n
}

// testsProfileMemoryMiB is the built-in tests profile's memory (1536m).
const testsProfileMemoryMiB = 1536

// TestProbeTestsProfileRunc: a job profile's boundary is judged against
// its own limits (2 CPUs, 1536m, 256 pids), not the default profile's, so
// the correct tests profile holds every control; its memory attempt goes
// past 1536m, so that limit is what must stop it.
func TestProbeTestsProfileRunc(t *testing.T) {
	need(t, "runc")
	r, code, stderr := probeForEvidence(t, config(t, ""), "--profile", "tests", "--backend", "runc")
	if r.Backend != "runc" || r.Profile != "tests" {
		t.Errorf("ran %s/%s", r.Profile, r.Backend)
	}
	assertAllHold(t, r, code, stderr, nil)
	m := byName(r)["memory"]
	if m.Observed != "SIGKILL" {
		t.Errorf("memory observed %q, want SIGKILL", m.Observed)
	}
	if n := memoryCeilingMiB(m.Attempt); n <= testsProfileMemoryMiB {
		t.Errorf("memory attempt %q: its ceiling %d MiB does not pass the profile's %d MiB", m.Attempt, n, testsProfileMemoryMiB)
	}
}

// TestProbeTestsProfileRunsc: the same on gVisor, where the host's
// counters judge cpu and memory and the memory attempt must end the
// sandbox at the profile's limit.
func TestProbeTestsProfileRunsc(t *testing.T) {
	need(t, "runsc")
	r, code, stderr := probeForEvidence(t, config(t, ""), "--profile", "tests", "--backend", "runsc")
	if r.Backend != "runsc" || r.Profile != "tests" {
		t.Errorf("ran %s/%s", r.Profile, r.Backend)
	}
	assertAllHold(t, r, code, stderr, runscLayers)
}
