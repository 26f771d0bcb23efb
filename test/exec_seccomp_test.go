package test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/runtime/seccompexec"
	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// seccompReport is the probe's seccomp line.
type seccompReport struct {
	Control  string `json:"control"`
	Observed string `json:"observed"`
	Pass     bool   `json:"pass"`
	Detail   string `json:"detail"`
	Syscalls []struct {
		Name     string `json:"name"`
		Observed string `json:"observed"`
	} `json:"syscalls"`
}

// checkSeccompProbe asserts that `bulkhead-probe -only seccomp` saw filter
// mode and the profile's answers: its own verdict, and by name the
// denials the profile promises, so that a change in the probe's table
// cannot make this pass vacuously.
func checkSeccompProbe(t *testing.T, how, out string) {
	t.Helper()
	var sc seccompReport
	done := false
	sn := bufio.NewScanner(strings.NewReader(out))
	sn.Buffer(make([]byte, 1<<20), 1<<20)
	for sn.Scan() {
		var l seccompReport
		if err := json.Unmarshal(sn.Bytes(), &l); err != nil {
			t.Fatalf("%s: probe line %q: %v", how, sn.Text(), err)
		}
		switch l.Control {
		case "seccomp":
			sc = l
		case "done":
			done = true
		}
	}
	if !done || sc.Control == "" {
		t.Fatalf("%s: the probe did not report seccomp and done:\n%s", how, out)
	}
	if !strings.HasPrefix(sc.Observed, "Seccomp: 2") || !sc.Pass {
		t.Errorf("%s: %q, pass %v (%s); want filter mode and the probe's pass", how, sc.Observed, sc.Pass, sc.Detail)
	}
	want := map[string]string{"keyctl": "EPERM", "unshare": "EPERM", "ptrace": "EPERM", "clone3": "ENOSYS"}
	for _, r := range sc.Syscalls {
		if w, ok := want[r.Name]; ok {
			if r.Observed != w {
				t.Errorf("%s: %s answered %s, want the profile's %s", how, r.Name, r.Observed, w)
			}
			delete(want, r.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("%s: the probe tried none of %v", how, want)
	}
}

// TestExecUnderTheFilter: a process started by exec, attached or
// detached, runs under the container's seccomp filter on both backends.
// runsc gives an exec'd process no filter of its own (its init alone
// gets linux.seccomp), so there bulkhead starts it through
// bulkhead-seccomp-exec; the process's output and exit status stay its
// own.
func TestExecUnderTheFilter(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			b := bundle.New(t, []string{"sleep", "300"})
			probe, err := os.ReadFile(binaries.Probe(t))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(b, "rootfs/bin/bulkhead-probe"), probe, 0o755); err != nil {
				t.Fatal(err)
			}
			id := uniqueID("exec-seccomp-" + backend)
			g := []string{"--root", root, "--backend", backend}
			must(t, append(g, "create", "--bundle", b, id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			must(t, append(g, "start", id)...)
			exec := func(args ...string) result { return bulkhead(t, "", append(append(g, "exec", id), args...)...) }

			// Attached: the probe's whole seccomp table.
			r := exec("bulkhead-probe", "-only", "seccomp")
			if r.code != 0 {
				t.Fatalf("exec probe: exit %d\nstderr: %s", r.code, r.stderr)
			}
			checkSeccompProbe(t, "attached exec", r.stdout)

			// The workload's own output, errors and exit status.
			r = exec("sh", "-c", `grep '^Seccomp:' /proc/self/status; unshare -U true; echo unshare=$?; exit 7`)
			if r.code != 7 {
				t.Errorf("exec exit %d, want the workload's 7; stderr %q", r.code, r.stderr)
			}
			if !strings.Contains(r.stdout, "Seccomp:\t2") || !strings.Contains(r.stdout, "unshare=1") {
				t.Errorf("exec stdout %q: want Seccomp: 2 and unshare failing", r.stdout)
			}
			if !strings.Contains(r.stderr, "Operation not permitted") {
				t.Errorf("exec stderr %q: want unshare's EPERM", r.stderr)
			}

			// Detached, as docker exec -d: the same table, read back.
			pidFile := filepath.Join(t.TempDir(), "exec.pid")
			must(t, append(g, "exec", "--detach", "--pid-file", pidFile, id, "sh", "-c",
				"bulkhead-probe -only seccomp > /tmp/probe.out 2>&1; echo $? > /tmp/probe.done")...)
			deadline := time.Now().Add(60 * time.Second)
			for exec("test", "-e", "/tmp/probe.done").code != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the detached exec wrote no /tmp/probe.done within 60 s")
				}
				time.Sleep(200 * time.Millisecond)
			}
			if r := exec("cat", "/tmp/probe.done"); strings.TrimSpace(r.stdout) != "0" {
				t.Errorf("detached probe: exit %q", r.stdout)
			}
			checkSeccompProbe(t, "detached exec", exec("cat", "/tmp/probe.out").stdout)

			if backend != "runsc" {
				return
			}
			// Inside gVisor too, the program refuses a filter it cannot
			// install (one instruction that is no return) and does not
			// run the command.
			r = exec("env", seccompexec.EnvName+"=0000000000000000", seccompexec.Path, "--", "touch", "/tmp/ran")
			if r.code == 0 || !strings.Contains(r.stderr, "SECCOMP_SET_MODE_FILTER") {
				t.Errorf("a broken filter: exit %d, stderr %q; want a refusal", r.code, r.stderr)
			}
			if exec("test", "-e", "/tmp/ran").code == 0 {
				t.Error("the command ran under a broken filter")
			}
			// Without the filter create wrote, exec refuses instead of
			// running the process unfiltered.
			if err := os.Remove(filepath.Join(root, "bulkhead", id, "bundle", "seccomp-exec.bpf")); err != nil {
				t.Fatal(err)
			}
			if r := exec("touch", "/tmp/ran"); r.code == 0 || !strings.Contains(r.stderr, "no seccomp filter") {
				t.Errorf("exec without the filter: exit %d, stderr %q; want it refused", r.code, r.stderr)
			}
		})
	}
}
