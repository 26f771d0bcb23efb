package verify

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/seccomp"
	"bulkhead.dev/bulkhead/specs"
)

// TestExpectNarrowedSeccomp: verification holds the kernel to the handed
// filter when it is the profile's narrowed by the caller's, and to the
// profile's own for any other handed filter, which then cannot match.
func TestExpectNarrowedSeccomp(t *testing.T) {
	p := specs.DefaultProfile()
	policy, compiled, err := seccomp.ForProfileCompiled(p.Seccomp, p.CompatSyscalls, p.ExecutesWrites())
	if err != nil {
		t.Fatal(err)
	}
	caller := &rspec.LinuxSeccomp{DefaultAction: rspec.ActAllow,
		Syscalls: []rspec.LinuxSyscall{{Names: []string{"chmod", "fchmodat"}, Action: rspec.ActErrno}}}
	narrowed, _, _ := seccomp.Combine(policy, caller)
	want, err := seccomp.CompiledFor(narrowed)
	if err != nil {
		t.Fatal(err)
	}
	widened, _, _ := seccomp.Combine(policy, caller)
	widened.Syscalls = append(widened.Syscalls, rspec.LinuxSyscall{Names: []string{"ptrace"}, Action: rspec.ActAllow})
	for name, c := range map[string]struct {
		handed *rspec.LinuxSeccomp
		want   seccomp.Compiled
	}{
		"the profile's":            {policy, compiled},
		"narrowed by the caller's": {narrowed, want},
		"the caller's own":         {caller, compiled},
		"narrowed, then widened":   {widened, compiled},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := Expect(&p, &rspec.Spec{Linux: &rspec.Linux{Seccomp: c.handed}}, "runc")
			if err != nil {
				t.Fatal(err)
			}
			if e.Seccomp.Forms[0] != c.want.Forms[0] {
				t.Fatalf("expected filter %+v, want %+v", e.Seccomp.Forms[0], c.want.Forms[0])
			}
		})
	}
	if compiled.Forms[0] == want.Forms[0] {
		t.Fatal("test premise: the narrowed filter compiles to the profile's program")
	}
}
