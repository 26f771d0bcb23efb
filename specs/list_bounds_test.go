package specs

import (
	"strconv"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// A list longer than MaxListEntries is refused before any rule runs,
// naming the field and the bound; one at the bound is judged as usual.
func TestListsBounded(t *testing.T) {
	for _, tc := range []struct {
		field string
		grow  func(s *rspec.Spec, n int)
	}{
		{"mounts", func(s *rspec.Spec, n int) {
			s.Mounts = nil
			for i := 0; i < n; i++ {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/m" + strconv.Itoa(i), Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1k"}})
			}
		}},
		{"linux.maskedPaths", func(s *rspec.Spec, n int) {
			s.Linux.MaskedPaths = nil
			for i := 0; i < n; i++ {
				s.Linux.MaskedPaths = append(s.Linux.MaskedPaths, "/m"+strconv.Itoa(i))
			}
		}},
		{"linux.readonlyPaths", func(s *rspec.Spec, n int) {
			s.Linux.ReadonlyPaths = nil
			for i := 0; i < n; i++ {
				s.Linux.ReadonlyPaths = append(s.Linux.ReadonlyPaths, "/r"+strconv.Itoa(i))
			}
		}},
		{"linux.resources.devices", func(s *rspec.Spec, n int) {
			if s.Linux.Resources == nil {
				s.Linux.Resources = &rspec.LinuxResources{}
			}
			s.Linux.Resources.Devices = make([]rspec.LinuxDeviceCgroup, n)
		}},
	} {
		s := hostileSpec()
		tc.grow(s, MaxListEntries+1)
		_, ds, err := Apply(testContext(), s)
		if err == nil || len(ds) != 1 || ds[0].Field != tc.field || !strings.Contains(ds[0].Why, "at most 1024 entries:") {
			t.Errorf("%s of %d: %v %s", tc.field, MaxListEntries+1, err, dump(ds))
		}
		s = hostileSpec()
		tc.grow(s, MaxListEntries)
		_, ds, _ = Apply(testContext(), s)
		if d, ok := find(ds, tc.field); ok && d.Action == Refused && d.Rule == "spec_fields" {
			t.Errorf("%s of %d refused: %+v", tc.field, MaxListEntries, d)
		}
		if len(ds) < 10 {
			t.Errorf("%s of %d: the rules did not run (%d decisions)", tc.field, MaxListEntries, len(ds))
		}
	}
}

// The lists whose cost only grows with their length are bounded well
// above what the kernel and engines take: 32,768 environment entries.
func TestEnvironmentBounded(t *testing.T) {
	s := hostileSpec()
	for i := len(s.Process.Env); i <= 32*MaxListEntries; i++ {
		s.Process.Env = append(s.Process.Env, "V"+strconv.Itoa(i)+"=x")
	}
	_, ds, err := Apply(testContext(), s)
	if err == nil || len(ds) != 1 || ds[0].Field != "process.env" || !strings.Contains(ds[0].Why, "at most 32768 entries:") {
		t.Errorf("%d env entries: %v %s", len(s.Process.Env), err, dump(ds))
	}
}

// An exec's process is bounded as the container's is.
func TestExecProcessBounded(t *testing.T) {
	p := hostileSpec().Process
	p.Args = make([]string, 32*MaxListEntries+1)
	_, ds, err := ApplyProcess(testContext(), p)
	if err == nil || len(ds) != 1 || ds[0].Field != "process.args" {
		t.Errorf("%d args: %v %s", len(p.Args), err, dump(ds))
	}
}

// Lists at any depth are bounded: a seccomp rule's names, hooks.
func TestNestedListsBounded(t *testing.T) {
	s := hostileSpec()
	s.Linux.Seccomp = &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno,
		Syscalls: []rspec.LinuxSyscall{{Names: make([]string, MaxListEntries+1), Action: rspec.ActAllow}}}
	s.Hooks = &rspec.Hooks{CreateRuntime: make([]rspec.Hook, MaxListEntries+1)}
	_, ds, err := Apply(testContext(), s)
	var fields []string
	for _, d := range ds {
		fields = append(fields, d.Field)
	}
	if err == nil || strings.Join(fields, " ") != "hooks.createRuntime linux.seccomp.syscalls[].names" {
		t.Errorf("refused %v (%v), want hooks.createRuntime and linux.seccomp.syscalls[].names", fields, err)
	}
}
