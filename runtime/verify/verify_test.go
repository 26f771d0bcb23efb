package verify

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/seccomp"
	"bulkhead.dev/bulkhead/specs"
	"bulkhead.dev/bulkhead/test/bundle"
)

// statusFixture is a trimmed /proc/PID/status of a hardened container's init.
const statusFixture = `Name:	sleep
Umask:	0022
State:	S (sleeping)
Pid:	4242
Uid:	65534	65534	65534	65534
Gid:	65534	65534	65534	65534
FDSize:	64
Groups:	65534 
NoNewPrivs:	1
Seccomp:	2
Seccomp_filters:	1
CapInh:	0000000000000000
CapPrm:	0000000000000000
CapEff:	0000000000000000
CapBnd:	0000000000000000
CapAmb:	0000000000000000
`

// hardenedExpectation is the default profile's expectation with a spec
// that names 65534:65534 and supplementary group 65534.
func hardenedExpectation() *Expectation {
	return &Expectation{Backend: "runc", NonRootUID: true, NonRootGID: true,
		User: &rspec.User{UID: 65534, GID: 65534, AdditionalGids: []uint32{65534}}}
}

func TestParseProcStatus(t *testing.T) {
	st, err := parseProcStatus(strings.NewReader(statusFixture))
	if err != nil {
		t.Fatal(err)
	}
	if st["Uid"] != "65534 65534 65534 65534" || st["Groups"] != "65534" || st["CapBnd"] != "0000000000000000" {
		t.Fatalf("parsed %v", st)
	}
	var r Report
	if err := checkStatus(&r, st, hardenedExpectation()); err != nil {
		t.Fatal(err)
	}
	if f := r.Failed(); len(f) != 0 || r.Err() != nil {
		t.Fatalf("failed: %+v", f)
	}
	if len(r) != 10 { // 5 cap sets, nnp, seccomp, uid, gid, groups
		t.Errorf("%d checks: %+v", len(r), r)
	}

	// The expectation does not come from the spec: with no user named
	// and every status field of a root process with CAP_CHOWN, no
	// no_new_privs and no filter, each check still fails.
	root := ProcStatus{}
	for k, v := range st {
		root[k] = v
	}
	root["CapBnd"], root["Uid"], root["Gid"], root["NoNewPrivs"], root["Seccomp"] = "0000000000000001", "0 0 0 0", "0 0 0 0", "0", "0"
	r = nil
	e := hardenedExpectation()
	e.User = nil
	if err := checkStatus(&r, root, e); err != nil {
		t.Fatal(err)
	}
	if got := controls(r.Failed()); got != "capabilities,no_new_privs,seccomp,uid,gid" {
		t.Errorf("failed controls %s", got)
	}
	want := "verify: control capabilities: expected CapBnd 0000000000000000, kernel applied CapBnd 0000000000000001"
	if err := r.Err(); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Err() = %v, want prefix %q", err, want)
	}

	// A root supplementary group, or one the spec did not ask for, fails.
	for _, groups := range []string{"0 65534", "65534 42", ""} {
		st["Groups"] = groups
		r = nil
		if err := checkStatus(&r, st, hardenedExpectation()); err != nil {
			t.Fatal(err)
		}
		if got := controls(r.Failed()); got != "groups" {
			t.Errorf("Groups %q: failed controls %s", groups, got)
		}
	}
}

