package seccomp

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
)

func TestDefaultNamesResolve(t *testing.T) {
	// Checked directly with libseccomp, not through Validate, so that a
	// bug in Validate cannot hide a bad name.
	arches := []libseccomp.ScmpArch{libseccomp.ArchAMD64, libseccomp.ArchARM64}
	lists := map[string][]string{"Denied": Denied}
	for _, r := range Default().Syscalls {
		lists["Default"] = append(lists["Default"], r.Names...)
	}
	for list, names := range lists {
		for _, name := range names {
			for _, a := range arches {
				if _, err := libseccomp.GetSyscallFromNameByArch(name, a); err != nil {
					t.Errorf("%s: %q does not resolve on %s: %v", list, name, a, err)
				}
			}
		}
	}
}

func TestDefaultValidates(t *testing.T) {
	if err := Validate(Default()); err != nil {
		t.Fatalf("Validate(Default()) = %v", err)
	}
	p, err := ForProfile("", false, false)
	if err != nil {
		t.Fatalf(`ForProfile("", false, false) = %v`, err)
	}
	if p.DefaultAction != rspec.ActErrno || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != errnoEPERM {
		t.Errorf("default action = %s/%v, want SCMP_ACT_ERRNO/EPERM", p.DefaultAction, p.DefaultErrnoRet)
	}
	if want := []rspec.Arch{rspec.ArchX86_64, rspec.ArchAARCH64}; !slices.Equal(p.Architectures, want) {
		t.Errorf("architectures %v, want only the 64-bit ABIs %v", p.Architectures, want)
	}
	compat, err := ForProfile("", true, false)
	if err != nil {
		t.Fatalf(`ForProfile("", true, false) = %v`, err)
	}
	for _, a := range []rspec.Arch{rspec.ArchX86_64, rspec.ArchX32, rspec.ArchAARCH64, rspec.ArchARM} {
		if !containsSpecArch(compat.Architectures, a) {
			t.Errorf("compat architectures %v lack %s", compat.Architectures, a)
		}
	}
	// i386's socketcall would carry any socket family past the filter.
	if containsSpecArch(compat.Architectures, rspec.ArchX86) {
		t.Errorf("compat architectures %v keep i386", compat.Architectures)
	}
}

func TestDefaultIsFresh(t *testing.T) {
	a := Default()
	a.Syscalls[0].Names[0] = "changed"
	a.Syscalls = nil
	if b := Default(); len(b.Syscalls) == 0 || b.Syscalls[0].Names[0] == "changed" {
		t.Fatal("Default shares state between calls")
	}
}

func TestDeniedNeverAllowed(t *testing.T) {
	p := Default()
	for _, name := range Denied {
		for _, r := range rulesFor(p, name) {
			if r.Action == rspec.ActAllow || r.Action == rspec.ActLog {
				t.Errorf("%s: allowed by a %s rule of %d names", name, r.Action, len(r.Names))
			}
		}
		if allows(p, name) {
			t.Errorf("%s: allowed", name)
		}
	}
	// The policy's list, repeated so that shrinking Denied fails here.
	policy := []string{"ptrace", "process_vm_readv", "process_vm_writev",
		"io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd",
		"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "unshare",
		"setns", "mount", "umount", "umount2", "mount_setattr", "move_mount",
		"open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "pivot_root",
		"chroot", "kexec_load", "kexec_file_load", "init_module", "finit_module",
		"delete_module", "open_by_handle_at", "name_to_handle_at", "acct",
		"swapon", "swapoff", "reboot"}
	for _, name := range policy {
		if !hasName(Denied, name) {
			t.Errorf("Denied lacks %s", name)
		}
	}
}

