package policy

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/leftover"
)

// probeScript is what every hostile container runs: it reports, from
// inside, what each control looks like to the workload. Each section
// starts with "== name".
const probeScript = `
echo "== status"; grep -E '^(Uid|Gid|Groups|NoNewPrivs|Seccomp|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status
echo "== id"; id
echo "== etc"; (echo x > /etc/bulkhead-probe) 2>&1
echo "== net"; ls /sys/class/net
echo "== kcore"; for f in /proc/kcore /proc/keys; do [ -e $f ] && echo "$f $(cat $f 2>&1 | wc -c)"; done
echo "== masks"; grep -E ' /proc/(kcore|keys) ' /proc/mounts | cut -d' ' -f2
echo "== env"; env
echo "== dev"; ls /dev
echo "== sys"; (mkdir /sys/bulkhead-probe) 2>&1
echo "== tmp"; grep ' /tmp ' /proc/mounts; (echo x > /tmp/probe && echo tmp-writable) 2>&1
echo "== oom"; cat /proc/self/oom_score_adj
echo "== pids"; cat /sys/fs/cgroup/pids/pids.max
echo "== memory"; cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes 2>&1
echo "== cpu"; cat /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us
echo "== bind"; (echo x > /work/probe) 2>&1; ls /work 2>&1
echo "== end"
`

// secretValues must never appear in what the container sees.
var secretValues = []string{"ghp_bulkheadTestToken0123456789abcdef", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}

var allCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
	"CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN",
	"CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG",
	"CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
}

// allowedDev is what ls /dev may show: the policy's device nodes and
// what runc itself creates (pts, shm, mqueue, the fd links, core).
var allowedDev = map[string]bool{
	"null": true, "zero": true, "full": true, "random": true, "urandom": true, "tty": true, "ptmx": true,
	"pts": true, "shm": true, "mqueue": true, "fd": true, "stdin": true, "stdout": true, "stderr": true, "core": true,
}

func bind(src, dst string, opts ...string) rspec.Mount {
	return rspec.Mount{Destination: dst, Type: "bind", Source: src, Options: append([]string{"rbind"}, opts...)}
}

// unixSocket listens on dir/name and returns its path.
func unixSocket(t *testing.T, name string) string {
	dir, err := os.MkdirTemp("", "bh-sock-") // short: sun_path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, name)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return path
}

