package policy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestSystemdCgroupsPathJudgedAsScope: under --systemd-cgroup runc's driver
// joins a scope that exists (runc 1.1 takes systemd's "unit exists" for
// success) and puts a new one below whatever slice the caller names. check
// judges the scope's cgroupfs group on the host's real tree: another
// container's scope is refused, and so is a new scope in a slice holding
// another tenant's processes, naming that slice; a .slice name is refused
// before any lookup. A new scope in an empty slice runs.
func TestSystemdCgroupsPathJudgedAsScope(t *testing.T) {
	needRunc(t)
	slice := fmt.Sprintf("bhsd%d.slice", os.Getpid())
	scope := "/" + slice + "/other-1.scope"
	hostGroup(t, "/"+slice)
	hostGroup(t, scope)
	// A process of the other tenant's in its scope, in every hierarchy.
	sleep := exec.Command("sleep", "600")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	procs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", slice, "other-1.scope", "cgroup.procs"))
	procs = append(procs, filepath.Join("/sys/fs/cgroup", slice, "other-1.scope", "cgroup.procs"))
	moved := 0
	for _, p := range procs {
		if err := os.WriteFile(p, []byte(strconv.Itoa(sleep.Process.Pid)), 0o644); err == nil {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("could not put the other tenant's process into %s", scope)
	}

	for _, c := range []struct{ path, want string }{
		{slice + ":other:1", "this cgroup (the systemd scope " + scope + ") already exists"},
		{slice + ":evil:2", "joins the limits of /" + slice + ", which holds another container's processes"},
		{"system.slice:docker:evil.slice", "the name evil.slice ends in .slice"},
		{"a--b.slice:docker:x", "the slice a--b.slice is not one systemd nests"},
	} {
		dir := bundle.New(t, []string{"true"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = c.path })
		r := bulkhead(t, "", nil, "--systemd-cgroup", "check", "--bundle", dir)
		out := r.stdout + r.stderr
		want := "refused: rule cgroups_path refuses linux.cgroupsPath " + c.path + ": " + c.want
		if r.code == 0 || !strings.Contains(out, want) || !strings.Contains(out, "name a new cgroup for this container") {
			t.Errorf("check --systemd-cgroup of %s: exit %d, want refused with %q\nstdout: %s\nstderr: %s", c.path, r.code, want, r.stdout, r.stderr)
		}
	}

	// A new scope in an empty slice of the caller's own is accepted.
	own := fmt.Sprintf("bhsdown%d.slice", os.Getpid())
	hostGroup(t, "/"+own)
	dir := bundle.New(t, []string{"true"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = own + ":app:1" })
	r := bulkhead(t, "", nil, "--systemd-cgroup", "check", "--bundle", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "verdict: WOULD RUN") || !strings.Contains(r.stdout, "the systemd scope /"+own+"/app-1.scope") {
		t.Errorf("check --systemd-cgroup of a new scope in an empty slice: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}