func TestDefaultArgumentRules(t *testing.T) {
	const (
		afUnix, afInet, afInet6 = 1, 2, 10
		cloneThread             = 0x10000 | 0x100 | 0x800 | 0x400 // THREAD|VM|SIGHAND|FS
		sigchld                 = 17
	)
	tests := []struct {
		name string
		args []uint64
		want bool
	}{
		{"socket", []uint64{afUnix}, true},
		{"socket", []uint64{afInet}, true},
		{"socket", []uint64{afInet6}, true},
		{"socket", []uint64{afNetlink, 3, 0}, false},           // NETLINK_ROUTE: unread replies charged to no cgroup
		{"socket", []uint64{afNetlink, 2 | 0x80000, 4}, false}, // NETLINK_SOCK_DIAG, SOCK_CLOEXEC
		{"socket", []uint64{afNetlink, 3, 15}, false},          // NETLINK_KOBJECT_UEVENT: the host's device events
		{"socket", []uint64{afNetlink, 3, 9}, false},           // NETLINK_AUDIT
		{"socket", []uint64{afNetlink, 3, 12}, false},          // NETLINK_NETFILTER
		{"socket", []uint64{afNetlink, 3, 16}, false},          // NETLINK_GENERIC
		{"socket", []uint64{afNetlink, 3, 1<<32 | 15}, false},  // read as an int: KOBJECT_UEVENT again
		{"socket", []uint64{1<<32 | afNetlink, 3, 15}, false},  // the family read as an int
		{"socket", []uint64{17, 2, 0}, false},                  // AF_PACKET
		{"socket", []uint64{3}, false},                         // AF_AX25: a socket() would load its module
		{"socket", []uint64{30}, false},                        // AF_TIPC
		{"socket", []uint64{31}, false},
		{"socket", []uint64{39}, false},
		{"socket", []uint64{41}, false},
		{"socket", []uint64{45}, false},
		{"socket", []uint64{1<<32 | afInet}, true}, // read as an int: AF_INET
		{"socketpair", []uint64{afUnix, 1, 0}, true},
		{"socketpair", []uint64{30, 5, 0}, false}, // AF_TIPC pairs load tipc too
		{"socket", []uint64{afALG}, false},
		{"socket", []uint64{afVSOCK}, false},
		// The kernel reads an int: these are AF_ALG and AF_VSOCK again.
		{"socket", []uint64{1<<32 | afALG}, false},
		{"socket", []uint64{0xffffffff00000000 | afVSOCK}, false},
		{"clone", []uint64{sigchld}, true},
		{"clone", []uint64{cloneThread}, true},
		{"clone", []uint64{sigchld | 0x10000000}, false}, // CLONE_NEWUSER
		{"clone", []uint64{sigchld | 0x20000000}, false}, // CLONE_NEWPID
		{"clone", []uint64{sigchld | 0x40000000}, false}, // CLONE_NEWNET
		{"clone", []uint64{sigchld | 0x00020000}, false}, // CLONE_NEWNS
		{"clone", []uint64{sigchld | 0x02000000}, false}, // CLONE_NEWCGROUP
		{"clone", []uint64{sigchld | 0x04000000}, false}, // CLONE_NEWUTS
		{"clone", []uint64{sigchld | 0x08000000}, false}, // CLONE_NEWIPC
		{"clone3", nil, false},
		{"personality", []uint64{0}, true},
		{"personality", []uint64{0x8}, true},
		{"personality", []uint64{0x20000}, true},
		{"personality", []uint64{0x20008}, true},
		{"personality", []uint64{0xffffffff}, true},
		{"personality", []uint64{0x0400000}, false}, // READ_IMPLIES_EXEC
		{"personality", []uint64{0x0040000}, false}, // ADDR_NO_RANDOMIZE
		{"fcntl", []uint64{3, 0}, true},             // F_DUPFD
		{"fcntl", []uint64{3, 4}, true},             // F_SETFL
		{"fcntl", []uint64{3, 7}, true},             // F_SETLKW
		{"fcntl", []uint64{3, 38}, true},            // F_OFD_SETLKW
		{"fcntl", []uint64{3, 1025}, true},          // F_GETLEASE
		{"fcntl", []uint64{3, 1030}, true},          // F_DUPFD_CLOEXEC
		{"fcntl", []uint64{3, 1031}, true},          // F_SETPIPE_SZ
		{"fcntl", []uint64{3, 1033}, true},          // F_ADD_SEALS
		{"fcntl", []uint64{3, 1024}, false},         // F_SETLEASE
		{"fcntl64", []uint64{3, 1024}, false},       // F_SETLEASE on 32-bit ABIs
		// The kernel reads an unsigned int: this is F_SETLEASE again.
		{"fcntl", []uint64{3, 1<<32 | 1024}, false},
		{"fcntl", []uint64{3, 17}, true},    // F_GETOWNER_UIDS
		{"fcntl", []uint64{3, 1038}, true},  // F_SET_FILE_RW_HINT
		{"fcntl", []uint64{3, 18}, false},   // no such command
		{"fcntl", []uint64{3, 1039}, false}, // F_GETDELEG, unreviewed
		{"fcntl", []uint64{3, 1040}, false}, // F_SETDELEG: a delegation holds host writers as a lease does
		{"fcntl", []uint64{3, 1056}, false}, // a command no kernel has yet
		{"read", nil, true},
		{"arch_prctl", nil, true},
	}
	p := Default()
	for _, tt := range tests {
		if got := allows(p, tt.name, tt.args...); got != tt.want {
			t.Errorf("%s(%#x) allowed = %v, want %v", tt.name, tt.args, got, tt.want)
		}
	}

	// clone3 must fail with ENOSYS, not the default EPERM, or glibc
	// would not fall back to clone.
	r := rulesFor(p, "clone3")
	if len(r) != 1 || r[0].Action != rspec.ActErrno || r[0].ErrnoRet == nil || *r[0].ErrnoRet != errnoENOSYS {
		t.Errorf("clone3 rules = %+v, want one SCMP_ACT_ERRNO ENOSYS", r)
	}
	// Each argument rule must have at most one condition per argument, or
	// runc would OR them (see convertRule); conditions on different
	// arguments are one rule, all required.
	for _, name := range []string{"socket", "clone", "personality"} {
		for _, r := range rulesFor(p, name) {
			seen := map[uint]bool{}
			for _, a := range r.Args {
				if seen[a.Index] {
					t.Errorf("%s rule has two conditions on argument %d: %+v", name, a.Index, r.Args)
				}
				seen[a.Index] = true
			}
			if len(r.Args) == 0 {
				t.Errorf("%s rule has no condition", name)
			}
		}
	}
}