func TestCheckLimits(t *testing.T) {
	mem := int64(256 << 20)
	e := &Expectation{PidsMax: 64, MemoryMax: mem, CPUs: 1}
	ok := cgroups.Limits{Version: 2, PidsMax: 64, MemoryMax: mem, MemorySwapMax: mem, CPUQuota: 100000, CPUPeriod: 100000}
	var r Report
	checkLimits(&r, ok, e)
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	// Lower than the ceiling is fine.
	low := ok
	low.PidsMax, low.MemoryMax, low.MemorySwapMax, low.CPUQuota = 10, 4096, 4096, 50000
	r = nil
	if checkLimits(&r, low, e); r.Err() != nil {
		t.Fatal(r.Err())
	}
	bad := ok
	bad.PidsMax = cgroups.Unlimited
	bad.MemorySwapMax = cgroups.Absent
	bad.CPUQuota = 100001
	r = nil
	checkLimits(&r, bad, e)
	want := "verify: control pids: expected pids.max ≤ 64, kernel applied pids.max max (and 2 more failed checks)"
	if err := r.Err(); err == nil || err.Error() != want {
		t.Errorf("Err() = %v, want %q", err, want)
	}
	if got := controls(r.Failed()); got != "pids,memory+swap,cpu" {
		t.Errorf("failed controls %s", got)
	}
	// A burst the rules removed, shown by the kernel: more than the quota
	// per period. A kernel without the file (Absent) passes.
	burst := ok
	burst.CPUBurst = 20000
	r = nil
	checkLimits(&r, burst, e)
	want = "verify: control cpu: expected cpu burst 0, kernel applied cpu burst 20000"
	if err := r.Err(); err == nil || err.Error() != want {
		t.Errorf("Err() = %v, want %q", err, want)
	}
	burst.CPUBurst = cgroups.Absent
	r = nil
	if checkLimits(&r, burst, e); r.Err() != nil {
		t.Errorf("no burst file: %v", r.Err())
	}
}

func TestNetDevInterfaces(t *testing.T) {
	data := []byte(`Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  eth0:    1296      16    0    0    0     0          0         0      656       8    0    0    0     0       0          0
`)
	if got := strings.Join(netDevInterfaces(data), ","); got != "lo,eth0" {
		t.Errorf("interfaces %q", got)
	}
}

func controls(cs []Check) string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Control)
	}
	return strings.Join(names, ",")
}

func needRoot(t *testing.T, backend string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("skipping: %s containers need root", backend)
	}
	p, err := exec.LookPath(backend)
	if err != nil {
		t.Skipf("skipping: %s is not installed (hack/install-deps.sh)", backend)
	}
	return p
}

func testName(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "bulkhead-verify-" + hex.EncodeToString(b)
}