// TestHostileBundles hands bulkhead bundles that ask for what the policy
// forbids, through `bulkhead run` on real runc with a JSON --log as
// containerd passes it. Each is either refused, with the rule named on
// stderr and as the last error line of the log, or runs with every
// control holding as seen from inside the container.
func TestHostileBundles(t *testing.T) {
	needRunc(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "data"), []byte("job input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerSock := unixSocket(t, "docker.sock")
	otherSock := unixSocket(t, "agent.sock")

	tests := []struct {
		name   string
		mutate func(*rspec.Spec)
		refuse string                                  // rule that must refuse; "" means it runs
		check  func(t *testing.T, s map[string]string) // extra checks on a run
		warns  string                                  // what bulkhead's log must say on a run
	}{
		{name: "all capabilities", mutate: func(s *rspec.Spec) {
			c := allCaps
			s.Process.Capabilities = &rspec.LinuxCapabilities{Bounding: c, Effective: c, Inheritable: c, Permitted: c, Ambient: c}
		}},
		{name: "no_new_privileges false", mutate: func(s *rspec.Spec) { s.Process.NoNewPrivileges = false }},
		{name: "uid 0 gid 0 and group 0", mutate: func(s *rspec.Spec) {
			s.Process.User = rspec.User{UID: 0, GID: 0, AdditionalGids: []uint32{0, 10}}
		}, check: func(t *testing.T, s map[string]string) {
			if g := statusField(s["status"], "Groups"); strings.Contains(" "+g+" ", " 0 ") {
				t.Errorf("supplementary group 0 kept: %q", g)
			}
		}},
		{name: "writable rootfs", mutate: func(s *rspec.Spec) { s.Root.Readonly = false }},
		{name: "no network namespace", mutate: func(s *rspec.Spec) { removeNamespace(s, rspec.NetworkNamespace) }},
		{name: "host network namespace path", mutate: func(s *rspec.Spec) {
			removeNamespace(s, rspec.NetworkNamespace)
			s.Linux.Namespaces = append(s.Linux.Namespaces, rspec.LinuxNamespace{Type: rspec.NetworkNamespace, Path: "/proc/1/ns/net"})
		}},
		{name: "bind /var/run/docker.sock", refuse: "host_mounts", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, bind("/var/run/docker.sock", "/var/run/docker.sock"))
		}},
		{name: "bind a docker.sock socket", refuse: "host_mounts", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, bind(dockerSock, "/run/docker.sock"))
		}},
		{name: "bind another host socket", refuse: "host_mounts", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, bind(otherSock, "/run/agent.sock", "ro"))
		}},
		{name: "bind $HOME", refuse: "host_mounts", mutate: func(s *rspec.Spec) {
			home, _ := os.UserHomeDir()
			s.Mounts = append(s.Mounts, bind(home, "/home/user", "ro"))
		}},
		{name: "bind host /", refuse: "host_mounts", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, bind("/", "/host", "ro"))
		}},
		{name: "bind host /proc", refuse: "host_mounts", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, bind("/proc", "/hostproc", "ro"))
		}},
		{name: "rw bind of a directory", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, bind(work, "/work", "rw", "suid", "dev"))
		}, check: func(t *testing.T, s map[string]string) {
			if !strings.Contains(s["bind"], "Read-only file system") || !strings.Contains(s["bind"], "data") {
				t.Errorf("rw bind: write to /work was not EROFS or data is not visible:\n%s", s["bind"])
			}
		}},
		{name: "/dev/mem device", mutate: func(s *rspec.Spec) {
			mode := os.FileMode(0o666)
			zero := uint32(0)
			s.Linux.Devices = append(s.Linux.Devices, rspec.LinuxDevice{Path: "/dev/mem", Type: "c", Major: 1, Minor: 1, FileMode: &mode, UID: &zero, GID: &zero})
			s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, rspec.LinuxDeviceCgroup{Allow: true, Type: "c", Major: i64(1), Minor: i64(1), Access: "rwm"})
		}},
		{name: "empty masked and read-only paths", mutate: func(s *rspec.Spec) {
			s.Linux.MaskedPaths, s.Linux.ReadonlyPaths = []string{}, []string{}
		}},
		{name: "rw /sys", mutate: func(s *rspec.Spec) {
			for i := range s.Mounts {
				if s.Mounts[i].Destination == "/sys" || s.Mounts[i].Destination == "/sys/fs/cgroup" {
					s.Mounts[i].Options = []string{"nosuid", "noexec", "nodev", "rw"}
				}
			}
		}},
		{name: "no /tmp", mutate: func(s *rspec.Spec) {
			var kept []rspec.Mount
			for _, m := range s.Mounts {
				if m.Destination != "/tmp" {
					kept = append(kept, m)
				}
			}
			s.Mounts = kept
		}},
		{name: "/tmp bound from the host", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, bind(work, "/tmp", "rw", "exec"))
		}},
		{name: "huge pids, memory and cpu", mutate: func(s *rspec.Spec) {
			s.Linux.Resources.Pids = &rspec.LinuxPids{Limit: i64(1 << 30)}
			s.Linux.Resources.Memory = &rspec.LinuxMemory{Limit: i64(64 << 30), Swap: i64(-1)}
			q, p := int64(64*100000), uint64(100000)
			s.Linux.Resources.CPU = &rspec.LinuxCPU{Quota: &q, Period: &p}
		}},
		{name: "secret environment", mutate: func(s *rspec.Spec) {
			s.Process.Env = append(s.Process.Env, "GITHUB_TOKEN="+secretValues[0], "AWS_SECRET_ACCESS_KEY="+secretValues[1], "HARMLESS=1")
		}, warns: "environment: GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY removed", check: func(t *testing.T, s map[string]string) {
			if !strings.Contains(s["env"], "HARMLESS=1") {
				t.Errorf("an ordinary variable was dropped:\n%s", s["env"])
			}
		}},
		{name: "cwd /proc/self", refuse: "cwd", mutate: func(s *rspec.Spec) { s.Process.Cwd = "/proc/self" }},
		{name: "cwd /proc/self/fd/7", refuse: "cwd", mutate: func(s *rspec.Spec) { s.Process.Cwd = "/proc/self/fd/7" }},
		{name: "kernel.* sysctl", refuse: "sysctl", mutate: func(s *rspec.Spec) {
			s.Linux.Sysctl = map[string]string{"kernel.core_pattern": "|/tmp/x"}
		}},
		{name: "oom_score_adj -500", mutate: func(s *rspec.Spec) { s.Process.OOMScoreAdj = intp(-500) }},
	}

	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := hostileBundle(t, probeScript, tc.mutate)
			logFile := filepath.Join(dir, "log.json")
			id := fmt.Sprintf("hostile-%d-%d", os.Getpid(), i)
			r := bulkhead(t, "", nil, "--root", filepath.Join(dir, "state"), "--log", logFile, "--log-format", "json",
				"run", "--bundle", dir, id)
			if cg, left := leftover.Cgroup(dir, filepath.Join(dir, "state"), id); left {
				t.Errorf("cgroup %s left behind", cg)
			}
			for _, v := range secretValues {
				if strings.Contains(r.stdout+r.stderr, v) {
					t.Errorf("secret value %q reached the container or the output", v)
				}
			}
			if tc.refuse != "" {
				assertRefused(t, r, logFile, tc.refuse)
				return
			}
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			s := sections(r.stdout)
			if _, ok := s["end"]; !ok {
				t.Fatalf("probe did not finish:\n%s\nstderr: %s", r.stdout, r.stderr)
			}
			checkBoundary(t, s)
			if tc.check != nil {
				tc.check(t, s)
			}
			if tc.warns != "" {
				// With --log, bulkhead's warnings go to the log file.
				if log, err := os.ReadFile(logFile); err != nil || !strings.Contains(string(log), tc.warns) {
					t.Errorf("the log does not say %q (%v):\n%s", tc.warns, err, log)
				}
			}
			if t.Failed() {
				t.Logf("container output:\n%s", r.stdout)
			}
		})
	}
}

