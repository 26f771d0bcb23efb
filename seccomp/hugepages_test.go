package seccomp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestNoRefusedFlags: every rule that lets a call through (allow, log) keeps
// it, with the flag that asks for huge pages refused; other actions are
// left alone.
func TestNoRefusedFlags(t *testing.T) {
	p := &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno, Syscalls: []rspec.LinuxSyscall{
		{Names: []string{"read", "mmap", "shmget"}, Action: rspec.ActAllow},
		{Names: []string{"memfd_create"}, Action: rspec.ActAllow, Args: []rspec.LinuxSeccompArg{{Index: 0, Value: 1, Op: rspec.OpNotEqual}}},
		{Names: []string{"mmap2"}, Action: rspec.ActLog},
		{Names: []string{"mmap"}, Action: rspec.ActKillProcess},
	}}
	if err := NoRefusedFlags(p); err != nil {
		t.Fatal(err)
	}
	if r := rulesFor(p, "read"); len(r) != 1 || len(r[0].Args) != 0 {
		t.Errorf("read: %+v", r)
	}
	for _, c := range []struct {
		name   string
		action rspec.LinuxSeccompAction
		args   int
		index  uint
		mask   uint64
	}{{"shmget", rspec.ActAllow, 1, 2, 0o4000}, {"memfd_create", rspec.ActAllow, 2, 1, 4}, {"mmap2", rspec.ActLog, 1, 3, 0x40000}} {
		r := rulesFor(p, c.name)
		if len(r) != 1 || r[0].Action != c.action || len(r[0].Args) != c.args {
			t.Fatalf("%s: %+v", c.name, r)
		}
		a := r[0].Args[c.args-1]
		if a.Index != c.index || a.Value != c.mask || a.ValueTwo != 0 || a.Op != rspec.OpMaskedEqual {
			t.Errorf("%s: flag condition %+v", c.name, a)
		}
	}
	var allowed, killed int
	for _, r := range rulesFor(p, "mmap") {
		switch r.Action {
		case rspec.ActAllow:
			allowed++
			if len(r.Args) != 1 || r.Args[0].Index != 3 || r.Args[0].Value != 0x40000 {
				t.Errorf("mmap: %+v", r)
			}
		case rspec.ActKillProcess:
			killed++
		}
	}
	if allowed != 1 || killed != 1 {
		t.Errorf("mmap: %d allowing rules, %d killing, want 1 each", allowed, killed)
	}
}

// TestNoRefusedFlagsRefusesAJudgedFlagsArgument: a rule that already judges
// the flags' argument cannot take the flag's condition too (runc would OR
// them): the profile is refused, naming the rule, rather than left to
// pass the flag or stripped of every mmap.
func TestNoRefusedFlagsRefusesAJudgedFlagsArgument(t *testing.T) {
	p := &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno, Syscalls: []rspec.LinuxSyscall{
		{Names: []string{"read"}, Action: rspec.ActAllow},
		{Names: []string{"mmap"}, Action: rspec.ActAllow, Args: []rspec.LinuxSeccompArg{{Index: 3, Value: 0x20, ValueTwo: 0x20, Op: rspec.OpMaskedEqual}}},
	}}
	err := NoRefusedFlags(p)
	if err == nil || !strings.Contains(err.Error(), "syscalls[1] (mmap): a condition on argument 3") {
		t.Fatalf("NoRefusedFlags = %v, want the rule named", err)
	}
}

// TestOperatorProfileMustDenyByDefault: an operator's profile that lets
// every call it does not name through is refused: it could not refuse the
// calls a kernel adds, nor keep a caller's filter inside it.
func TestOperatorProfileMustDenyByDefault(t *testing.T) {
	for _, action := range []string{"SCMP_ACT_ALLOW", "SCMP_ACT_LOG"} {
		path := filepath.Join(t.TempDir(), "profile.json")
		data := `{"defaultAction": "` + action + `", "syscalls": [{"names": ["acct"], "action": "SCMP_ACT_ERRNO"}]}`
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ForProfile(path, false, false); err == nil || !strings.Contains(err.Error(), "default-deny") {
			t.Errorf("%s: ForProfile = %v, want refused as not default-deny", action, err)
		}
	}
}

// TestOperatorProfileNeverAllowsPtrace: a traced call fails only while
// nothing traces the caller, and runsc gets every ENOSYS rule as a trace
// rule; an operator's profile that allows ptrace (moby's does) keeps
// everything else, with ptrace refused.
func TestOperatorProfileNeverAllowsPtrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.json")
	data := `{"defaultAction": "SCMP_ACT_TRACE", "syscalls": [
		{"names": ["read", "ptrace", "write"], "action": "SCMP_ACT_ALLOW"},
		{"names": ["ptrace"], "action": "SCMP_ACT_LOG"}]}`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := ForProfile(path, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rulesFor(p, "ptrace") {
		if r.Action != rspec.ActErrno {
			t.Errorf("ptrace: %+v, want refused", r)
		}
	}
	if r := rulesFor(p, "write"); len(r) != 1 || r[0].Action != rspec.ActAllow {
		t.Errorf("write: %+v, want kept", r)
	}
}
