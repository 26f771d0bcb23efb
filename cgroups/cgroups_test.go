package cgroups

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

func TestV2Fixture(t *testing.T) {
	root := filepath.Join("testdata", "v2")
	g, err := Load("/bulkhead/limited", WithV2Mountpoint(root))
	if err != nil {
		t.Fatal(err)
	}
	if g.Version() != 2 || g.Path() != "/bulkhead/limited" {
		t.Fatalf("version %d path %q", g.Version(), g.Path())
	}
	l, err := g.Limits()
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{Version: 2, PidsMax: 64, MemoryMax: 256 << 20,
		// memory.swap.max 0 is "no swap": memory+swap = memory.
		MemorySwapMax: 256 << 20, CPUQuota: 50000, CPUPeriod: 100000, CPUBurst: 0}
	if l != want {
		t.Errorf("limits %+v, want %+v", l, want)
	}
	e, err := g.Events()
	if err != nil {
		t.Fatal(err)
	}
	wantE := Events{PidsMax: 17, OOMKills: 2, MemoryFailcnt: 41, NrThrottled: 12, ThrottledTime: 600 * time.Millisecond, CPUUsage: 120 * time.Millisecond}
	if e != wantE {
		t.Errorf("events %+v, want %+v", e, wantE)
	}
	if !g.Exists() || !Exists("/bulkhead/limited", WithV2Mountpoint(root)) {
		t.Error("fixture group reported missing")
	}
	if Exists("/bulkhead/gone", WithV2Mountpoint(root)) {
		t.Error("missing group reported present")
	}
}

func TestV2FixtureUnlimited(t *testing.T) {
	g, err := Load("bulkhead/unlimited", WithV2Mountpoint(filepath.Join("testdata", "v2")))
	if err != nil {
		t.Fatal(err)
	}
	l, err := g.Limits()
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{Version: 2, PidsMax: Unlimited, MemoryMax: Unlimited, MemorySwapMax: Unlimited, CPUQuota: Unlimited, CPUPeriod: 100000, CPUBurst: 20000}
	if l != want {
		t.Errorf("limits %+v, want %+v", l, want)
	}
	if s := String(l.PidsMax); s != "max" {
		t.Errorf("String(Unlimited) = %q", s)
	}
}

func TestV2FixtureSwapAndAbsent(t *testing.T) {
	g, err := Load("/bulkhead/swaponly", WithV2Mountpoint(filepath.Join("testdata", "v2")))
	if err != nil {
		t.Fatal(err)
	}
	l, err := g.Limits()
	if err != nil {
		t.Fatal(err)
	}
	// Only the memory controller is enabled: the others are Absent, not 0.
	want := Limits{Version: 2, PidsMax: Absent, MemoryMax: 64 << 20, MemorySwapMax: 96 << 20, CPUQuota: Absent, CPUPeriod: Absent, CPUBurst: Absent}
	if l != want {
		t.Errorf("limits %+v, want %+v", l, want)
	}
	e, err := g.Events()
	if err != nil {
		t.Fatal(err)
	}
	if e != (Events{}) {
		t.Errorf("events of a group without counters: %+v", e)
	}
}

func TestV2FixtureMissingGroup(t *testing.T) {
	g, err := Load("/bulkhead/gone", WithV2Mountpoint(filepath.Join("testdata", "v2")))
	if err != nil {
		t.Fatal(err)
	}
	if g.Exists() {
		t.Error("missing group exists")
	}
	if _, err := g.Limits(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("limits of a missing group: %v, want ErrNotExist", err)
	}
}

