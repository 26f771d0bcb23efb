// Package failclosed shows that bulkhead fails closed against a backend
// that lies: it accepts the spec bulkhead hands over, silently drops part of it,
// and reports success. bulkhead must notice from the host, refuse the
// container naming the control with expected and observed values, and leave
// nothing behind.
package failclosed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// liarEnv switches the test binary into the liar backend: the wrapper
// script execs this binary with it set, so the spec is edited in Go (no jq
// or python on a fresh machine) and then runc runs with the same argv.
const liarEnv = "BULKHEAD_TEST_LIAR"

func TestMain(m *testing.M) {
	if mode := os.Getenv(liarEnv); mode != "" {
		os.Exit(liar(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// liar edits <bundle>/config.json on create, then becomes runc.
func liar(mode string, args []string) int {
	if mode == "hold" {
		return hold(args)
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		fmt.Fprintln(os.Stderr, "liar:", err)
		return 1
	}
	bundleDir, create := "", false
	for i, a := range args {
		switch {
		case a == "create":
			create = true
		case (a == "--bundle" || a == "-b") && i+1 < len(args):
			bundleDir = args[i+1]
		case strings.HasPrefix(a, "--bundle="):
			bundleDir = strings.TrimPrefix(a, "--bundle=")
		}
	}
	if err := lieLater(mode, args); err != nil {
		fmt.Fprintln(os.Stderr, "liar:", err)
		return 1
	}
	if create && mode == "exec-escape" {
		// runc then ignores errors joining the container's cgroups, at
		// every later exec too (its state keeps it).
		args = append([]string{"--rootless=true"}, args...)
	}
	if create && bundleDir != "" && !strings.HasPrefix(mode, "exec-") && !strings.HasPrefix(mode, "update-") {
		if err := lie(mode, filepath.Join(bundleDir, "config.json")); err != nil {
			fmt.Fprintln(os.Stderr, "liar:", err)
			return 1
		}
	}
	err = syscall.Exec(runc, append([]string{runc}, args...), os.Environ())
	fmt.Fprintln(os.Stderr, "liar: exec runc:", err)
	return 1
}

// lieLater edits what an exec or update hands the backend: the --process
// JSON of an exec (capabilities put back, no_new_privs dropped) or the
// --resources JSON of an update (limits above the profile's), in place in
// args.
func lieLater(mode string, args []string) error {
	flag := map[string]string{"exec-caps": "--process", "exec-nnp": "--process", "update-raise": "--resources"}[mode]
	if flag == "" {
		return nil
	}
	for i, a := range args {
		if a != flag || i+1 >= len(args) {
			continue
		}
		data, err := os.ReadFile(args[i+1])
		if err != nil {
			return err
		}
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		switch mode {
		case "exec-caps":
			chown := []any{"CAP_CHOWN"}
			v["capabilities"] = map[string]any{"bounding": chown, "effective": chown, "permitted": chown}
		case "exec-nnp":
			v["noNewPrivileges"] = false
		case "update-raise":
			// Only the caller's request (pids 32): the restore of the
			// previous limits goes through unchanged.
			if p, _ := v["pids"].(map[string]any); p == nil || p["limit"] != float64(32) {
				return nil
			}
			v["pids"] = map[string]any{"limit": 1000}
			v["memory"] = map[string]any{"limit": 1 << 30, "swap": 1 << 30}
		}
		out, err := json.Marshal(v)
		if err != nil {
			return err
		}
		f, err := os.CreateTemp("", "liar-*.json")
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Write(out); err != nil {
			return err
		}
		args[i+1] = f.Name()
	}
	return nil
}

// lie drops or adds what mode says, keeping everything else as it was
// (a generic map, so fields this test does not know survive).
func lie(mode, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	linux, _ := s["linux"].(map[string]any)
	process, _ := s["process"].(map[string]any)
	res, _ := linux["resources"].(map[string]any)
	memory, _ := res["memory"].(map[string]any)
	cpu, _ := res["cpu"].(map[string]any)
	switch mode {
	case "pids":
		delete(res, "pids")
	case "memory":
		memory["limit"] = float64(1 << 30)
		memory["swap"] = float64(1 << 30)
	case "swap":
		memory["swap"] = float64(-1)
	case "cpu":
		delete(res, "cpu")
	case "cpu-raised":
		cpu["quota"] = float64(200000)
	case "nnp":
		process["noNewPrivileges"] = false
	case "seccomp":
		delete(linux, "seccomp")
	case "seccomp-other":
		// A filter, only not the profile's: "Seccomp: 2" alone would pass.
		linux["seccomp"] = map[string]any{"defaultAction": "SCMP_ACT_ALLOW",
			"syscalls": []any{map[string]any{"names": []any{"acct"}, "action": "SCMP_ACT_ERRNO"}}}
	case "netns":
		var kept []any
		for _, ns := range linux["namespaces"].([]any) {
			if ns.(map[string]any)["type"] != "network" {
				kept = append(kept, ns)
			}
		}
		linux["namespaces"] = kept
	case "readonly":
		s["root"].(map[string]any)["readonly"] = false
	case "tmp-exec", "sysfs-rw":
		dest, drop := "/tmp", "noexec"
		if mode == "sysfs-rw" {
			dest, drop = "/sys", "ro"
		}
		for _, m := range s["mounts"].([]any) {
			m := m.(map[string]any)
			if m["destination"] != dest {
				continue
			}
			var kept []any
			for _, o := range m["options"].([]any) {
				if o != drop {
					kept = append(kept, o)
				}
			}
			m["options"] = kept
		}
	case "masked", "readonly-paths":
		field, path := "maskedPaths", "/proc/interrupts"
		if mode == "readonly-paths" {
			field, path = "readonlyPaths", "/proc/sys"
		}
		var kept []any
		for _, p := range linux[field].([]any) {
			if p != path {
				kept = append(kept, p)
			}
		}
		linux[field] = kept
	case "uid":
		user := process["user"].(map[string]any)
		user["uid"] = float64(0)
		user["gid"] = float64(0)
	case "groups":
		process["user"].(map[string]any)["additionalGids"] = []any{float64(0)}
	case "caps":
		caps, _ := process["capabilities"].(map[string]any)
		if caps == nil {
			caps = map[string]any{}
			process["capabilities"] = caps
		}
		for _, set := range []string{"bounding", "effective", "permitted", "inheritable", "ambient"} {
			list, _ := caps[set].([]any)
			caps[set] = append(list, "CAP_CHOWN")
		}
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	out, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

func needRunc(t *testing.T) {
	t.Helper()
	binaries.NeedRoot(t, "runc")
	if _, err := os.Stat(bundle.Busybox); err != nil {
		t.Skipf("needs busybox-static for the test bundle: %v", err)
	}
}

// writeLiar writes the wrapper script and a root-owned, 0644 config that
// names it as backend key and makes it the default profile's backend.
func writeLiar(t *testing.T, mode, key string) (config string) {
	t.Helper()
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "liar")
	body := fmt.Sprintf("#!/bin/sh\n# A backend that silently ignores part of the spec (%s).\nexport %s=%s\nexec %q \"$@\"\n", mode, liarEnv, mode, self)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	config = filepath.Join(dir, "config.toml")
	// A name that says no runtime declares the one the wrapper runs.
	toml := fmt.Sprintf("[backends.%s]\npath = %q\nkind = \"runc\"\n\n[profiles.default]\nbackend = %q\n", key, script, key)
	if err := os.WriteFile(config, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(config, 0o644); err != nil { // config files must not be group/world-writable
		t.Fatal(err)
	}
	return config
}

// TestFailClosed: a backend that drops or weakens one control of the spec
// in turn (pids, memory, swap, cpu, no_new_privs, seccomp, the network
// namespace, the read-only root, /tmp's noexec, sysfs read-only, a masked
// path, a read-only path, uid, groups, capabilities). create must
// fail non-zero naming the control with expected and observed values, and
// afterwards there is no container, no cgroup, no record, and config.json
// is the caller's byte for byte.
func TestFailClosed(t *testing.T) {
	needRunc(t)
	cases := []struct {
		mode, control, expected, observed string
	}{
		{"pids", "pids", "pids.max ≤ 64", "pids.max max"},
		{"memory", "memory", "memory limit ≤ 268435456", "memory limit 1073741824"},
		{"swap", "memory+swap", "memory+swap limit ≤ 268435456", "memory+swap limit max"},
		{"cpu", "cpu", "cpu quota/period ≤ 1", "cpu quota max"},
		{"cpu-raised", "cpu", "cpu quota/period ≤ 1", "cpu quota 200000 period 100000"},
		{"nnp", "no_new_privs", "NoNewPrivs 1", "NoNewPrivs 0"},
		{"seccomp", "seccomp", "Seccomp 2", "Seccomp 0"},
		{"seccomp-other", "seccomp", "the profile's filter", "another filter"},
		{"netns", "network namespace", "a network namespace other than the host's", "net:["},
		{"readonly", "read-only root", "/ mounted ro", "/ mounted rw"},
		{"tmp-exec", "mount flags", "every mount with the flags and size handed", "/tmp rw,nosuid,nodev,relatime without noexec"},
		{"sysfs-rw", "mount flags", "every mount with the flags and size handed", "/sys rw,nosuid,nodev,noexec,relatime without ro"},
		{"masked", "masked paths", "every masked path covered or absent", "/proc/interrupts not masked"},
		{"readonly-paths", "read-only paths", "every read-only path mounted ro or absent", "/proc/sys not mounted read-only"},
		{"uid", "uid", "Uid 65534 65534 65534 65534, none 0", "Uid 0 0 0 0"},
		{"groups", "groups", "no supplementary groups, no group 0", "Groups 0"},
		{"caps", "capabilities", "CapBnd 0000000000000000", "CapBnd 0000000000000001"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			cfg := writeLiar(t, c.mode, "runc")
			out := createMustFail(t, cfg, "runc")
			for _, want := range []string{"control " + c.control, "expected " + c.expected, "kernel applied " + c.observed} {
				if !strings.Contains(out, want) {
					t.Errorf("error does not say %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestFailClosedOwnBackendName: a backend the administrator named freely
// is verified as the runtime it declares it runs, so the liar under the
// name "liar" is caught by the same pids check.
func TestFailClosedOwnBackendName(t *testing.T) {
	needRunc(t)
	cfg := writeLiar(t, "pids", "liar")
	if out := createMustFail(t, cfg, "liar"); !strings.Contains(out, "control pids") {
		t.Errorf("the error does not name the pids control:\n%s", out)
	}
}

// createMustFail runs bulkhead create of a fresh busybox bundle with cfg,
// asserts a non-zero exit and that nothing is left, and returns stderr.
func createMustFail(t *testing.T, cfg, backendKey string) string {
	t.Helper()
	b := bundle.New(t, []string{"sleep", "30"})
	orig, err := os.ReadFile(filepath.Join(b, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	id := fmt.Sprintf("failclosed-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binaries.Bulkhead(t), "--root", root, "--config", cfg, "create", "--bundle", b, id)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A create that wrongly succeeds leaves an init holding the output
	// pipes until it is started: do not wait for them.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	t.Cleanup(func() {
		// Whatever the assertions say, leave this host clean.
		exec.Command("runc", "--root", filepath.Join(root, backendKey), "delete", "--force", id).Run()
	})
	if err == nil {
		t.Fatalf("create succeeded with a lying backend; stderr:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("create: %v", err)
	}
	assertNothingLeft(t, root, backendKey, id, b, orig)
	t.Logf("exit %d: %s", ee.ExitCode(), strings.TrimSpace(stderr.String()))
	return stderr.String()
}

// assertNothingLeft checks that container id under root left no
// backend container, cgroup, state or record, and that the bundle b holds
// the caller's config.json (orig) and nothing else.
func assertNothingLeft(t *testing.T, root, backendKey, id, b string, orig []byte) {
	t.Helper()
	// No container in the backend's state.
	list, err := exec.Command("runc", "--root", filepath.Join(root, backendKey), "list", "-q").CombinedOutput()
	if err != nil {
		t.Errorf("runc list: %v: %s", err, list)
	}
	if strings.Contains(string(list), id) {
		t.Errorf("runc still lists %s:\n%s", id, list)
	}
	// No cgroup, in any hierarchy.
	if cg := runtime.DefaultCgroupsPath(root, id); cgroups.Exists(cg) {
		t.Errorf("cgroup %s left behind", cg)
	}
	// No state directory or record.
	if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); !os.IsNotExist(err) {
		t.Errorf("state of %s left under %s/bulkhead: %v", id, root, err)
	}
	// config.json restored byte for byte.
	now, err := os.ReadFile(filepath.Join(b, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(now, orig) {
		t.Errorf("config.json not restored: %d bytes before, %d after", len(orig), len(now))
	}
	// No temp file next to it.
	ents, _ := os.ReadDir(b)
	for _, e := range ents {
		if e.Name() != "config.json" && e.Name() != "rootfs" {
			t.Errorf("left in the bundle: %s", e.Name())
		}
	}
}

// TestFailClosedExec: a backend that hands the exec'd process capabilities
// or drops its no_new_privs. bulkhead exec must fail non-zero naming the
// control, and the process must be gone, with anything it started: only
// the container's init is left.
func TestFailClosedExec(t *testing.T) {
	needRunc(t)
	sleep := []string{"sleep", "300"}
	// A process that leaves a child behind and ends at once, before
	// bulkhead can read it: the child got what the backend gave it.
	fork := []string{"sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 & exit 0"}
	for _, c := range []struct {
		name, mode, control, detach string
		argv                        []string
	}{
		{"", "exec-caps", "control capabilities", "--detach", sleep},
		{"", "exec-nnp", "control no_new_privs", "--detach", sleep},
		// Attached, as a person runs it: the same checks, the process killed.
		{"", "exec-caps", "control capabilities", "", sleep},
		{"", "exec-nnp", "control no_new_privs", "", sleep},
		{"-fork", "exec-caps", "control capabilities", "--detach", fork},
		{"-fork", "exec-caps", "control capabilities", "", fork},
	} {
		t.Run(c.mode+c.detach+c.name, func(t *testing.T) {
			cfg := writeLiar(t, c.mode, "runc")
			root, id := runningContainer(t, cfg)
			pidFile := filepath.Join(t.TempDir(), "exec.pid")
			args := append([]string{"--root", root, "--config", cfg, "exec", "--pid-file", pidFile, id}, c.argv...)
			if c.detach != "" {
				args = append(args[:5], append([]string{c.detach}, args[5:]...)...)
			}
			res := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), args...)
			if res.Code == 0 {
				t.Fatalf("exec succeeded with a lying backend:\n%s", res.Stderr)
			}
			if !strings.Contains(res.Stderr, c.control) {
				t.Errorf("exec error does not say %q:\n%s", c.control, res.Stderr)
			}
			if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
				t.Errorf("pid file of the killed process left: %v", err)
			}
			ps, err := exec.Command("runc", "--root", filepath.Join(root, "runc"), "ps", "--format", "json", id).Output()
			if err != nil {
				t.Fatalf("runc ps: %v", err)
			}
			var pids []int
			if err := json.Unmarshal(ps, &pids); err != nil {
				t.Fatalf("runc ps %s: %v", ps, err)
			}
			if len(pids) != 1 {
				t.Errorf("processes in the container after a refused exec: %v, want only the init", pids)
			}
			t.Logf("exit %d: %s", res.Code, strings.TrimSpace(res.Stderr))
		})
	}
}

// TestFailClosedExecEscape: a backend that lets an exec'd process stay
// out of the container's cgroups (runc with rootless cgroups, given a
// group that does not exist). What the exec forked before it ended is
// found by the container's pid namespace, not by its cgroup, and killed;
// the exec fails naming the cgroup.
func TestFailClosedExecEscape(t *testing.T) {
	needRunc(t)
	cfg := writeLiar(t, "exec-escape", "runc")
	root, id := runningContainer(t, cfg)
	initPid := containerInit(t, root, id)
	for _, detach := range []string{"--detach", ""} {
		args := []string{"--root", root, "--config", cfg, "exec"}
		if detach != "" {
			args = append(args, detach)
		}
		args = append(args, "--cgroup", "nosuch", id, "sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 & sleep 301 </dev/null >/dev/null 2>&1 & exit 0")
		res := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), args...)
		if res.Code == 0 {
			t.Fatalf("exec %s: succeeded with processes outside the container's cgroups:\n%s", detach, res.Stderr)
		}
		if !strings.Contains(res.Stderr, "outside the container's cgroup") {
			t.Errorf("exec %s: error does not say the process was outside the cgroup:\n%s", detach, res.Stderr)
		}
		if left := inPidNamespace(t, initPid); len(left) != 1 {
			t.Errorf("exec %s: processes in the container's pid namespace after a refused exec: %v, want only the init", detach, left)
		}
		t.Logf("exec %s: exit %d: %s", detach, res.Code, strings.TrimSpace(res.Stderr))
	}
}

// containerInit is the host pid of the container's init, from bulkhead
// state.
func containerInit(t *testing.T, root, id string) int {
	t.Helper()
	res := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--root", root, "state", id)
	var st struct{ Pid int }
	if err := json.Unmarshal([]byte(res.Stdout), &st); err != nil || st.Pid <= 0 {
		t.Fatalf("state %s: %v: %s %s", id, err, res.Stdout, res.Stderr)
	}
	return st.Pid
}

// inPidNamespace lists the host processes in pid's pid namespace that
// still run (not zombies: the container's init, sleep, reaps none).
func inPidNamespace(t *testing.T, pid int) []int {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		var p int
		if _, err := fmt.Sscan(e.Name(), &p); err != nil {
			continue
		}
		l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid")
		if err != nil || l != ns {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, p)
	}
	return out
}

// TestFailClosedUpdate: a backend that writes limits above the profile's
// on update. bulkhead update must fail non-zero naming the control and
// leave the cgroup at the limits it had.
func TestFailClosedUpdate(t *testing.T) {
	needRunc(t)
	cfg := writeLiar(t, "update-raise", "runc")
	root, id := runningContainer(t, cfg)
	res := binaries.Cmd{Stdin: `{"pids":{"limit":32}}`}.Run(t, binaries.Bulkhead(t), "--root", root, "--config", cfg,
		"update", "--resources", "-", id)
	if res.Code == 0 {
		t.Fatalf("update succeeded with a lying backend:\n%s", res.Stderr)
	}
	for _, want := range []string{"control pids", "previous limits restored"} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("update error does not say %q:\n%s", want, res.Stderr)
		}
	}
	g, err := cgroups.Load(runtime.DefaultCgroupsPath(root, id))
	if err != nil {
		t.Fatal(err)
	}
	l, err := g.Limits()
	if err != nil {
		t.Fatal(err)
	}
	if l.PidsMax != 64 || l.MemoryMax != 256<<20 {
		t.Errorf("after a refused update: pids.max %d, memory %d; want 64 and %d", l.PidsMax, l.MemoryMax, 256<<20)
	}
	t.Logf("exit %d: %s", res.Code, strings.TrimSpace(res.Stderr))
}

// runningContainer creates and starts a sleeping busybox container through
// bulkhead with cfg and deletes it when the test ends.
func runningContainer(t *testing.T, cfg string) (root, id string) {
	t.Helper()
	b := bundle.New(t, []string{"sleep", "300"})
	root = t.TempDir()
	id = fmt.Sprintf("failclosed-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--root", root, "--config", cfg, "delete", "--force", id)
	})
	for _, args := range [][]string{{"create", "--bundle", b, id}, {"start", id}} {
		res := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), append([]string{"--root", root, "--config", cfg}, args...)...)
		if res.Code != 0 {
			t.Fatalf("bulkhead %s: exit %d:\n%s", args[0], res.Code, res.Stderr)
		}
	}
	return root, id
}
