package specs

import (
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleSysctl(t *testing.T) {
	own := []rspec.LinuxNamespace{{Type: rspec.NetworkNamespace}, {Type: rspec.IPCNamespace}, {Type: rspec.UTSNamespace}}
	cases := []struct {
		key    string
		ns     []rspec.LinuxNamespace
		action Action
	}{
		{"net.ipv4.ip_unprivileged_port_start", own, Kept},
		{"net/ipv4/ping_group_range", own, Tightened}, // written as net.ipv4.ping_group_range
		{"kernel.shmmax", own, Kept},
		{"kernel.msgmax", own, Kept},
		{"kernel.sem", own, Kept},
		{"fs.mqueue.msg_max", own, Kept},
		{"kernel.domainname", own, Kept},
		{"kernel.core_pattern", own, Refused},
		{"kernel.modprobe", own, Refused},
		{"kernel.randomize_va_space", own, Refused},
		{"vm.overcommit_memory", own, Refused},
		{"fs.protected_symlinks", own, Refused},
		{"net.ipv4.ip_forward", nil, Refused},
		{"net.ipv4.ip_forward", []rspec.LinuxNamespace{{Type: rspec.NetworkNamespace, Path: "/proc/1/ns/net"}}, Refused},
		{"kernel.shmmax", []rspec.LinuxNamespace{{Type: rspec.IPCNamespace, Path: "/proc/1/ns/ipc"}}, Refused},
		// A backend writes each dot as a slash below /proc/sys: a
		// namespaced prefix with .. parts names a host sysctl.
		{"net/../kernel/core_pattern", own, Refused},
		{"net.ipv4.../../../kernel.core_pattern", own, Refused},
		{"kernel.shm/../core_pattern", own, Refused},
		{"net/./ipv4/ip_forward", own, Refused},
		{"net.ipv4.", own, Refused},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			s := hostileSpec()
			s.Linux.Namespaces = tc.ns
			s.Linux.Sysctl = map[string]string{tc.key: "1"}
			d := wantDecision(t, ruleSysctl(testContext(), s), "linux.sysctl["+tc.key+"]", tc.action)
			if tc.action == Refused && !strings.Contains(d.Why, tc.key) {
				t.Fatalf("refusal does not name %s: %s", tc.key, d.Why)
			}
		})
	}
}

// TestRuleSysctlJoinedNamespace: a pod member's namespace, though the
// member may join it, is not its own to write: the backend resolves its
// path by pid only when it joins, and writes sysctls and the hostname
// before bulkhead can verify whose namespace that was.
func TestRuleSysctlJoinedNamespace(t *testing.T) {
	c := testContext()
	c.JoinableNamespace = func(rspec.LinuxNamespaceType, string) bool { return true }
	joined := []rspec.LinuxNamespace{{Type: rspec.NetworkNamespace, Path: "/proc/4242/ns/net"},
		{Type: rspec.IPCNamespace, Path: "/proc/4242/ns/ipc"}, {Type: rspec.UTSNamespace, Path: "/proc/4242/ns/uts"}}
	for _, key := range []string{"net.ipv4.ip_forward", "kernel.shmmni", "kernel.hostname"} {
		s := hostileSpec()
		s.Linux.Namespaces = joined
		s.Linux.Sysctl = map[string]string{key: "1"}
		wantDecision(t, ruleSysctl(c, s), "linux.sysctl["+key+"]", Refused)
	}
	for _, f := range []struct {
		field string
		set   func(*rspec.Spec)
	}{{"hostname", func(s *rspec.Spec) { s.Hostname = "pwned" }}, {"domainname", func(s *rspec.Spec) { s.Domainname = "pwned" }}} {
		s := hostileSpec()
		s.Linux.Namespaces = joined
		s.Linux.Sysctl = nil
		f.set(s)
		wantDecision(t, ruleSysctl(c, s), f.field, Refused)
		s.Linux.Namespaces = []rspec.LinuxNamespace{{Type: rspec.UTSNamespace}}
		if ds := ruleSysctl(c, s); len(ds) != 0 {
			t.Errorf("%s in the container's own uts namespace: %s", f.field, dump(ds))
		}
	}
}

// TestRuleSysctlOneSpelling: a key spelt with slashes is written with
// dots for the rules after this one, and the two spellings of one key
// are refused: the backend writes both to one file in no set order, so
// the value ipc_limits forces under the dotted name lost half the time.
func TestRuleSysctlOneSpelling(t *testing.T) {
	s := hostileSpec()
	s.Linux.Namespaces = []rspec.LinuxNamespace{{Type: rspec.IPCNamespace}}
	s.Linux.Sysctl = map[string]string{"kernel/shm_rmid_forced": "0"}
	ruleSysctl(testContext(), s)
	ruleIPCLimits(testContext(), s)
	if len(s.Linux.Sysctl["kernel/shm_rmid_forced"]) != 0 || s.Linux.Sysctl["kernel.shm_rmid_forced"] != "1" {
		t.Errorf("sysctls %v: want kernel.shm_rmid_forced=1 under one spelling", s.Linux.Sysctl)
	}
	s.Linux.Sysctl = map[string]string{"kernel/shmmax": "9999999999", "kernel.shmmax": "1"}
	wantDecision(t, ruleSysctl(testContext(), s), "linux.sysctl[kernel/shmmax]", Refused)
}