func TestParseLimit(t *testing.T) {
	for in, want := range map[string]int64{"max": Unlimited, "-1": Unlimited, "0": 0, "42": 42} {
		got, err := parseLimit(in)
		if err != nil || got != want {
			t.Errorf("parseLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := parseLimit("lots"); err == nil {
		t.Error("parseLimit accepted garbage")
	}
	if v1Bytes(9223372036854771712) != Unlimited || v1Bytes(64<<20) != 64<<20 {
		t.Error("v1Bytes")
	}
}

// needV1Root skips unless the test can create v1 cgroups for real.
func needV1Root(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: creating cgroups needs root")
	}
	if m := cgroupsv3.Mode(); m != cgroupsv3.Legacy && m != cgroupsv3.Hybrid {
		t.Skip("skipping: host is not cgroup v1 (legacy or hybrid); v2 is covered by the fixture tests")
	}
}

func randomName(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "bulkhead-test-" + hex.EncodeToString(b)
}

func write(t *testing.T, path, value string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestV1Real makes a v1 group in the pids, memory and cpu hierarchies, sets
// limits, moves a child into it and reads everything back through ForPID.
func TestV1Real(t *testing.T) {
	needV1Root(t)
	name := randomName(t)
	var dirs []string
	for _, c := range []string{"pids", "memory", "cpu"} {
		d := filepath.Join("/sys/fs/cgroup", c, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	pidsDir, memDir, cpuDir := dirs[0], dirs[1], dirs[2]

	// The child waits on stdin so the test decides when it forks.
	cmd := exec.Command("/bin/busybox", "sh", "-c", "read x; /bin/busybox true; exec /bin/busybox sleep 30")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		for _, d := range dirs {
			// The kernel may need a moment after the exit to let go.
			for i := 0; i < 50; i++ {
				if err := os.Remove(d); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		if Exists(name) {
			t.Errorf("cgroup %s left behind", name)
		}
	})

	write(t, filepath.Join(pidsDir, "pids.max"), "42")
	write(t, filepath.Join(memDir, "memory.limit_in_bytes"), strconv.Itoa(64<<20))
	hasMemsw := exists(filepath.Join(memDir, "memory.memsw.limit_in_bytes"))
	if hasMemsw {
		write(t, filepath.Join(memDir, "memory.memsw.limit_in_bytes"), strconv.Itoa(96<<20))
	}
	write(t, filepath.Join(cpuDir, "cpu.cfs_period_us"), "100000")
	write(t, filepath.Join(cpuDir, "cpu.cfs_quota_us"), "50000")
	for _, d := range dirs {
		write(t, filepath.Join(d, "cgroup.procs"), strconv.Itoa(cmd.Process.Pid))
	}

	g, err := ForPID(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if g.Version() != 1 || g.Path() != "/"+name {
		t.Fatalf("version %d path %q, want 1 /%s", g.Version(), g.Path(), name)
	}
	if got := strings.Join(g.Dirs(), " "); got != strings.Join(dirs, " ") {
		t.Errorf("dirs %s, want %s", got, strings.Join(dirs, " "))
	}
	l, err := g.Limits()
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{Version: 1, PidsMax: 42, MemoryMax: 64 << 20, MemorySwapMax: Absent, CPUQuota: 50000, CPUPeriod: 100000, CPUBurst: 0}
	if l.CPUBurst == Absent {
		want.CPUBurst = Absent // a kernel before 5.14 has no burst file
	}
	if hasMemsw {
		want.MemorySwapMax = 96 << 20
	}
	if l != want {
		t.Errorf("limits %+v, want %+v", l, want)
	}
	// v1 has no "max": an unlimited group reads PAGE_COUNTER_MAX pages.
	if hasMemsw {
		write(t, filepath.Join(memDir, "memory.memsw.limit_in_bytes"), "-1")
	}
	write(t, filepath.Join(memDir, "memory.limit_in_bytes"), "-1")
	if u, err := g.Limits(); err != nil || u.MemoryMax != Unlimited || (hasMemsw && u.MemorySwapMax != Unlimited) {
		t.Errorf("unlimited memory read as %+v (%v)", u, err)
	}
	write(t, filepath.Join(memDir, "memory.limit_in_bytes"), strconv.Itoa(64<<20))
	if hasMemsw {
		write(t, filepath.Join(memDir, "memory.memsw.limit_in_bytes"), strconv.Itoa(96<<20))
	}

	// Load by path sees the same group.
	g2, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if l2, err := g2.Limits(); err != nil || l2 != l {
		t.Errorf("Load(%s).Limits() = %+v, %v; want %+v", name, l2, err, l)
	}

	// Hit the pids limit: with pids.max 1 the shell's fork fails and
	// pids.events max counts it.
	before, err := g.Events()
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(pidsDir, "pids.max"), "1")
	io.WriteString(stdin, "go\n")
	deadline := time.Now().Add(5 * time.Second)
	for {
		e, err := g.Events()
		if err != nil {
			t.Fatal(err)
		}
		if e.PidsMax > before.PidsMax {
			t.Logf("pids.events max %d -> %d", before.PidsMax, e.PidsMax)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pids.events max did not grow: %+v", e)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !g.Exists() {
		t.Error("group reported missing while it exists")
	}
}

// needRunc skips unless runc containers can be created here.
func needRunc(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: runc containers need root")
	}
	p, err := exec.LookPath("runc")
	if err != nil {
		t.Skip("skipping: runc is not installed (hack/install-deps.sh)")
	}
	return p
}

// TestRuncContainer reads the cgroup of a real runc container and checks
// that runc delete leaves no cgroup behind.
func TestRuncContainer(t *testing.T) {
	runc := needRunc(t)
	name := randomName(t)
	cgPath := "/" + name
	pids, mem, quota, period := int64(42), int64(64<<20), int64(50000), uint64(100000)
	b := bundle.New(t, []string{"sleep", "30"}, func(s *rspec.Spec) {
		s.Linux.CgroupsPath = cgPath
		s.Linux.Resources.Pids = &rspec.LinuxPids{Limit: &pids}
		s.Linux.Resources.Memory = &rspec.LinuxMemory{Limit: &mem, Swap: &mem}
		s.Linux.Resources.CPU = &rspec.LinuxCPU{Quota: &quota, Period: &period}
	})
	root := t.TempDir()
	id := name
	pidFile := filepath.Join(t.TempDir(), "pid")
	// runc's output goes to a file: the container inherits it, and a pipe
	// would keep the test waiting until the container exits.
	logf, err := os.Create(filepath.Join(t.TempDir(), "runc.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	create := exec.Command(runc, "--root", root, "create", "--bundle", b, "--pid-file", pidFile, id)
	create.Stdout, create.Stderr = logf, logf
	deleted := false
	del := func() {
		if out, err := exec.Command(runc, "--root", root, "delete", "--force", id).CombinedOutput(); err != nil {
			t.Errorf("runc delete: %v: %s", err, out)
		}
		deleted = true
	}
	t.Cleanup(func() {
		if !deleted {
			exec.Command(runc, "--root", root, "delete", "--force", id).Run()
		}
	})
	if err := create.Run(); err != nil {
		out, _ := os.ReadFile(logf.Name())
		t.Fatalf("runc create: %v: %s", err, out)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	g, err := ForPID(pid)
	if err != nil {
		t.Fatal(err)
	}
	if g.Path() != cgPath {
		t.Errorf("path %q, want %q", g.Path(), cgPath)
	}
	l, err := g.Limits()
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{Version: g.Version(), PidsMax: 42, MemoryMax: mem, MemorySwapMax: mem, CPUQuota: 50000, CPUPeriod: 100000}
	if l.CPUBurst == Absent {
		want.CPUBurst = Absent // a kernel before 5.14 has no burst file
	}
	if l.Version == 1 && !exists(filepath.Join("/sys/fs/cgroup/memory", cgPath, "memory.memsw.limit_in_bytes")) {
		want.MemorySwapMax = Absent // no swap accounting on this kernel
	}
	if l != want {
		t.Errorf("limits %+v, want %+v", l, want)
	}
	if _, err := g.Events(); err != nil {
		t.Errorf("events: %v", err)
	}
	if !Exists(cgPath) {
		t.Fatal("container cgroup not found by Exists")
	}
	del()
	if g.Exists() || Exists(cgPath) {
		t.Errorf("runc delete --force left cgroup %s behind: %v", cgPath, g.Dirs())
	}
}

// TestProbeSwap2: the group made to look for memory.swap.max is removed
// again, and a group without the file means no swap accounting. (On a
// real v2 root the kernel fills the group; test/cgroupv2 checks that.)
func TestProbeSwap2(t *testing.T) {
	root := t.TempDir()
	ok, detail := probeSwap2(root)
	if ok || !strings.Contains(detail, "missing") {
		t.Errorf("probeSwap2 on an empty directory: %v %q", ok, detail)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("the group made to look is left: %v", ents)
	}
}