// createContainer runs `<backend> [flags] create` on a busybox bundle
// running sleep, with spec edited by mutate, and returns the pid the backend
// wrote. The container is deleted in t.Cleanup, and its cgroup must be gone
// afterwards.
func createContainer(t *testing.T, backend string, flags []string, mutate func(*rspec.Spec)) int {
	t.Helper()
	bin := needRoot(t, backend)
	id := testName(t)
	cgPath := "/" + id
	b := bundle.New(t, []string{"sleep", "30"}, func(s *rspec.Spec) {
		s.Linux.CgroupsPath = cgPath
		mutate(s)
	})
	root := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	// Output goes to a file: the container inherits it, and a pipe would
	// keep the test waiting until the container exits.
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	args := append([]string{"--root", root}, flags...)
	cmd := exec.Command(bin, append(args, "create", "--bundle", b, "--pid-file", pidFile, id)...)
	// Not the host's /dev/null, which os/exec would give an unset stdin
	// and runsc would chown to the sandbox's user.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), out, out
	t.Cleanup(func() {
		if o, err := exec.Command(bin, "--root", root, "delete", "--force", id).CombinedOutput(); err != nil {
			t.Errorf("%s delete: %v: %s", backend, err, o)
		}
		// The backend's own cleanup is not what this test is about, but
		// nothing may be left: on a busy v1 host runc's rmdir can meet a
		// killed init that has not finished exiting (EBUSY) and give up.
		deadline := time.Now().Add(10 * time.Second)
		for cgroups.Exists(cgPath) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if cgroups.Exists(cgPath) {
			t.Logf("%s delete --force left cgroup %s behind; removing it", backend, cgPath)
			if err := cgroups.Remove(cgPath); err != nil {
				t.Errorf("cgroup %s left behind and not removable: %v", cgPath, err)
			}
		}
	})
	if err := cmd.Run(); err != nil {
		o, _ := os.ReadFile(out.Name())
		t.Fatalf("%s create: %v: %s", backend, err, o)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// harden applies bulkhead's default controls (with test-sized limits) to s.
func harden(pids int64) func(*rspec.Spec) {
	return func(s *rspec.Spec) {
		mem, quota, period := int64(64<<20), int64(50000), uint64(100000)
		s.Process.Capabilities = &rspec.LinuxCapabilities{}
		s.Process.NoNewPrivileges = true
		s.Process.User = rspec.User{UID: 65534, GID: 65534}
		s.Root.Readonly = true
		// The default profile's filter, as create hands it over.
		sc, err := seccomp.ForProfile("", false, false)
		if err != nil {
			panic(err)
		}
		s.Linux.Seccomp = sc
		s.Linux.Resources.Pids = &rspec.LinuxPids{Limit: &pids}
		s.Linux.Resources.Memory = &rspec.LinuxMemory{Limit: &mem, Swap: &mem}
		s.Linux.Resources.CPU = &rspec.LinuxCPU{Quota: &quota, Period: &period}
		// The namespaces rule adds a cgroup namespace runc's default lacks.
		s.Linux.Namespaces = append(s.Linux.Namespaces, rspec.LinuxNamespace{Type: rspec.CgroupNamespace})
		// The masked_paths rule adds Docker's paths and makes cgroupfs
		// read-only.
		s.Linux.MaskedPaths = specs.DefaultMaskedPaths
		s.Linux.ReadonlyPaths = specs.DefaultReadonlyPaths
		// The ipc_limits rule bounds the IPC namespace by the profile's
		// memory limit.
		p := specs.DefaultProfile()
		memory, err := p.MemoryBytes()
		if err != nil {
			panic(err)
		}
		s.Linux.Sysctl = map[string]string{}
		for _, b := range specs.IPCBounds(memory) {
			s.Linux.Sysctl[b.Key] = joinInts(b.Max)
		}
		for i := range s.Mounts {
			if m := &s.Mounts[i]; m.Type == "sysfs" || m.Type == "cgroup" {
				m.Options = append(slices.DeleteFunc(m.Options, func(o string) bool { return o == "rw" }), "ro")
			}
		}
	}
}

// verifyWith verifies pid against the default profile's expectation,
// tightened by s.
func verifyWith(t *testing.T, pid int, s *rspec.Spec, backend string) (Report, error) {
	t.Helper()
	p := specs.DefaultProfile()
	e, err := Expect(&p, s, backend)
	if err != nil {
		t.Fatal(err)
	}
	return Container(pid, e)
}

func specOf(mutate ...func(*rspec.Spec)) *rspec.Spec {
	dir, err := os.MkdirTemp("", "bulkhead-verify-spec")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// bundle.Make writes the same spec createContainer gets (rootfs
	// included, which Container ignores).
	if err := bundle.Make(dir, []string{"sleep", "30"}, mutate...); err != nil {
		panic(err)
	}
	s, err := bundle.Read(dir)
	if err != nil {
		panic(err)
	}
	return s
}

func TestVerifyRuncHardened(t *testing.T) {
	var group string
	pid := createContainer(t, "runc", nil, func(s *rspec.Spec) {
		harden(64)(s)
		group = s.Linux.CgroupsPath
	})
	s := specOf(harden(64))
	s.Linux.CgroupsPath = group
	r, err := verifyWith(t, pid, s, "runc")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r {
		t.Logf("%-18s ok=%-5v expected %q observed %q", c.Control, c.OK, c.Expected, c.Observed)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range r {
		seen[c.Control] = true
	}
	// Every check the table of controls promises is made, and every check
	// made belongs to a control of the table.
	promised := map[string]bool{}
	for _, c := range specs.Controls {
		for _, v := range c.Verified {
			promised[v] = true
			if !seen[v] {
				t.Errorf("control %q promises a %s check, Verify made none", c.Name, v)
			}
		}
	}
	for name := range seen {
		if !promised[name] {
			t.Errorf("Verify checks %s, which no control of specs.Controls names", name)
		}
	}
}

func TestVerifyRuncMismatch(t *testing.T) {
	// The container keeps CAP_CHOWN, gets pids 100, a writable root and
	// the host's network namespace; Container is told the hardened spec.
	pid := createContainer(t, "runc", nil, func(s *rspec.Spec) {
		harden(100)(s)
		chown := []string{"CAP_CHOWN"}
		s.Process.Capabilities = &rspec.LinuxCapabilities{Bounding: chown, Effective: chown, Permitted: chown}
		s.Process.User = rspec.User{}
		s.Root.Readonly = false
		var ns []rspec.LinuxNamespace
		for _, n := range s.Linux.Namespaces {
			if n.Type != rspec.NetworkNamespace {
				ns = append(ns, n)
			}
		}
		s.Linux.Namespaces = ns
		// No System V IPC bound: the host's defaults.
		s.Linux.Sysctl = nil
		// /proc/interrupts unmasked, /proc/sys writable, cgroupfs writable.
		s.Linux.MaskedPaths = slices.DeleteFunc(slices.Clone(s.Linux.MaskedPaths), func(p string) bool { return p == "/proc/interrupts" })
		s.Linux.ReadonlyPaths = slices.DeleteFunc(slices.Clone(s.Linux.ReadonlyPaths), func(p string) bool { return p == "/proc/sys" })
		for i := range s.Mounts {
			if m := &s.Mounts[i]; m.Type == "cgroup" {
				m.Options = slices.DeleteFunc(slices.Clone(m.Options), func(o string) bool { return o == "ro" })
			}
		}
	})
	want := specOf(harden(64))
	r, err := verifyWith(t, pid, want, "runc")
	if err != nil {
		t.Fatal(err)
	}
	failed := r.Failed()
	for _, c := range failed {
		t.Logf("failed %-18s expected %q observed %q", c.Control, c.Expected, c.Observed)
	}
	got := map[string]bool{}
	for _, c := range failed {
		got[c.Control] = true
	}
	for _, c := range []string{"capabilities", "uid", "gid", "network namespace", "network interfaces", "read-only root", "pids",
		"mount flags", "masked paths", "read-only paths", "System V IPC"} {
		if !got[c] {
			t.Errorf("mismatch of %s not detected", c)
		}
	}
	for _, c := range []string{"memory", "cpu", "no_new_privs", "seccomp"} {
		if got[c] {
			t.Errorf("%s reported failed though it matches", c)
		}
	}
	err = r.Err()
	if err == nil || !strings.HasPrefix(err.Error(), "verify: control capabilities: expected CapBnd 0000000000000000, kernel applied CapBnd 0000000000000001") {
		t.Errorf("Err() = %v", err)
	}

	// Only the pids limit differs.
	pid2 := createContainer(t, "runc", nil, harden(100))
	r, err = verifyWith(t, pid2, specOf(harden(64)), "runc")
	if err != nil {
		t.Fatal(err)
	}
	if got := controls(r.Failed()); got != "pids" {
		t.Errorf("failed controls %q, want pids", got)
	}
	if err := r.Err(); err == nil || err.Error() != "verify: control pids: expected pids.max ≤ 64, kernel applied pids.max 100" {
		t.Errorf("Err() = %v", err)
	}
}

func TestVerifyRunsc(t *testing.T) {
	flags := []string{"--network=none", "--oci-seccomp", "--platform=ptrace"}
	// gVisor's own threads count against the host pids.max: below ~128 the
	// sandbox does not start, so the translated limit is larger.
	pid := createContainer(t, "runsc", flags, harden(256))
	r, err := verifyWith(t, pid, specOf(harden(256)), "runsc")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r {
		t.Logf("%-18s ok=%-5v expected %q observed %q", c.Control, c.OK, c.Expected, c.Observed)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	got := controls(r)
	for _, want := range []string{"network namespace", "runsc flags", "runsc network", "runsc seccomp", "pids", "memory", "cpu"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s check in %s", want, got)
		}
	}
	// A sandbox started without the flags is caught.
	pid2 := createContainer(t, "runsc", []string{"--network=none", "--platform=ptrace"}, harden(256))
	r, err = verifyWith(t, pid2, specOf(harden(256)), "runsc")
	if err != nil {
		t.Fatal(err)
	}
	if got := controls(r.Failed()); got != "runsc seccomp" {
		t.Errorf("failed controls %q, want runsc seccomp", got)
	}
	// So is one with a flag that opens the boundary, however it got
	// there (an operator's args, a wrapper): host sockets, as root.
	pid3 := createContainer(t, "runsc", append(flags, "--host-uds=all"), harden(256))
	r, err = verifyWith(t, pid3, specOf(harden(256)), "runsc")
	if err != nil {
		t.Fatal(err)
	}
	if got := controls(r.Failed()); got != "runsc flags" {
		t.Errorf("failed controls %q, want runsc flags", got)
	}
}

func TestExpectMounts(t *testing.T) {
	s := &rspec.Spec{Mounts: []rspec.Mount{
		{Destination: "/tmp", Type: "tmpfs", Options: []string{"nosuid", "size=16m", "mode=1777"}},
		{Destination: "/sys/", Type: "sysfs", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/etc/hosts", Type: "bind", Source: "/x", Options: []string{"bind", "ro", "nosuid", "nodev"}},
		{Destination: "/dev/shm", Type: "tmpfs", Options: []string{"size=65536k", "noexec"}},
	}}
	got := expectMounts(s)
	want := []MountExpectation{
		// Every profile's /tmp is noexec, nosuid and nodev, whatever the spec says.
		{Destination: "/tmp", Type: "tmpfs", Flags: []string{"nosuid", "nodev", "noexec"}, TmpfsBytes: 16 << 20},
		// sysfs is read-only in every profile.
		{Destination: "/sys", Type: "sysfs", Flags: []string{"nosuid", "nodev", "noexec", "ro"}},
		{Destination: "/etc/hosts", Type: "bind", Flags: []string{"ro", "nosuid", "nodev"}},
		{Destination: "/dev/shm", Type: "tmpfs", Flags: []string{"noexec"}, TmpfsBytes: 64 << 20},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("expectMounts:\n got %v\nwant %v", got, want)
	}
	for v, n := range map[string]int64{"16384k": 16 << 20, "16M": 16 << 20, "1g": 1 << 30, "4096": 4096, "50%": -1} {
		e := expectMounts(&rspec.Spec{Mounts: []rspec.Mount{{Destination: "/x", Type: "tmpfs", Options: []string{"size=" + v}}}})
		if got := e[0].TmpfsBytes; got != n {
			t.Errorf("size=%s expects %d bytes, want %d", v, got, n)
		}
	}
}

// A process outside the group the policy judged fails create's
// verification, whatever limits the group it is in holds.
func TestVerifyCgroupPlaceElsewhere(t *testing.T) {
	pid := createContainer(t, "runc", nil, harden(64))
	p := specs.DefaultProfile()
	e, err := Expect(&p, specOf(harden(64)), "runc")
	if err != nil {
		t.Fatal(err)
	}
	e.Cgroup = "/bulkhead-verify-judged-elsewhere"
	r, err := Container(pid, e)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Failed() {
		if c.Control == "cgroup" && strings.Contains(c.Observed, "pids /bulkhead-verify-") {
			return
		}
	}
	t.Fatalf("a process outside %s passed: %+v", e.Cgroup, r)
}

// TestProcessFailsWithoutReadingTheFilter: once the status shows a control
// failed, Process gives its verdict without stopping the process under
// ptrace to read its filter (a stop a slow host may not deliver in time,
// which would turn a named failure into a timeout). The process here is
// already traced by this test, so a filter read could only wait for its
// tracer and fail.
func TestProcessFailsWithoutReadingTheFilter(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r, err := Process(cmd.Process.Pid, hardenedExpectation())
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	if verr := r.Err(); verr == nil || !strings.Contains(verr.Error(), "control ") {
		t.Fatalf("a process with no no_new_privs passed: %v (%+v)", verr, r)
	}
	for _, c := range r {
		if c.Control == "seccomp" && c.Expected != "Seccomp 2" {
			t.Errorf("the filter was read: %+v", c)
		}
	}
}
