package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestExecStaysInTheContainersCgroup: runc's `exec --cgroup` joins the
// value to the container's group and accepts any path that starts with it
// as text, so `../<group>-host` put the exec'd process in a sibling group
// (a host service's, or another container's) with no pids, memory or cpu
// limit: 150 processes ran in a container whose pids.max was 64. exec
// refuses such a path before anything runs; a real sub-cgroup of the
// container's own still works.
func TestExecStaysInTheContainersCgroup(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	cfg, _ := workspaceConfig(t, "")
	b := bundle.New(t, []string{"sleep", "60"})
	g := []string{"--root", root, "--config", cfg, "--backend", "runc"}
	id := uniqueID("exec-cgroup")
	must(t, append(g, "create", "--bundle", b, id)...)
	// Groups this test makes go after the container, whose processes
	// would keep them busy.
	var made []string
	defer func() {
		bulkhead(t, "", append(g, "delete", "--force", id)...)
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i])
		}
	}()
	must(t, append(g, "start", id)...)

	grp, err := cgroups.Load(runtime.DefaultCgroupsPath(root, id))
	if err != nil {
		t.Fatal(err)
	}
	// The controller whose group the exec names: pids on v1 (runc's
	// controller:path form), the one group on v2.
	dir, prefix := "", ""
	for _, d := range grp.Dirs() {
		if grp.Version() == 2 || strings.Contains(d, "/pids/") {
			dir = d
		}
	}
	if grp.Version() == 1 {
		prefix = "pids:"
	}
	if dir == "" {
		t.Fatalf("no pids group among %v", grp.Dirs())
	}
	sibling := dir + "-host"
	if err := os.Mkdir(sibling, 0o755); err != nil {
		t.Fatal(err)
	}
	made = append(made, sibling)

	r := bulkhead(t, "", append(g, "exec", "-d", "--cgroup", prefix+"../"+filepath.Base(sibling), id, "sleep", "30")...)
	procs, err := os.ReadFile(filepath.Join(sibling, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	if r.code == 0 || len(strings.TrimSpace(string(procs))) > 0 {
		t.Fatalf("exec --cgroup into the sibling group %s: exit %d, stderr %q, processes there %q; want refused and none",
			sibling, r.code, r.stderr, procs)
	}
	if !strings.Contains(r.stderr, "--cgroup") {
		t.Errorf("the refusal does not name --cgroup: %q", r.stderr)
	}

	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	made = append(made, sub)
	must(t, append(g, "exec", "-d", "--cgroup", prefix+"sub", id, "sleep", "1")...)
}

// A short exec's own stderr is the command's: that it ended before
// bulkhead could read it is the audit log's and the log's to say, not a
// warning in every such command's output.
func TestShortExecLeavesStderrToTheCommand(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		id := uniqueID("shortexec-" + backend)
		must(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "3600"}), id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		must(t, append(g, "start", id)...)
		for i := 0; i < 20; i++ {
			if r := bulkhead(t, "", append(g, "exec", id, "true")...); r.code != 0 || strings.TrimSpace(r.stderr) != "" {
				t.Fatalf("exec %s true: exit %d, stderr %q; want 0 and nothing", id, r.code, r.stderr)
			}
		}
	})
}