// checkBoundary asserts every control of the default profile as the
// container sees it, whatever the hostile field was.
func checkBoundary(t *testing.T, s map[string]string) {
	t.Helper()
	st := s["status"]
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if v := statusField(st, k); v != "0000000000000000" {
			t.Errorf("capabilities: %s %q, want none", k, v)
		}
	}
	if v := statusField(st, "NoNewPrivs"); v != "1" {
		t.Errorf("NoNewPrivs %q, want 1", v)
	}
	if v := statusField(st, "Seccomp"); v != "2" {
		t.Errorf("Seccomp %q, want 2 (filter)", v)
	}
	if v := statusField(st, "Uid"); v != "65534\t65534\t65534\t65534" {
		t.Errorf("Uid %q, want 65534", v)
	}
	if !strings.HasPrefix(s["id"], "uid=65534") {
		t.Errorf("id: %q", s["id"])
	}
	if !strings.Contains(s["etc"], "Read-only file system") {
		t.Errorf("write to /etc: %q, want EROFS", s["etc"])
	}
	if strings.TrimSpace(s["net"]) != "lo" {
		t.Errorf("/sys/class/net: %q, want only lo", s["net"])
	}
	// /proc/kcore and /proc/keys exist depending on the kernel's
	// configuration (this host has no kcore): each that exists must be
	// empty and have the mask mounted over it.
	present := strings.Split(strings.TrimSpace(s["kcore"]), "\n")
	if strings.TrimSpace(s["kcore"]) == "" || len(present) != len(strings.Fields(s["masks"])) {
		t.Errorf("/proc/kcore, /proc/keys: %q, masks mounted at %q", s["kcore"], s["masks"])
	}
	for _, l := range present {
		if !strings.HasSuffix(l, " 0") {
			t.Errorf("masked file not empty: %q", l)
		}
	}
	for _, name := range []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"} {
		if strings.Contains(s["env"], name) {
			t.Errorf("env: %s present", name)
		}
	}
	for _, d := range strings.Fields(s["dev"]) {
		if !allowedDev[d] {
			t.Errorf("/dev/%s exists", d)
		}
	}
	if !strings.Contains(s["sys"], "Read-only file system") {
		t.Errorf("mkdir in /sys: %q, want EROFS", s["sys"])
	}
	tmp := s["tmp"]
	if !strings.HasPrefix(tmp, "tmpfs /tmp tmpfs rw,nosuid,nodev,noexec") || !strings.Contains(tmp, "size=16384k") || !strings.Contains(tmp, "tmp-writable") {
		t.Errorf("/tmp: %q, want a writable 16m tmpfs with nosuid,nodev,noexec", tmp)
	}
	if v := strings.TrimSpace(s["oom"]); v != "500" {
		t.Errorf("oom_score_adj %q, want 500", v)
	}
	if v := strings.TrimSpace(s["pids"]); v != "64" {
		t.Errorf("pids.max %q, want 64", v)
	}
	if v := strings.Fields(s["memory"]); len(v) < 2 || v[0] != "268435456" || v[1] != "268435456" {
		t.Errorf("memory limit and memsw %q, want 268435456", s["memory"])
	}
	if v := strings.TrimSpace(s["cpu"]); v != "100000" {
		t.Errorf("cpu.cfs_quota_us %q, want 100000", v)
	}
}

func removeNamespace(s *rspec.Spec, t rspec.LinuxNamespaceType) {
	var kept []rspec.LinuxNamespace
	for _, ns := range s.Linux.Namespaces {
		if ns.Type != t {
			kept = append(kept, ns)
		}
	}
	s.Linux.Namespaces = kept
}

func i64(v int64) *int64 { return &v }
func intp(v int) *int    { return &v }
