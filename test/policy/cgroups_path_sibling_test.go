package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/test/bundle"
)

// hostGroup makes an empty group at path in every hierarchy of the host,
// as a tenant or an engine makes a pod's parent, and removes it (and any
// group below it the test left) at the end.
func hostGroup(t *testing.T, path string) {
	t.Helper()
	dirs := []string{filepath.Join("/sys/fs/cgroup", path)}
	if cgroupsv3.Mode() != cgroupsv3.Unified {
		entries, err := os.ReadDir("/sys/fs/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		dirs = nil
		for _, e := range entries {
			// cpu and cpuacct are symlinks to the one cpu,cpuacct hierarchy.
			if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.Name(), path))
			}
		}
	}
	t.Cleanup(func() {
		// Processes left in it are the test's own containers', should a
		// refusal have failed.
		if g, err := cgroups.Load(path); err == nil {
			if pids, err := g.Procs(); err == nil && len(pids) > 0 {
				t.Errorf("processes %v left in %s", pids, path)
				for _, pid := range pids {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				time.Sleep(time.Second)
			}
		}
		for _, d := range dirs {
			below, _ := filepath.Glob(filepath.Join(d, "*", "cgroup.procs"))
			for _, b := range below {
				os.Remove(filepath.Dir(b))
			}
			os.Remove(d)
		}
		if cgroups.Exists(path) {
			t.Errorf("cgroup %s left behind", path)
		}
	})
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCallerCgroupBesideAnotherContainer: a pod's group holds processes
// only in its containers' groups, never itself, so a new sibling below it
// passed as "below none that holds processes", and the attacker's
// container shared the victim's pids.max: 38 sleeps there and the
// victim's next fork failed. The sibling is refused now, by check and by
// create, naming the group; a container in an empty parent of its own is
// still accepted.
func TestCallerCgroupBesideAnotherContainer(t *testing.T) {
	needRunc(t)
	pod := fmt.Sprintf("/bhpod-%d", os.Getpid())
	hostGroup(t, pod)
	limit := int64(40)
	if cgroupsv3.Mode() != cgroupsv3.Unified {
		if err := os.WriteFile(filepath.Join("/sys/fs/cgroup/pids", pod, "pids.max"), []byte(fmt.Sprint(limit)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	root, victim, _ := running(t, nil, func(s *rspec.Spec) { s.Linux.CgroupsPath = pod + "/victim" })
	if busy, err := cgroups.Populated(pod); err != nil || !busy {
		t.Fatalf("the victim's processes are not below %s (populated %v, %v)", pod, busy, err)
	}

	evil := bundle.New(t, []string{"sh", "-c", "for i in $(seq 38); do sleep 600 & done; echo == forked"},
		func(s *rspec.Spec) { s.Linux.CgroupsPath = pod + "/evil" })
	want := "joins the limits of " + pod + ", which holds another container's processes"
	check := bulkhead(t, "", nil, "check", "--bundle", evil)
	if check.code == 0 || !strings.Contains(check.stdout+check.stderr, want) {
		t.Errorf("check of the sibling: exit %d, want refused with %q\nstdout: %s\nstderr: %s", check.code, want, check.stdout, check.stderr)
	}
	logFile := filepath.Join(t.TempDir(), "log.json")
	r := bulkhead(t, "", nil, "--root", root, "--log", logFile, "--log-format", "json", "run", "--bundle", evil,
		fmt.Sprintf("cg-evil-%d", os.Getpid()))
	assertRefused(t, r, logFile, "cgroups_path")
	if !strings.Contains(r.stderr, want) {
		t.Errorf("refusal does not name the group: %s", r.stderr)
	}
	if cgroups.Exists(pod + "/evil") {
		t.Errorf("cgroup %s/evil was made", pod)
	}
	// The victim still forks: nothing of the attacker ran in its limits.
	must(t, nil, "--root", root, "exec", victim, "sh", "-c", "true & wait")

	own := fmt.Sprintf("/bhpod-%d-own", os.Getpid())
	hostGroup(t, own)
	ok := bundle.New(t, []string{"true"}, func(s *rspec.Spec) { s.Linux.CgroupsPath = own + "/app" })
	must(t, nil, "--root", root, "run", "--bundle", ok, fmt.Sprintf("cg-own-%d", os.Getpid()))
	if cgroups.Exists(own + "/app") {
		t.Errorf("cgroup %s/app left behind", own)
	}
}