func TestSummary(t *testing.T) {
	one := uint(1)
	tests := []struct {
		name           string
		p              *rspec.LinuxSeccomp
		allowed, denid int
	}{
		{"nil", nil, 0, 0},
		{"mixed", &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno, Syscalls: []rspec.LinuxSyscall{
			allow("read", "write"),
			allowIf("socket", rspec.LinuxSeccompArg{Index: 0, Value: 1, Op: rspec.OpEqualTo}),
			allowIf("socket", rspec.LinuxSeccompArg{Index: 0, Value: 2, Op: rspec.OpEqualTo}),
			{Names: []string{"ptrace", "read"}, Action: rspec.ActErrno, ErrnoRet: &one},
			{Names: []string{"kill"}, Action: rspec.ActKillProcess},
		}}, 3, 2},
	}
	for _, tt := range tests {
		a, d := Summary(tt.p)
		if a != tt.allowed || d != tt.denid {
			t.Errorf("%s: Summary = %d, %d, want %d, %d", tt.name, a, d, tt.allowed, tt.denid)
		}
	}
	a, d := Summary(Default())
	// socket, socketpair, personality, clone, fcntl, fcntl64, arch_prctl,
	// modify_ldt and five arm names.
	if want := len(defaultAllowed) + 13; a != want || d != 1 {
		t.Errorf("Summary(Default()) = %d, %d, want %d, 1", a, d, want)
	}
}

// BenchmarkForProfile is the create path's seccomp cost once the cache
// holds the profile, the first time in a process (BenchmarkForProfileUncached:
// without the cache; BenchmarkForProfileMemo: every later time).
func BenchmarkForProfile(b *testing.B) {
	if _, err := ForProfile("", false, false); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := forProfileCompiled("", nil, false, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForProfileMemo is a create's second and third request for the
// same profile.
func BenchmarkForProfileMemo(b *testing.B) {
	if _, err := ForProfile("", false, false); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ForProfile("", false, false); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMemfdOnlyWhenWritesMayRun: without the profile's grant to run what
// the job writes, memfd_create answers ENOSYS and no rule allows it, in
// the built-in profile and in an operator's that allowed it; with the
// grant the built-in profile allows it.
func TestMemfdOnlyWhenWritesMayRun(t *testing.T) {
	for _, call := range memfdCalls {
		t.Run(call, func(t *testing.T) { memfdOnlyWhenWritesMayRun(t, call) })
	}
}

func memfdOnlyWhenWritesMayRun(t *testing.T, call string) {
	rulesFor := func(p *rspec.LinuxSeccomp) (allowed, enosys bool) {
		for _, r := range p.Syscalls {
			if !slices.Contains(r.Names, call) {
				continue
			}
			switch {
			case r.Action == rspec.ActAllow:
				allowed = true
			case r.Action == rspec.ActErrno && r.ErrnoRet != nil && *r.ErrnoRet == errnoENOSYS:
				enosys = true
			}
		}
		return allowed, enosys
	}
	for _, tc := range []struct {
		name                string
		path                string
		execWrites          bool
		allowed, wantENOSYS bool
	}{
		{"built-in, no grant", "", false, false, true},
		{"built-in, job profile", "", true, true, false},
		{"operator's allowing it, no grant", "operator", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "operator" {
				path = filepath.Join(t.TempDir(), "p.json")
				prof := `{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read", "write", "exit_group", "` + call + `"], "action": "SCMP_ACT_ALLOW"}]}`
				if err := os.WriteFile(path, []byte(prof), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p, err := ForProfile(path, false, tc.execWrites)
			if err != nil {
				t.Fatal(err)
			}
			allowed, enosys := rulesFor(p)
			if allowed != tc.allowed || enosys != tc.wantENOSYS {
				t.Fatalf("%s allowed %v, ENOSYS %v; want %v, %v", call, allowed, enosys, tc.allowed, tc.wantENOSYS)
			}
		})
	}
}
