package runtime

import (
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/seccomp"
)

func rulesNaming(p *rspec.LinuxSeccomp, name string) []rspec.LinuxSyscall {
	var out []rspec.LinuxSyscall
	for _, r := range p.Syscalls {
		if slices.Contains(r.Names, name) {
			out = append(out, r)
		}
	}
	return out
}

// TestTranslateSeccompForGVisorDefault: on the default profile only clone3
// (ENOSYS → TRACE) and pselect6 (alias) change, and nothing is allowed
// that was not.
func TestTranslateSeccompForGVisorDefault(t *testing.T) {
	p := seccomp.Default()
	before := seccomp.Default()
	notes := backend.TranslateSeccompForGVisor(p)
	if len(notes) != 2 {
		t.Errorf("notes %q, want two (clone3, pselect6)", notes)
	}
	if p.DefaultAction != rspec.ActErrno || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != 1 {
		t.Errorf("default action changed: %s %v", p.DefaultAction, p.DefaultErrnoRet)
	}
	c3 := rulesNaming(p, "clone3")
	if len(c3) != 1 || c3[0].Action != rspec.ActTrace {
		t.Fatalf("clone3 rules %+v, want one SCMP_ACT_TRACE", c3)
	}
	ps := rulesNaming(p, "pselect6")
	if len(ps) != 1 || !slices.Contains(ps[0].Names, "pselect") || ps[0].Action != rspec.ActAllow {
		t.Errorf("pselect6 rules %+v, want the allow rule also naming pselect", ps)
	}
	// Same rules, same order, same conditions; only those two differ.
	if len(p.Syscalls) != len(before.Syscalls) {
		t.Fatalf("%d rules, want %d", len(p.Syscalls), len(before.Syscalls))
	}
	for i := range p.Syscalls {
		a, b := p.Syscalls[i], before.Syscalls[i]
		if slices.Contains(b.Names, "clone3") || slices.Contains(b.Names, "pselect6") {
			continue
		}
		if a.Action != b.Action || !slices.Equal(a.Names, b.Names) || len(a.Args) != len(b.Args) {
			t.Errorf("rule %d changed: %+v, was %+v", i, a, b)
		}
	}
	for _, name := range seccomp.Denied {
		for _, r := range rulesNaming(p, name) {
			if r.Action == rspec.ActAllow || r.Action == rspec.ActLog {
				t.Errorf("%s allowed after translation", name)
			}
		}
	}
}

func TestTranslateSeccompForGVisorErrnos(t *testing.T) {
	enosys, eacces := uint(38), uint(13)
	p := &rspec.LinuxSeccomp{
		DefaultAction:   rspec.ActErrno,
		DefaultErrnoRet: &enosys,
		Syscalls: []rspec.LinuxSyscall{
			{Names: []string{"read"}, Action: rspec.ActAllow},
			{Names: []string{"openat2"}, Action: rspec.ActErrno, ErrnoRet: &enosys},
			{Names: []string{"chmod"}, Action: rspec.ActErrno, ErrnoRet: &eacces},
			{Names: []string{"ptrace"}, Action: rspec.ActErrno},
		},
	}
	notes := backend.TranslateSeccompForGVisor(p)
	if p.DefaultAction != rspec.ActTrace {
		t.Errorf("default ERRNO(ENOSYS) became %s, want SCMP_ACT_TRACE", p.DefaultAction)
	}
	want := []rspec.LinuxSeccompAction{rspec.ActAllow, rspec.ActTrace, rspec.ActErrno, rspec.ActErrno}
	for i, r := range p.Syscalls {
		if r.Action != want[i] {
			t.Errorf("%v: action %s, want %s", r.Names, r.Action, want[i])
		}
	}
	if len(notes) != 3 {
		t.Errorf("notes %q, want three (default, openat2, chmod)", notes)
	}
	if backend.TranslateSeccompForGVisor(nil) != nil {
		t.Error("notes for no profile")
	}
}

// TestTranslateForGVisor: the whole translation runs on a spec the rules
// produced, and the result still passes runc's validation.
func TestTranslateForGVisor(t *testing.T) {
	limit := int64(64)
	s := &rspec.Spec{
		Root:    &rspec.Root{Path: "/"},
		Process: &rspec.Process{Args: []string{"true"}, Cwd: "/"},
		Linux: &rspec.Linux{
			Seccomp:   seccomp.Default(),
			Resources: &rspec.LinuxResources{Pids: &rspec.LinuxPids{Limit: &limit}},
		},
	}
	backend.TranslateForGVisor(s)
	if got := *s.Linux.Resources.Pids.Limit; got != backend.GVisorHostPids(64) {
		t.Errorf("pids limit %d, want %d", got, backend.GVisorHostPids(64))
	}
	if r := rulesNaming(s.Linux.Seccomp, "clone3"); len(r) != 1 || r[0].Action != rspec.ActTrace {
		t.Errorf("clone3 rules %+v", r)
	}
	if err := validateForBackend("x", t.TempDir(), s, &Globals{}); err != nil {
		t.Errorf("translated spec fails runc's validation: %v", err)
	}
}

// TestGVisorNprocCarriesTheLimit: inside gVisor RLIMIT_NPROC is the
// profile's process limit, so neither its soft nor its hard value may
// stay above that limit.
func TestGVisorNprocCarriesTheLimit(t *testing.T) {
	for _, c := range []struct {
		name       string
		soft, hard uint64
		want       uint64
	}{
		{"both above", 1000, 1000, 64},
		{"soft above", 100000, 10, 64},
		{"hard above", 10, 100000, 64},
		{"both below", 10, 20, 0},
	} {
		limit := int64(64)
		s := &rspec.Spec{
			Process: &rspec.Process{Rlimits: []rspec.POSIXRlimit{{Type: "RLIMIT_NPROC", Soft: c.soft, Hard: c.hard}}},
			Linux:   &rspec.Linux{Resources: &rspec.LinuxResources{Pids: &rspec.LinuxPids{Limit: &limit}}},
		}
		backend.TranslateForGVisor(s)
		r := s.Process.Rlimits[0]
		if c.want != 0 && (r.Soft != c.want || r.Hard != c.want) {
			t.Errorf("%s: RLIMIT_NPROC %d/%d, want %d/%d", c.name, r.Soft, r.Hard, c.want, c.want)
		}
		if c.want == 0 && (r.Soft != c.soft || r.Hard != c.hard) {
			t.Errorf("%s: RLIMIT_NPROC %d/%d, want it kept at %d/%d", c.name, r.Soft, r.Hard, c.soft, c.hard)
		}
	}
}

// TestTranslateSeccompForGVisorLog: runsc refuses SCMP_ACT_LOG, and with
// it the container; the call runs there as on runc, unlogged.
func TestTranslateSeccompForGVisorLog(t *testing.T) {
	p := &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno, Syscalls: []rspec.LinuxSyscall{
		{Names: []string{"read"}, Action: rspec.ActAllow},
		{Names: []string{"uname"}, Action: rspec.ActLog},
	}}
	notes := backend.TranslateSeccompForGVisor(p)
	if r := rulesNaming(p, "uname"); len(r) != 1 || r[0].Action != rspec.ActAllow || len(notes) != 1 {
		t.Errorf("uname: %+v, notes %q; want one allow rule and a note", r, notes)
	}
}
