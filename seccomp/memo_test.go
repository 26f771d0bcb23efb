package seccomp

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestMemoAnswersAsWithout: the remembered answer equals a fresh one, a
// caller changing what it got does not change what the next caller gets,
// and a profile file rewritten between two calls is judged by its new
// content.
func TestMemoAnswersAsWithout(t *testing.T) {
	for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}} {
		fresh, freshC, err := forProfileCompiled("", nil, flags[0], flags[1])
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			p, c, err := ForProfileCompiled("", flags[0], flags[1])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, fresh) || !reflect.DeepEqual(c, freshC) {
				t.Fatalf("compat %v execWrites %v: remembered answer differs from a fresh one", flags[0], flags[1])
			}
			// What a caller does with its copy stays with it.
			p.Syscalls[0].Names[0] = "changed"
			p.Syscalls = p.Syscalls[:1]
			p.Architectures[0] = "changed"
			c.Forms[0].Insns = -1
		}
	}

	path := filepath.Join(t.TempDir(), "profile.json")
	write := func(action string) {
		data := `{"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_AARCH64"],` +
			`"syscalls":[{"names":["read","write","exit_group"],"action":"` + action + `"}]}`
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("SCMP_ACT_ALLOW")
	p, _, err := ForProfileCompiled(path, false, true)
	if err != nil {
		t.Fatal(err)
	}
	write("SCMP_ACT_LOG")
	q, _, err := ForProfileCompiled(path, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if p.Syscalls[0].Action != rspec.ActAllow || q.Syscalls[0].Action != rspec.ActLog {
		t.Errorf("actions %s then %s after the file changed, want %s then %s", p.Syscalls[0].Action, q.Syscalls[0].Action, rspec.ActAllow, rspec.ActLog)
	}
}

// TestCloneSeccompDeep: the clone shares no memory with the original, and
// the spec types have no field cloneSeccomp does not know of.
func TestCloneSeccompDeep(t *testing.T) {
	if n := reflect.TypeFor[rspec.LinuxSeccomp]().NumField(); n != 7 {
		t.Fatalf("LinuxSeccomp has %d fields: teach cloneSeccomp the new ones", n)
	}
	if n := reflect.TypeFor[rspec.LinuxSyscall]().NumField(); n != 4 {
		t.Fatalf("LinuxSyscall has %d fields: teach cloneSeccomp the new ones", n)
	}
	if n := reflect.TypeFor[rspec.LinuxSeccompArg]().NumField(); n != 4 {
		t.Fatalf("LinuxSeccompArg has %d fields: teach cloneSeccomp the new ones", n)
	}
	one, two := uint(1), uint(2)
	orig := &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno, DefaultErrnoRet: &one,
		Architectures: []rspec.Arch{rspec.ArchX86_64}, Flags: []rspec.LinuxSeccompFlag{"f"},
		ListenerPath: "l", ListenerMetadata: "m",
		Syscalls: []rspec.LinuxSyscall{{Names: []string{"read"}, Action: rspec.ActAllow, ErrnoRet: &two,
			Args: []rspec.LinuxSeccompArg{{Index: 1, Value: 2, ValueTwo: 3, Op: rspec.OpEqualTo}}}}}
	want := cloneSeccomp(orig)
	if !reflect.DeepEqual(want, orig) {
		t.Fatal("clone differs from the original")
	}
	cp := cloneSeccomp(orig)
	*cp.DefaultErrnoRet = 9
	cp.Architectures[0] = "x"
	cp.Flags[0] = "x"
	cp.Syscalls[0].Names[0] = "x"
	*cp.Syscalls[0].ErrnoRet = 9
	cp.Syscalls[0].Args[0].Value = 9
	if !reflect.DeepEqual(want, orig) {
		t.Error("changing the clone changed the original")
	}
}
