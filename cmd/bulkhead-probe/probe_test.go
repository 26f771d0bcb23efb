package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

func TestJSONLine(t *testing.T) {
	var b bytes.Buffer
	emit(&b, "json", Result{Control: "etc", Attempt: "open", Observed: "EACCES", Layer: protocol.LayerDAC, Pass: false})
	line := b.String()
	if !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
		t.Fatalf("want exactly one line, got %q", line)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	// pass must be present even when false; optional fields absent.
	for _, k := range []string{"control", "attempt", "observed", "layer", "pass", "result"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing in %s", k, line)
		}
	}
	for _, k := range []string{"skipped", "value", "syscalls", "detail"} {
		if _, ok := m[k]; ok {
			t.Errorf("empty key %q present in %s", k, line)
		}
	}
	if m["pass"] != false || m["result"] != "fail" {
		t.Errorf("pass = %v, result = %v", m["pass"], m["result"])
	}
	b.Reset()
	emit(&b, "json", Result{Control: "tmp-size", Observed: "ENOSPC", Pass: true, Value: num(16777216)})
	if !strings.Contains(b.String(), `"value":16777216`) {
		t.Errorf("value not a plain number: %s", b.String())
	}
	b.Reset()
	emitDone(&b, "json")
	if b.String() != `{"control":"done"}`+"\n" {
		t.Errorf("done line %q", b.String())
	}
}

func TestTextLine(t *testing.T) {
	r := Result{Control: "seccomp", Observed: "Seccomp: 2", Layer: protocol.LayerSeccomp, Pass: true,
		Syscalls: []SyscallResult{{Name: "ptrace", Want: "EPERM", Observed: "EPERM", Pass: true}, {Name: "clone3", Want: "ENOSYS", Observed: "EPERM"}}}
	out := textLine(r)
	if !strings.HasPrefix(out, "PASS seccomp") || strings.Count(out, "\n") != 3 || !strings.Contains(out, "BAD  clone3") {
		t.Errorf("text:\n%s", out)
	}
	if v := verdict(skipped("x", "a", "why")); v != "SKIP" {
		t.Errorf("skipped verdict %s", v)
	}
	// A skipped control is neither pass nor fail: no evidence either way.
	var b bytes.Buffer
	emit(&b, "json", skipped("x", "a", "why"))
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["result"] != "skipped" || m["pass"] != false {
		t.Errorf("skipped control in JSON: %s", b.String())
	}
	// A Result that claims both is still skipped, never a pass.
	b.Reset()
	emit(&b, "json", Result{Control: "x", Pass: true, Skipped: true})
	if !strings.Contains(b.String(), `"pass":false,"result":"skipped"`) {
		t.Errorf("pass and skipped at once: %s", b.String())
	}
}

