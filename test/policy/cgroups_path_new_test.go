package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestCallerCgroupMustBeNew: an empty group the host set up with limits
// of its own (a service's before it starts, the kubelet's pod parent) was
// accepted as a container's cgroupsPath because no process was in it:
// runc overwrote its pids.max 1000 with the container's 64 and its delete
// removed the host's group. It is refused now and stays as it was; a new
// group below it is still the container's own.
func TestCallerCgroupMustBeNew(t *testing.T) {
	binaries.NeedRoot(t, "runc")
	hostGroup := fmt.Sprintf("/bh-hostgroup-%d", os.Getpid())
	pidsMax := int64(1000)
	res := &rspec.LinuxResources{Pids: &rspec.LinuxPids{Limit: &pidsMax}}
	// Runs last: the backend makes the host's group in the hierarchies
	// this test did not (as the parent of the new group below it), and
	// removes only its own group.
	t.Cleanup(func() {
		dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", hostGroup))
		for _, d := range append(dirs, filepath.Join("/sys/fs/cgroup", hostGroup)) {
			os.Remove(d)
		}
		if cgroups.Exists(hostGroup) {
			t.Errorf("cgroup %s left behind", hostGroup)
		}
	})
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		m, err := cgroup2.NewManager("/sys/fs/cgroup", hostGroup, cgroup2.ToResources(res))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Delete() })
	} else {
		c, err := cgroup1.New(cgroup1.StaticPath(hostGroup), res,
			cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) {
				return []cgroup1.Subsystem{cgroup1.NewPids("/sys/fs/cgroup"), cgroup1.NewMemory("/sys/fs/cgroup")}, nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete() })
	}
	unchanged := func() {
		t.Helper()
		g, err := cgroups.Load(hostGroup)
		if err != nil {
			t.Fatalf("the host's group: %v", err)
		}
		lim, err := g.Limits()
		if err != nil {
			t.Fatal(err)
		}
		if lim.PidsMax != pidsMax {
			t.Errorf("the host's group has pids.max %s, want %d", cgroups.String(lim.PidsMax), pidsMax)
		}
	}

	run := func(path string) (result, string) {
		dir := bundle.New(t, []string{"true"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = path })
		logFile := filepath.Join(t.TempDir(), "log.json")
		out := binaries.Cmd{}.Run(t, filepath.Join(binaries.Dir(t), "bulkhead"),
			"--root", t.TempDir(), "--log", logFile, "--log-format", "json", "run", "--bundle", dir,
			fmt.Sprintf("cg-new-%d", os.Getpid()))
		return result{out.Stdout, out.Stderr, out.Code}, logFile
	}
	r, logFile := run(hostGroup)
	assertRefused(t, r, logFile, "cgroups_path")
	unchanged()

	below := hostGroup + "/container"
	if r, _ := run(below); r.code != 0 {
		t.Fatalf("a new group below an empty one: exit %d\nstderr: %s", r.code, r.stderr)
	}
	if cgroups.Exists(below) {
		t.Errorf("cgroup %s left behind", below)
	}
	unchanged()
}
