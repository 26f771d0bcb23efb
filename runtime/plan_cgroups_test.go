package runtime

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
)

// TestChooseCgroupsPathSystemd: under --systemd-cgroup a container whose
// caller named no cgroup gets a scope of its own in bulkhead.slice, one
// per state root and id, instead of the backend's default
// system.slice:runc:<id>, which two containers of one id would share.
func TestChooseCgroupsPathSystemd(t *testing.T) {
	choose := func(root string) (string, []specs.Decision) {
		s := &rspec.Spec{Linux: &rspec.Linux{}}
		ds := chooseCgroupsPath(s, &Globals{Root: root, SystemdCgroup: true}, "web")
		return s.Linux.CgroupsPath, ds
	}
	a, ds := choose("/run/a")
	b, _ := choose("/run/b")
	if !strings.HasPrefix(a, "bulkhead.slice:bulkhead:web-") || a == b {
		t.Fatalf("chosen %q and %q, want distinct scopes in bulkhead.slice", a, b)
	}
	if len(ds) != 2 || ds[0].Field != "linux.cgroupsPath" || ds[0].After != a {
		t.Fatalf("decisions %+v, want the chosen path", ds)
	}
	if _, err := specs.SystemdScopePath(a); err != nil {
		t.Fatalf("the chosen path %q is not one the systemd driver takes: %v", a, err)
	}
	// A caller's own path is the rule's to judge, not replaced.
	s := &rspec.Spec{Linux: &rspec.Linux{CgroupsPath: "system.slice:docker:web"}}
	if ds := chooseCgroupsPath(s, &Globals{Root: "/run/a", SystemdCgroup: true}, "web"); ds != nil || s.Linux.CgroupsPath != "system.slice:docker:web" {
		t.Fatalf("a caller's path became %q (%+v)", s.Linux.CgroupsPath, ds)
	}
}

// TestFreshCgroupSystemdScope: the scope bulkhead chose is judged where
// the systemd driver makes it, so a process already in it refuses the
// create instead of being joined.
func TestFreshCgroupSystemdScope(t *testing.T) {
	id := "fresh" + strconv.Itoa(os.Getpid())
	path := DefaultSystemdCgroupsPath("/run/test", id)
	scope, err := specs.SystemdScopePath(path)
	if err != nil {
		t.Fatal(err)
	}
	makeGroups(t, "/"+specs.BulkheadSystemdSlice, scope)
	s := &rspec.Spec{Linux: &rspec.Linux{CgroupsPath: path}, Annotations: map[string]string{annotationCgroupsPath: path}}
	ctx := &specs.Context{SystemdCgroup: true}
	if err := freshCgroup(ctx, s); err != nil {
		t.Fatalf("an empty scope: %v", err)
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	// One hierarchy is enough: a process in any makes the group taken.
	procs := "/sys/fs/cgroup/pids" + scope + "/cgroup.procs"
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		procs = "/sys/fs/cgroup" + scope + "/cgroup.procs"
	}
	if err := os.WriteFile(procs, []byte(strconv.Itoa(sleep.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	err = freshCgroup(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "("+scope+") already holds processes") {
		t.Fatalf("a scope with a process in it: %v, want refused naming %s", err, scope)
	}
}
