//lint:file-ignore SA1019 Docker sends prestart hooks; the tests use what it sends

package specs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

const (
	setkeyCtlr = "5b3a4e2f1c0d"
	// otherID is a container other than testID, the one being created.
	otherID = "92281a44cc692ce594151300516f007fbdf6d8667a454623990f9cdcdd23cb6b"
)

// setkeyHook is the hook dockerd 20.10 writes, captured from a real run.
func setkeyHook(execRoot string) rspec.Hook {
	return rspec.Hook{Path: "/proc/2731/exe", Args: []string{setkeyName, setkeyExecRoot + execRoot, testID, setkeyCtlr}}
}

// TestSetkeyRefusal: only the exact hook dockerd writes passes; every
// other argument, variable or timeout is refused, naming the part at
// fault. The invariant's own predicate agrees wherever it can tell.
func TestSetkeyRefusal(t *testing.T) {
	const root = "/var/run/docker"
	timeout := 5
	for _, tc := range []struct {
		name   string
		mutate func(h *rspec.Hook)
		part   string // "" when kept
		// invariantBlind: only ruleHooks, which sees the dockerd process,
		// can tell.
		invariantBlind bool
	}{
		{name: "as dockerd writes it", mutate: func(h *rspec.Hook) {}},
		{name: "with dockerd 25's trace context", mutate: func(h *rspec.Hook) {
			h.Env = []string{"TRACEPARENT=00-5ebf70084575ef7986a74f21e4a018db-df514d71c49d34e1-01"}
		}},
		{name: "another exec root", part: ".args[1]", invariantBlind: true, mutate: func(h *rspec.Hook) { h.Args[1] = "-exec-root=/tmp/evil" }},
		{name: "exec root climbing out", part: ".args[1]", mutate: func(h *rspec.Hook) { h.Args[1] = "-exec-root=/var/run/docker/../../tmp" }},
		{name: "relative exec root", part: ".args[1]", mutate: func(h *rspec.Hook) { h.Args[1] = "-exec-root=var/run/docker" }},
		{name: "exec root with a trailing slash", part: ".args[1]", mutate: func(h *rspec.Hook) { h.Args[1] = "-exec-root=/var/run/docker/" }},
		{name: "double-dash flag", part: ".args[1]", mutate: func(h *rspec.Hook) { h.Args[1] = "--exec-root=/var/run/docker" }},
		{name: "no exec root", part: ".args", mutate: func(h *rspec.Hook) { h.Args = []string{setkeyName, testID, setkeyCtlr} }},
		{name: "a second exec root", part: ".args", mutate: func(h *rspec.Hook) {
			h.Args = []string{setkeyName, "-exec-root=/var/run/docker", "-exec-root=/tmp/evil", testID, setkeyCtlr}
		}},
		{name: "another container's id", part: ".args[2]", mutate: func(h *rspec.Hook) { h.Args[2] = otherID }},
		{name: "controller id naming another socket", part: ".args[3]", mutate: func(h *rspec.Hook) { h.Args[3] = "../../x/y" }},
		{name: "uppercase controller id", part: ".args[3]", mutate: func(h *rspec.Hook) { h.Args[3] = "5B3A4E2F1C0D" }},
		{name: "untruncated controller id", part: ".args[3]", mutate: func(h *rspec.Hook) { h.Args[3] = strings.Repeat("ab", 32) }},
		{name: "another reexec name", part: ".args[0]", mutate: func(h *rspec.Hook) { h.Args[0] = "docker-init" }},
		{name: "a library preloaded", part: ".env", mutate: func(h *rspec.Hook) { h.Env = []string{"LD_PRELOAD=/tmp/x.so"} }},
		{name: "a malformed trace context", part: ".env", mutate: func(h *rspec.Hook) { h.Env = []string{"TRACEPARENT=00-x"} }},
		{name: "two trace contexts", part: ".env", mutate: func(h *rspec.Hook) {
			tp := "TRACEPARENT=00-5ebf70084575ef7986a74f21e4a018db-df514d71c49d34e1-01"
			h.Env = []string{tp, tp}
		}},
		{name: "a timeout", part: ".timeout", mutate: func(h *rspec.Hook) { h.Timeout = &timeout }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := setkeyHook(root)
			tc.mutate(&h)
			part, why := setkeyRefusal(h, testID, root)
			if part != tc.part || (part == "") != (why == "") {
				t.Fatalf("refusal %q %q, want part %q", part, why, tc.part)
			}
			if shape := dockerdHookShape(h, testID); !tc.invariantBlind && shape != (tc.part == "") {
				t.Errorf("invariant says the shape is good: %v; the rule refuses %q", shape, tc.part)
			}
		})
	}
	if part, _ := setkeyRefusal(setkeyHook(root), "", root); part != ".args[2]" {
		t.Errorf("no container being created: part %q, want .args[2]", part)
	}
	if dockerdHookShape(setkeyHook(root), "") {
		t.Error("invariant keeps dockerd's hook with no container id")
	}
}

