// Package doctor holds the must-show tests of `bulkhead doctor` on this
// host: its real output and exit status, and the installer refusing a node
// it fails.
package doctor

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
)

type check struct {
	Name   string `json:"check"`
	Status string `json:"status"`
	Looked string `json:"looked_at"`
	Found  string `json:"found"`
	Fix    string `json:"fix"`
}

type report struct {
	Checks []check `json:"checks"`
	Fail   int     `json:"fail"`
}

// config writes a root-owned configuration: the built-in one with the
// audit log in the test's temp dir.
func config(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(p, []byte("audit_log = \""+filepath.Join(dir, "audit.jsonl")+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func need(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the live check creates containers")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skipf("needs runc on PATH (hack/install-deps.sh installs it): %v", err)
	}
}

// doctor runs bulkhead doctor and returns its stdout and exit status.
func doctor(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binaries.Bulkhead(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("bulkhead %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), 0
}

func debianRunc(t *testing.T) string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "runc").Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// TestDoctorThisHost: doctor's real output here, in text and JSON, with
// the exit status documented (1 exactly when a line says fail). On Debian
// 12's runc 1.1.5+ds1-1+deb12u1 the changelog names CVE-2024-21626 and
// none of the three 2025 escapes, so those three fail with what to do.
func TestDoctorThisHost(t *testing.T) {
	need(t)
	cfg := config(t)
	root := filepath.Join(t.TempDir(), "state")
	text, status := doctor(t, "--root", root, "--config", cfg, "doctor")
	t.Logf("bulkhead doctor (exit %d):\n%s", status, text)
	js, jsStatus := doctor(t, "--root", root, "--config", cfg, "doctor", "--format", "json")
	var rep report
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, js)
	}
	byName := map[string]check{}
	fails := 0
	for _, c := range rep.Checks {
		byName[c.Name] = c
		if c.Status == "fail" {
			fails++
			if c.Fix == "" {
				t.Errorf("fail line without a fix: %+v", c)
			}
		}
	}
	if want := map[bool]int{true: 1, false: 0}[fails > 0]; status != want || jsStatus != want {
		t.Errorf("exit %d (json %d) with %d failed checks, want %d", status, jsStatus, fails, want)
	}
	textFails := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "fail  ") {
			textFails++
		}
	}
	if textFails != fails || rep.Fail != fails {
		t.Errorf("text and json disagree on the failures (json %d)", fails)
	}
	for _, name := range []string{"backend runc", "backend runc CVE-2024-21626", "seccomp", "cgroup pids", "cgroup memory", "cgroup cpu", "cgroup devices", "live runc"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no %q line", name)
		}
	}
	// The live check is evidence: it verified a container it created.
	if c := byName["live runc"]; c.Status != "ok" || !strings.Contains(c.Found, "created and verified in") {
		t.Errorf("live runc: %+v", c)
	}
	if v := debianRunc(t); v == "1.1.5+ds1-1+deb12u1" {
		if c := byName["backend runc CVE-2024-21626"]; c.Status != "ok" || !strings.Contains(c.Found, "changelog.Debian.gz names CVE-2024-21626") {
			t.Errorf("the 2024 fix is backported and the changelog decides: %+v", c)
		}
		for _, id := range []string{"CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"} {
			c := byName["backend runc "+id]
			if c.Status != "fail" || !strings.Contains(c.Found, "1.1.5+ds1") ||
				!strings.Contains(c.Found, "/usr/share/doc/runc/changelog.Debian.gz (package runc 1.1.5+ds1-1+deb12u1) does not name "+id) {
				t.Errorf("%s on Debian's 1.1.5+ds1-1+deb12u1: %+v", id, c)
			}
			if !strings.Contains(c.Fix, "1.2.8 / 1.3.3 / 1.4.0-rc.3") || !strings.Contains(c.Fix, "runsc") {
				t.Errorf("%s: fix %q does not name a fixed runc and the runsc backend", id, c.Fix)
			}
		}
		if status != 1 {
			t.Errorf("exit %d on a host whose runc lacks three escape fixes, want 1", status)
		}
	} else {
		t.Logf("runc package %q is not Debian 12's 1.1.5+ds1-1+deb12u1: its verdicts are shown above, not pinned", v)
	}
}

// TestInstallRefusesFailingNode: install runs doctor first; where a check
// fails it writes nothing and says why, unless --force.
func TestInstallRefusesFailingNode(t *testing.T) {
	need(t)
	cfg := config(t)
	root := filepath.Join(t.TempDir(), "state")
	_, status := doctor(t, "--root", root, "--config", cfg, "doctor")
	daemon := filepath.Join(t.TempDir(), "daemon.json")
	cmd := exec.Command(binaries.Bulkhead(t), "--root", root, "--config", cfg, "install", "docker", "--config", daemon)
	out, err := cmd.CombinedOutput()
	t.Logf("bulkhead install docker:\n%s", out)
	if status == 0 {
		if err != nil {
			t.Errorf("doctor passes here, install failed: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatal("install registered bulkhead on a node doctor fails")
	}
	if !strings.Contains(string(out), "refusing to register bulkhead on this node") || !strings.Contains(string(out), "--force") ||
		!strings.Contains(string(out), "\nfail  ") {
		t.Errorf("install does not print the failed checks and how to proceed")
	}
	if _, err := os.Stat(daemon); !os.IsNotExist(err) {
		t.Errorf("refused install wrote %s (%v)", daemon, err)
	}
	cmd = exec.Command(binaries.Bulkhead(t), "--root", root, "--config", cfg, "install", "docker", "--config", daemon, "--force")
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--force: registering although") {
		t.Fatalf("install --force: %v\n%s", err, out)
	}
	// The entries will read the default file, not the one given here.
	if !strings.Contains(string(out), `"runtimeArgs": ["--config", "`+cfg+`"]`) {
		t.Errorf("install with --config %s does not say the runtime reads the default file:\n%s", cfg, out)
	}
	if data, err := os.ReadFile(daemon); err != nil || !strings.Contains(string(data), `"bulkhead"`) {
		t.Errorf("install --force did not register: %v %s", err, data)
	}
}

// The engine runs bulkhead-runsc as root for every gVisor container, as
// it runs bulkhead: a bulkhead-runsc link another user owns was
// registered as it stood.
func TestInstallJudgesRunscLink(t *testing.T) {
	need(t)
	if _, err := exec.LookPath("runsc"); err != nil {
		t.Skipf("needs runsc on PATH for a bulkhead-runsc entry (hack/install-deps.sh installs it): %v", err)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "bulkhead")
	data, err := os.ReadFile(binaries.Bulkhead(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "bulkhead-runsc")
	if err := os.Symlink("bulkhead", link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cfg := config(t)
	for _, engine := range []string{"docker", "containerd"} {
		target := filepath.Join(t.TempDir(), engine+".conf")
		out, err := exec.Command(exe, "--root", filepath.Join(t.TempDir(), "state"), "--config", cfg, "install", engine, "--config", target, "--force").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "a link of uid 65534") {
			t.Errorf("install %s with a bulkhead-runsc link uid 65534 owns: %v, want refused naming it\n%s", engine, err, out)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("refused install %s wrote %s (%v)", engine, target, err)
		}
	}
}
