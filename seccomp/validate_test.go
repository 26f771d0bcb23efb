package seccomp

import (
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestValidate(t *testing.T) {
	eperm, big := uint(1), uint(5000)
	base := func(rules ...rspec.LinuxSyscall) *rspec.LinuxSeccomp {
		return &rspec.LinuxSeccomp{
			DefaultAction:   rspec.ActErrno,
			DefaultErrnoRet: &eperm,
			Architectures:   []rspec.Arch{rspec.ArchX86_64, rspec.ArchAARCH64},
			Syscalls:        append([]rspec.LinuxSyscall{allow("read", "write", "exit_group")}, rules...),
		}
	}
	arg := func(i uint, op rspec.LinuxSeccompOperator, v uint64) rspec.LinuxSeccompArg {
		return rspec.LinuxSeccompArg{Index: i, Op: op, Value: v}
	}
	tests := []struct {
		name    string
		p       *rspec.LinuxSeccomp
		wantErr []string // substrings the error must contain; nil: valid
	}{
		{"minimal", base(), nil},
		{"no architectures", func() *rspec.LinuxSeccomp { p := base(); p.Architectures = nil; return p }(), nil},
		{"x86_64-only name", base(allow("arch_prctl")), nil},
		{"names of sub-architectures", func() *rspec.LinuxSeccomp {
			p := base(allow("arch_prctl", "set_tls", "chown32", "_llseek"))
			p.Architectures = Default().Architectures
			return p
		}(), nil},
		{"conditions on two arguments", base(allowIf("mmap", arg(2, rspec.OpMaskedEqual, 4), arg(3, rspec.OpNotEqual, 0))), nil},
		{"rule equal to default action", base(rspec.LinuxSyscall{Names: []string{"ptrace"}, Action: rspec.ActErrno}), nil},
		{"nil", nil, []string{"no profile"}},
		{"misspelt name", base(allow("openat", "opnat")), []string{`"opnat"`, "unknown to libseccomp"}},
		{"two misspelt names", base(allow("opnat"), allow("raed")), []string{`"opnat"`, `"raed"`}},
		{"empty name", base(allow("")), []string{"empty syscall name"}},
		{"no names", base(rspec.LinuxSyscall{Action: rspec.ActAllow}), []string{"names: empty"}},
		{"name on no listed arch", func() *rspec.LinuxSeccomp {
			p := base(allow("set_tls"))
			p.Architectures = []rspec.Arch{rspec.ArchX86_64}
			return p
		}(), []string{`"set_tls"`, "exists on none"}},
		{"invalid action", base(rspec.LinuxSyscall{Names: []string{"read"}, Action: "SCMP_ACT_ALLOWW"}), []string{`"SCMP_ACT_ALLOWW"`, "syscalls[1] read"}},
		{"missing action", base(rspec.LinuxSyscall{Names: []string{"read"}}), []string{"action: missing"}},
		{"invalid default action", func() *rspec.LinuxSeccomp { p := base(); p.DefaultAction = "SCMP_ACT_DENY"; return p }(), []string{"defaultAction", `"SCMP_ACT_DENY"`}},
		{"notify", base(rspec.LinuxSyscall{Names: []string{"openat"}, Action: rspec.ActNotify}), []string{"SCMP_ACT_NOTIFY", "not supported"}},
		{"listener", func() *rspec.LinuxSeccomp { p := base(); p.ListenerPath = "/run/agent.sock"; return p }(), []string{"listenerPath"}},
		{"errnoRet on allow", base(rspec.LinuxSyscall{Names: []string{"read"}, Action: rspec.ActAllow, ErrnoRet: &eperm}), []string{"errnoRet 1 set for SCMP_ACT_ALLOW"}},
		{"errnoRet too large", base(rspec.LinuxSyscall{Names: []string{"ptrace"}, Action: rspec.ActErrno, ErrnoRet: &big}), []string{"errnoRet 5000"}},
		{"arg index 7", base(allowIf("socket", arg(7, rspec.OpEqualTo, 1))), []string{"index 7", "syscalls[1] socket"}},
		{"unknown operator", base(allowIf("socket", arg(0, "SCMP_CMP_IN", 1))), []string{`"SCMP_CMP_IN"`}},
		{"two conditions on one argument", base(allowIf("socket", arg(0, rspec.OpNotEqual, 38), arg(0, rspec.OpNotEqual, 40))), []string{"second condition on argument 0"}},
		{"unknown arch", func() *rspec.LinuxSeccomp {
			p := base()
			p.Architectures = append(p.Architectures, "SCMP_ARCH_VAX")
			return p
		}(), []string{"architectures[2]", `"SCMP_ARCH_VAX"`}},
		{"arch runc does not know", func() *rspec.LinuxSeccomp {
			p := base()
			p.Architectures = []rspec.Arch{rspec.ArchLOONGARCH64}
			return p
		}(), []string{`"SCMP_ARCH_LOONGARCH64"`}},
		{"unknown flag", func() *rspec.LinuxSeccomp {
			p := base()
			p.Flags = []rspec.LinuxSeccompFlag{"SECCOMP_FILTER_FLAG_TSYNC_ESRCH"}
			return p
		}(), []string{"flags[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.p)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want an error containing %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestCompileRejects reaches libseccomp itself: the conversion accepts these
// and only building the filter can tell they would not load.
func TestCompileRejects(t *testing.T) {
	spec, err := convert(&rspec.LinuxSeccomp{
		DefaultAction: rspec.ActAllow,
		Syscalls: []rspec.LinuxSyscall{
			allow("read"),
			{Names: []string{"ptrace"}, Action: rspec.ActKillProcess},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile(spec); err != nil {
		t.Fatalf("compile of a valid profile = %v", err)
	}
	// A native-arch number that libseccomp cannot map: compile must name it.
	spec.rules = append(spec.rules, filterRule{names: []string{"opnat"}, action: spec.rules[1].action})
	_, err = compile(spec)
	if err == nil || !strings.Contains(err.Error(), `"opnat"`) {
		t.Fatalf("compile with an unknown name = %v, want an error naming it", err)
	}
}
