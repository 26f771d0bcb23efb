package test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A container that joins its pod's pid namespace keeps what its init
// forked when the init exits: the orphan goes to the pod's init and stays
// in the container's cgroups, and runc calls the container stopped. Its
// lifetime and a kill must reach it all the same.

// podMemberWithOrphan starts a pod sandbox and a container of the pod in
// its pid namespace whose init leaves a process behind and exits, and
// returns the container's id and the pids runc still lists for it once it
// calls the container stopped.
func podMemberWithOrphan(t *testing.T, g []string, name string, mutate func(*rspec.Spec)) (string, []int) {
	t.Helper()
	sid := uniqueID(name + "-pod")
	pod := map[string]string{
		"io.kubernetes.cri.sandbox-id":        sid,
		"io.kubernetes.cri.sandbox-uid":       "uid-" + sid,
		"io.kubernetes.cri.sandbox-namespace": "ns1",
		"io.kubernetes.cri.sandbox-name":      name,
	}
	annotate := func(kind string) func(*rspec.Spec) {
		return func(s *rspec.Spec) {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations["io.kubernetes.cri.container-type"] = kind
			for k, v := range pod {
				s.Annotations[k] = v
			}
		}
	}
	start := func(id string, args []string, mutate ...func(*rspec.Spec)) int {
		t.Helper()
		must(t, append(g, "create", "--bundle", bundle.New(t, args, mutate...), id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		pid := containerState(t, g, id).Pid
		must(t, append(g, "start", id)...)
		return pid
	}
	sandboxPid := start(sid, []string{"sleep", "600"}, annotate("sandbox"))
	id := uniqueID(name)
	joinPod := func(s *rspec.Spec) {
		for i, ns := range s.Linux.Namespaces {
			if ns.Type == rspec.PIDNamespace {
				s.Linux.Namespaces[i].Path = fmt.Sprintf("/proc/%d/ns/pid", sandboxPid)
			}
		}
	}
	start(id, []string{"sh", "-c", "sleep 3600 & sleep 1"}, annotate("container"), joinPod, mutate)
	waitStatus(t, g, id, "stopped")
	left := listedPids(t, g, id)
	if len(left) == 0 {
		t.Fatalf("the container's init left nothing running once stopped: the test proves nothing")
	}
	return id, left
}

// listedPids is what `ps --format json` lists for id.
func listedPids(t *testing.T, g []string, id string) []int {
	t.Helper()
	var pids []int
	out := must(t, append(g, "ps", "--format", "json", id)...)
	if err := json.Unmarshal([]byte(out), &pids); err != nil {
		t.Fatalf("ps --format json %s: %v\n%s", id, err, out)
	}
	return pids
}

// waitPidsGone fails unless every pid has ended (gone or a zombie) within d.
func waitPidsGone(t *testing.T, pids []int, d time.Duration, after string) {
	t.Helper()
	for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		var left []int
		for _, p := range pids {
			if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p)); err == nil && !zombieStat(stat) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: processes %v of the container still run after %s", after, left, d)
		}
	}
}

func TestPodMemberOrphanMeetsTheDeadline(t *testing.T) {
	needRoot(t, "runc")
	// The pod's own lifetime is long; the container's is shortened, so
	// only the container's deadline can end the orphan in time.
	config, audit := lifetimeConfig(t, "2m")
	root := stateRoot(t)
	g := []string{"--config", config, "--root", root, "--backend", "runc"}
	id, left := podMemberWithOrphan(t, g, "orphan-deadline", withLifetimeAnnotation("3s"))
	waitPidsGone(t, left, 30*time.Second, "the container's 3 s lifetime")
	if e := deadlineEvent(t, audit, id); e["outcome"] != "killed" {
		t.Fatalf("deadline event %v, want outcome killed", e)
	}
}

func TestKillReachesAPodMembersOrphan(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runc"}
	id, left := podMemberWithOrphan(t, g, "orphan-kill", func(*rspec.Spec) {})
	// An engine's stop: KILL for the init, without --all.
	must(t, append(g, "kill", id, "KILL")...)
	waitPidsGone(t, left, 10*time.Second, "kill KILL")
	must(t, append(g, "delete", id)...)
	assertGone(t, root, "runc", id)
}
