// Package inguest holds the tests that need a host on cgroup v2 alone:
// the unified hierarchy with the pids, memory and cpu controllers and no
// v1 hierarchy. On such a host they run as they are; test/cgroupv2 boots a
// guest kernel with cgroup_no_v1=all and runs them there, so they run on
// every host, whatever its own cgroup mode.
package inguest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// liarEnv switches the test binary into a backend that edits the spec
// before it becomes runc (as in test/failclosed), so the liar needs no
// interpreter beyond the guest's busybox sh.
const liarEnv = "BULKHEAD_TEST_LIAR"

func TestMain(m *testing.M) {
	if mode := os.Getenv(liarEnv); mode != "" {
		os.Exit(liar(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// cmdTimeout bounds one bulkhead command: software emulation makes a
// create take seconds, so this only catches a hang.
const cmdTimeout = 10 * time.Minute

// needV2 skips unless this is root on a host whose cgroups are v2 alone.
func needV2(t *testing.T) {
	t.Helper()
	binaries.NeedRoot(t, "runc")
	if m := cgroupsv3.Mode(); m != cgroupsv3.Unified {
		t.Skipf("needs a host on cgroup v2 alone, this one is %s: test/cgroupv2 runs this package in a guest kernel that is", cgroups.ModeName())
	}
	if _, err := os.Stat(bundle.Busybox); err != nil {
		t.Skipf("needs busybox-static for the test bundle: %v", err)
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// bulkhead runs the bulkhead binary with stdin and returns what it printed.
func bulkhead(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binaries.Bulkhead(t), args...)
	// Pipes, not files: runc gives a stdio file to the container's uid,
	// and bulkhead refuses one that is not already that uid's. Output is
	// read up to create's exit (binaries.Capture), since a created
	// container's init holds the write end.
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	if _, err := inW.WriteString(stdin); err != nil { // a few lines: within the pipe's buffer
		t.Fatal(err)
	}
	inW.Close()
	out, err := binaries.NewCapture()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := binaries.NewCapture()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, out.W, errOut.W
	start := time.Now()
	err = cmd.Run()
	stdout, stderr := out.Collect(), errOut.Collect()
	r := result{stdout: stdout, stderr: stderr}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("bulkhead %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("bulkhead %s: exit %d in %s", strings.Join(args, " "), r.code, time.Since(start).Round(time.Millisecond))
	return r
}

// env is one container's surroundings: a state root, a configuration
// and, when set, the liar backend.
type env struct {
	root, config string
}

// newEnv writes a root-owned 0644 configuration with the audit log in the
// test's temp dir, plus extra.
func newEnv(t *testing.T, extra string) env {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("audit_log = %q\n%s", filepath.Join(dir, "audit.jsonl"), extra)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return env{root: filepath.Join(dir, "state"), config: cfg}
}

func (e env) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return bulkhead(t, stdin, append([]string{"--root", e.root, "--config", e.config}, args...)...)
}

var ids int

// newID is unique per test process and run.
func newID(t *testing.T) string {
	ids++
	return fmt.Sprintf("v2-%d-%d", os.Getpid(), ids)
}

// cgroupsPath is an explicit path per container, so a test knows where
// its cgroup would be and can show that none is left.
func cgroupsPath(id string) string { return "/bulkhead-guest/" + id }

// sleeper is a bundle whose process sleeps, with the cgroups path set.
func sleeper(t *testing.T, id string, mutate ...func(*rspec.Spec)) string {
	t.Helper()
	return bundleRunning(t, id, []string{"sleep", "600"}, mutate...)
}

// bundleRunning is a bundle whose process runs args, with the cgroups path
// set.
func bundleRunning(t *testing.T, id string, args []string, mutate ...func(*rspec.Spec)) string {
	t.Helper()
	return bundle.New(t, args, append([]func(*rspec.Spec){func(s *rspec.Spec) {
		s.Linux.CgroupsPath = cgroupsPath(id)
	}}, mutate...)...)
}

// created creates and starts id, and deletes it when the test ends. It
// returns the init pid.
func (e env) created(t *testing.T, b, id string) int {
	t.Helper()
	if r := e.run(t, "", "create", "--bundle", b, id); r.code != 0 {
		t.Fatalf("create: exit %d: %s", r.code, r.stderr)
	}
	t.Cleanup(func() { e.run(t, "", "delete", "--force", id) })
	if r := e.run(t, "", "start", id); r.code != 0 {
		t.Fatalf("start: exit %d: %s", r.code, r.stderr)
	}
	r := e.run(t, "", "state", id)
	var st struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Pid <= 0 {
		t.Fatalf("state: %v: %s %s", err, r.stdout, r.stderr)
	}
	return st.Pid
}

// groupDir is the v2 directory of pid's cgroup, from /proc/PID/cgroup
// ("0::/path"), the only line a v2-only host has.
func groupDir(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "0::/") {
		t.Fatalf("/proc/%d/cgroup is not one v2 line: %q", pid, data)
	}
	return filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(lines[0], "0::"))
}

// file reads one cgroup file, trimmed.
func file(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// assertNothingLeft: no cgroup at the path, no runc container, no record.
func (e env) assertNothingLeft(t *testing.T, id string) {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup", cgroupsPath(id))
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("cgroup %s left behind", dir)
	}
	for _, b := range []string{"runc", "runsc"} {
		if _, err := os.Stat(filepath.Join(e.root, b, id)); err == nil {
			t.Errorf("%s state of %s left behind", b, id)
		}
	}
	if _, err := os.Stat(filepath.Join(e.root, "bulkhead", id)); err == nil {
		t.Errorf("bulkhead record of %s left behind", id)
	}
}

// unchanged asserts that the bundle's config.json is still the caller's.
func unchanged(t *testing.T, b string, orig []byte) {
	t.Helper()
	now, err := os.ReadFile(filepath.Join(b, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(now, orig) {
		t.Errorf("config.json changed by a refused create")
	}
}

func readConfig(t *testing.T, b string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// kernelRelease is uname -r.
func kernelRelease() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return "unknown"
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}
