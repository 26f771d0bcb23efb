package specs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestApplyProcess(t *testing.T) {
	all := []string{"CAP_SYS_ADMIN", "CAP_NET_RAW", "CAP_SYS_PTRACE"}
	in := &rspec.Process{
		Args: []string{"sh"}, Cwd: "/", User: rspec.User{UID: 0, GID: 0},
		Env: []string{"PATH=/bin", "GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345"},
		Capabilities: &rspec.LinuxCapabilities{Bounding: all, Effective: all, Inheritable: all,
			Permitted: all, Ambient: all},
		ApparmorProfile: "docker-default",
		OOMScoreAdj:     intp(-500),
	}
	ctx := testContext()
	ctx.Bundle = ""
	out, ds, err := ApplyProcess(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	c := out.Capabilities
	if c == nil || len(c.Bounding)+len(c.Effective)+len(c.Inheritable)+len(c.Permitted)+len(c.Ambient) != 0 {
		t.Fatalf("capabilities %+v", c)
	}
	if out.User.UID != 65534 || out.User.GID != 65534 || !out.NoNewPrivileges {
		t.Fatalf("process %+v", out)
	}
	if !slices.Equal(out.Env, []string{"PATH=/bin"}) {
		t.Fatalf("env %q", out.Env)
	}
	if out.ApparmorProfile != "docker-default" || *out.OOMScoreAdj != 500 {
		t.Fatalf("apparmor %q oom %d", out.ApparmorProfile, *out.OOMScoreAdj)
	}
	wantDecision(t, ds, "process.env[GITHUB_TOKEN]", Removed)
	if in.User.UID != 0 || len(in.Env) != 2 {
		t.Fatal("input modified")
	}
}

func TestApplyProcessCwd(t *testing.T) {
	bundle := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bundle, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "/proc/self/fd/7", filepath.Join(bundle, "rootfs/work"))
	data, _ := Marshal(&rspec.Spec{Root: &rspec.Root{Path: "rootfs"}})
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// A running container's tree, where the job made a link in its /tmp,
	// which no spec names.
	live := t.TempDir()
	if err := os.MkdirAll(filepath.Join(live, "tmp/build"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "/proc/self/fd/5", filepath.Join(live, "tmp/x"))
	for _, tc := range []struct {
		bundle, live, cwd string
		refused           bool
	}{
		{"", "", "/proc/self/fd/7", true},
		{"", "", "/dev/fd/7", true},
		{"", "", "/work", false},
		{bundle, "", "/work", true},
		{bundle, "", "/srv", false},
		{bundle, live, "/tmp/x", true},
		{bundle, live, "/tmp/x/..", true},
		{bundle, live, "/tmp/build", false},
	} {
		c := testContext()
		c.Bundle, c.LiveRoot = tc.bundle, tc.live
		_, ds, err := ApplyProcess(c, &rspec.Process{Args: []string{"sh"}, Cwd: tc.cwd})
		var re *RefusalError
		if got := errors.As(err, &re); got != tc.refused {
			t.Fatalf("bundle %q cwd %s: refused=%v (%v) %s", tc.bundle, tc.cwd, got, err, dump(ds))
		}
	}
}

func TestClampResources(t *testing.T) {
	p := testProfile()
	r := &rspec.LinuxResources{
		Memory: &rspec.LinuxMemory{Limit: i64(10 << 30), Swap: i64(20 << 30)},
		Pids:   &rspec.LinuxPids{Limit: i64(100000)},
		CPU:    &rspec.LinuxCPU{Quota: i64(-1)},
	}
	ds, err := ClampResources(p, r)
	if err != nil {
		t.Fatal(err)
	}
	if *r.Memory.Limit != 256*mib || *r.Memory.Swap != 256*mib || *r.Pids.Limit != 64 ||
		*r.CPU.Quota != 100000 || *r.CPU.Period != 100000 {
		t.Fatalf("clamped to %d/%d pids %d cpu %d/%d", *r.Memory.Limit, *r.Memory.Swap, *r.Pids.Limit, *r.CPU.Quota, *r.CPU.Period)
	}
	wantDecision(t, ds, "linux.resources.pids.limit", Tightened)

	t.Run("absent stays absent", func(t *testing.T) {
		r := &rspec.LinuxResources{Pids: &rspec.LinuxPids{Limit: i64(10)}}
		if _, err := ClampResources(p, r); err != nil {
			t.Fatal(err)
		}
		if r.Memory != nil || r.CPU != nil || *r.Pids.Limit != 10 {
			t.Fatalf("update grew: %+v", r)
		}
	})
	t.Run("swap only dropped", func(t *testing.T) {
		r := &rspec.LinuxResources{Memory: &rspec.LinuxMemory{Swap: i64(-1)}}
		ClampResources(p, r)
		if r.Memory.Swap != nil {
			t.Fatal("swap-only update kept")
		}
	})
	t.Run("period only", func(t *testing.T) {
		r := &rspec.LinuxResources{CPU: &rspec.LinuxCPU{Period: u64(10000)}}
		ClampResources(p, r)
		if r.CPU.Quota == nil || *r.CPU.Quota != 10000 {
			t.Fatalf("quota %v for period 10000", r.CPU.Quota)
		}
	})
}

// An exec asking for more than the container's own rlimits gets the
// container's: runc failed it with "error setting rlimit type 6:
// operation not permitted", no rule named.
func TestApplyProcessRlimitsWithinTheContainers(t *testing.T) {
	bundle := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bundle, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	own := []rspec.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 1024, Hard: 4096}, {Type: "RLIMIT_NPROC", Soft: 64, Hard: 64}}
	data, _ := Marshal(&rspec.Spec{Root: &rspec.Root{Path: "rootfs"}, Process: &rspec.Process{Rlimits: own}})
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	c := testContext()
	c.Bundle = bundle
	out, ds, err := ApplyProcess(c, &rspec.Process{Args: []string{"sh"}, Cwd: "/", Rlimits: []rspec.POSIXRlimit{
		{Type: "RLIMIT_NOFILE", Soft: 1048576, Hard: 1048576},
		{Type: "RLIMIT_NPROC", Soft: 8, Hard: 100000},
		{Type: "RLIMIT_STACK", Soft: 1 << 20, Hard: 1 << 30},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]uint64{"RLIMIT_NOFILE": {4096, 4096}, "RLIMIT_NPROC": {8, 64}, "RLIMIT_STACK": {1 << 20, 1 << 30}}
	for _, r := range out.Rlimits {
		if w, ok := want[r.Type]; ok && (r.Soft != w[0] || r.Hard != w[1]) {
			t.Errorf("%s: soft %d hard %d, want soft %d hard %d", r.Type, r.Soft, r.Hard, w[0], w[1])
		}
	}
	for _, field := range []string{"process.rlimits[RLIMIT_NOFILE]", "process.rlimits[RLIMIT_NPROC]"} {
		if !slices.ContainsFunc(ds, func(d Decision) bool { return d.Field == field && d.Action == Tightened }) {
			t.Errorf("no decision says %s was tightened: %+v", field, ds)
		}
	}
}