func TestErrnoClassification(t *testing.T) {
	wrapped := &os.PathError{Op: "open", Path: "/etc/x", Err: syscall.EROFS}
	cases := []struct {
		err   error
		name  string
		layer string
	}{
		{nil, "ok", ""},
		{wrapped, "EROFS", protocol.LayerReadOnlyMount},
		{fmt.Errorf("outer: %w", &os.PathError{Op: "open", Err: syscall.EACCES}), "EACCES", protocol.LayerDAC},
		{os.NewSyscallError("connect", syscall.ENETUNREACH), "ENETUNREACH", protocol.LayerNetns},
		{&os.PathError{Op: "fork/exec", Err: syscall.EAGAIN}, "EAGAIN", protocol.LayerPids},
		{&os.PathError{Op: "write", Err: syscall.ENOSPC}, "ENOSPC", protocol.LayerTmpfs},
		{syscall.EPERM, "EPERM", ""}, // needs context: seccomp or capabilities
		{errors.New("plain"), "plain", ""},
		{timeoutErr{}, "timeout", ""},
		{syscall.Errno(4095), "errno 4095", ""},
	}
	for _, c := range cases {
		if got := errName(c.err); got != c.name {
			t.Errorf("errName(%v) = %q, want %q", c.err, got, c.name)
		}
		if got := writeLayer(c.err); got != c.layer {
			t.Errorf("writeLayer(%v) = %q, want %q", c.err, got, c.layer)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestJudgeSyscall(t *testing.T) {
	byName := map[string]sysProbe{}
	for _, p := range seccompTable {
		byName[p.Name] = p
	}
	cases := []struct {
		name  string
		errno unix.Errno
		pass  bool
		layer string
	}{
		{"ptrace", unix.EPERM, true, protocol.LayerSeccomp},
		{"ptrace", unix.ESRCH, false, protocol.LayerNone},         // the kernel answered: seccomp let it through
		{"reboot", unix.EPERM, true, protocol.LayerSeccompOrCaps}, // the kernel would say EPERM itself
		{"clone3", unix.ENOSYS, true, protocol.LayerSeccomp},      //
		{"clone3", unix.EPERM, false, ""},                         // breaks libc's fallback to clone
		{"read", unix.EBADF, true, ""},                            //
		{"read", unix.EPERM, false, protocol.LayerSeccomp},        // an allowed call refused
		{"socket(AF_INET)", 0, true, ""},                          //
		{"socket(AF_VSOCK)", 0, false, protocol.LayerNone},        // created: not denied
	}
	for _, c := range cases {
		s := judge(byName[c.name], c.errno)
		if s.Pass != c.pass || s.Layer != c.layer {
			t.Errorf("judge(%s, %s) = pass %v layer %q, want %v %q", c.name, errnoName(c.errno), s.Pass, s.Layer, c.pass, c.layer)
		}
	}
}

// TestSeccompTable keeps the table honest: every syscall the brief names is
// probed once, rows have a reason, and the shape is right for each kind.
func TestSeccompTable(t *testing.T) {
	denied := strings.Fields(`ptrace process_vm_readv process_vm_writev io_uring_setup io_uring_enter
		io_uring_register userfaultfd keyctl add_key request_key bpf perf_event_open unshare setns mount
		umount2 mount_setattr move_mount open_tree fsopen fsconfig fsmount fspick pivot_root chroot
		kexec_load kexec_file_load init_module finit_module delete_module open_by_handle_at acct swapon
		swapoff reboot clone(NEWUSER|NEWNS) socket(AF_ALG) socket(AF_VSOCK) socket(NETLINK_KOBJECT_UEVENT) fcntl(F_SETLEASE) fcntl(F_SETDELEG)`)
	seen := map[string]sysProbe{}
	for _, p := range seccompTable {
		if _, dup := seen[p.Name]; dup {
			t.Errorf("%s twice", p.Name)
		}
		seen[p.Name] = p
		if p.Why == "" || len(p.Args) > 6 {
			t.Errorf("%s: no reason or too many args", p.Name)
		}
	}
	for _, n := range denied {
		if p, ok := seen[n]; !ok || p.Expect != deny {
			t.Errorf("%s not probed as denied", n)
		}
	}
	if seen["clone3"].Expect != enosys {
		t.Errorf("clone3 must expect ENOSYS")
	}
	for _, n := range []string{"read", "write", "openat", "socket(AF_INET)", "socket(AF_UNIX)", "fcntl(F_GETFL)"} {
		if seen[n].Expect != allow {
			t.Errorf("%s must be an allowed call", n)
		}
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "DB_PASSWORD": true, "MYSQL_PASSWD": true, "OPENAI_API_KEY": true, "STRIPE_SECRET": true,
		"AWS_ACCESS_KEY_ID": true, "AWS_SESSION_TOKEN": true, "SSH_AUTH_SOCK": true, "GOOGLE_APPLICATION_CREDENTIALS": true,
		"SIGNING_KEY": true, "AWS_REGION": false, "AWS_DEFAULT_REGION": false, "PATH": false, "HOME": false, "TERM": false,
		"KEYBOARD": false, "GOMAXPROCS": false,
	} {
		if got := secretName(name); got != want {
			t.Errorf("secretName(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestSelectControls(t *testing.T) {
	all, err := selectControls("")
	if err != nil || len(all) != len(controls) {
		t.Fatalf("all: %d %v", len(all), err)
	}
	got, err := selectControls("network, tmp")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.name)
	}
	if strings.Join(names, ",") != "tmp-write,tmp-noexec,tmp-size,network" {
		t.Errorf("selected %v (table order expected)", names)
	}
	if _, err := selectControls("netwrok"); err == nil {
		t.Errorf("a typo must be an error")
	}
}

// TestRunOutputContract runs the cheap controls in-process: every line is
// JSON, the last is the done line, and the exit code is 0 even though
// most controls fail on a developer machine.
func TestRunOutputContract(t *testing.T) {
	t.Setenv("BULKHEAD_TEST_SECRET", "value-must-not-appear")
	var out, errb bytes.Buffer
	if code := run([]string{"-only", "environment,masked-proc", "-workspace", "/nonexistent-ws"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || lines[2] != protocol.Done {
		t.Fatalf("output:\n%s", out.String())
	}
	if strings.Contains(out.String(), "value-must-not-appear") {
		t.Errorf("a secret value leaked: %s", out.String())
	}
	var env Result
	if err := json.Unmarshal([]byte(lines[1]), &env); err != nil || env.Control != "environment" || env.Pass || !strings.Contains(env.Observed, "BULKHEAD_TEST_SECRET") {
		t.Errorf("environment line (table order: after masked-proc) %s (%v)", lines[1], err)
	}
	out.Reset()
	if code := run([]string{"-only", "workspace", "-workspace", "/nonexistent-ws", "-format", "text"}, &out, &errb); code != 0 {
		t.Fatal(code)
	}
	if !strings.HasPrefix(out.String(), "SKIP workspace") || !strings.HasSuffix(out.String(), "done\n") {
		t.Errorf("text output:\n%s", out.String())
	}
	if code := run([]string{"-format", "yaml"}, &out, &errb); code != 2 {
		t.Errorf("bad format: exit %d", code)
	}
}

func TestRunControlTimeout(t *testing.T) {
	c := control{"slow", 50 * time.Millisecond, func(*probeEnv) Result { time.Sleep(time.Second); return Result{Pass: true} }}
	if r := runControl(c, &probeEnv{}); r.Pass || r.Observed != "timeout" || r.Control != "slow" {
		t.Errorf("%+v", r)
	}
	p := control{"boom", time.Second, func(*probeEnv) Result { panic("x") }}
	if r := runControl(p, &probeEnv{}); r.Pass || r.Observed != "panic" {
		t.Errorf("%+v", r)
	}
}

// TestPrintEuid checks the line the no_new_privs control parses from a
// setuid copy of the probe.
func TestPrintEuid(t *testing.T) {
	var out bytes.Buffer
	run([]string{"-print-euid"}, &out, &out)
	want := fmt.Sprintf("%s euid=%d uid=%d\n", euidMarker, os.Geteuid(), os.Getuid())
	if out.String() != want {
		t.Errorf("got %q want %q", out.String(), want)
	}
}

// TestControlsAreTheProtocols: the probe attempts exactly the controls the
// host expects a line for, in the same order.
func TestControlsAreTheProtocols(t *testing.T) {
	var names []string
	for _, c := range controls {
		names = append(names, c.name)
	}
	if !slices.Equal(names, protocol.Controls) {
		t.Fatalf("probe controls %v, protocol %v", names, protocol.Controls)
	}
}