// TestExecRootFlags reads dockerd's command line as its flag parser does.
func TestExecRootFlags(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		root, config string
	}{
		{[]string{"/usr/sbin/dockerd", "-H", "fd://", "--containerd=/run/containerd/containerd.sock"}, "", dockerdConfig},
		{[]string{"dockerd", "--exec-root", "/run/d", "--config-file", "/etc/d.json"}, "/run/d", "/etc/d.json"},
		{[]string{"dockerd", "--exec-root=/run/a", "--exec-root=/run/b"}, "/run/b", dockerdConfig},
		{[]string{"dockerd", "--", "--exec-root=/run/a"}, "", dockerdConfig},
		{[]string{"dockerd", "--exec-root"}, "", dockerdConfig},
	} {
		root, config := execRootFlags(tc.args)
		if root != tc.root || config != tc.config {
			t.Errorf("%q: exec root %q config %q, want %q %q", tc.args, root, config, tc.root, tc.config)
		}
	}
}

// TestExecRootFromConfig: daemon.json's exec-root counts only from a file
// root alone can write.
func TestExecRootFromConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := execRootFromConfig(filepath.Join(dir, "absent.json")); err != nil || got != dockerdExecRoot {
		t.Errorf("absent daemon.json: %q %v, want the default", got, err)
	}
	if got, err := execRootFromConfig(write("none.json", `{"data-root": "/d"}`, 0o644)); err != nil || got != dockerdExecRoot {
		t.Errorf("daemon.json without exec-root: %q %v, want the default", got, err)
	}
	if _, err := execRootFromConfig("daemon.json"); err == nil {
		t.Error("relative --config-file accepted")
	}
	if _, err := execRootFromConfig(write("bad.json", `{`, 0o644)); err == nil {
		t.Error("unparsable daemon.json accepted")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: a daemon.json owned by root")
	}
	if got, err := execRootFromConfig(write("own.json", `{"exec-root": "/run/own"}`, 0o644)); err != nil || got != "/run/own" {
		t.Errorf("daemon.json exec-root: %q %v, want /run/own", got, err)
	}
	if _, err := execRootFromConfig(write("open.json", `{"exec-root": "/tmp/evil"}`, 0o666)); err == nil {
		t.Error("daemon.json others can write accepted")
	}
}

// startDockerdShell runs a copy of sh named dockerd, owned by root, with
// args after the script on its command line, and returns its
// /proc/<pid>/exe.
func startDockerdShell(t *testing.T, args ...string) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to copy")
	}
	data, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "dockerd")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// "; :" keeps the shell from replacing itself with sleep.
	cmd := exec.Command(bin, append([]string{"-c", "sleep 60; :"}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Start returns once execve has closed the old descriptors, before
	// the kernel has set up the new command line: until then
	// /proc/<pid>/cmdline reads empty.
	dir := "/proc/" + strconv.Itoa(cmd.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if data, err := os.ReadFile(dir + "/cmdline"); err == nil && len(data) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has no command line after 10 s", dir)
		}
	}
	return dir + "/exe"
}

// TestRuleHooksDockerdArguments: under a profile that keeps the caller's
// network, dockerd's hook is kept with the exec root that dockerd's own
// command line names, and refused, naming the argument, when it points
// elsewhere or names another container.
func TestRuleHooksDockerdArguments(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root process named dockerd")
	}
	execRoot := t.TempDir()
	procExe := startDockerdShell(t, "--exec-root", execRoot)
	run := func(args ...string) (*rspec.Spec, []Decision) {
		c := testContext()
		c.Profile.Network = NetworkCaller
		s := hostileSpec()
		s.Hooks = &rspec.Hooks{Prestart: []rspec.Hook{{Path: procExe, Args: args}}}
		return s, ruleHooks(c, s)
	}
	s, ds := run(setkeyName, setkeyExecRoot+execRoot, testID, setkeyCtlr)
	d := wantDecision(t, ds, "hooks.prestart[0]", Tightened)
	if len(s.Hooks.Prestart) != 1 || s.Hooks.Prestart[0].Path != d.After || filepath.Base(d.After) != "dockerd" {
		t.Fatalf("dockerd's hook not handed over by its executable: %+v, %+v", s.Hooks.Prestart, d)
	}
	for _, err := range checkDefaultDeny(&Profile{Network: NetworkCaller}, testID, &rspec.Spec{Hooks: s.Hooks}) {
		t.Errorf("invariant refuses the hook the rule kept: %v", err)
	}
	if errs := checkDefaultDeny(&Profile{Network: NetworkCaller}, otherID, &rspec.Spec{Hooks: s.Hooks}); len(errs) == 0 {
		t.Error("invariant keeps dockerd's hook for another container")
	}
	for _, tc := range []struct {
		name, field string
		args        []string
	}{
		{"the default exec root, not this dockerd's", "hooks.prestart[0].args[1]", []string{setkeyName, "-exec-root=/var/run/docker", testID, setkeyCtlr}},
		{"a socket of the caller's", "hooks.prestart[0].args[1]", []string{setkeyName, "-exec-root=" + t.TempDir(), testID, setkeyCtlr}},
		{"another container", "hooks.prestart[0].args[2]", []string{setkeyName, setkeyExecRoot + execRoot, otherID, setkeyCtlr}},
		{"an extra argument", "hooks.prestart[0].args", []string{setkeyName, setkeyExecRoot + execRoot, testID, setkeyCtlr, "-x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ds := run(tc.args...)
			d := wantDecision(t, ds, tc.field, Refused)
			if !strings.Contains(d.Why, ";") && !strings.Contains(d.Why, "must") {
				t.Errorf("refusal does not say what to change: %q", d.Why)
			}
			if len(s.Hooks.Prestart) != 0 {
				t.Errorf("refused hook still handed over: %+v", s.Hooks.Prestart)
			}
		})
	}
}
