package test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A container that joins its pod's pid namespace keeps what its init
// forked when the init exits: the orphan goes to the pod's init and stays
// in the container's cgroups, and runc calls the container stopped. Its
// lifetime and a kill must reach it all the same.

// pod is a CRI pod sandbox bulkhead created and started.
type pod struct {
	g           []string
	sid         string
	annotations map[string]string
	sandboxPid  int
}

// startPodSandbox creates and starts a pod's sandbox.
func startPodSandbox(t *testing.T, g []string, name string) *pod {
	t.Helper()
	sid := uniqueID(name + "-pod")
	p := &pod{g: g, sid: sid, annotations: map[string]string{
		"io.kubernetes.cri.sandbox-id":        sid,
		"io.kubernetes.cri.sandbox-uid":       "uid-" + sid,
		"io.kubernetes.cri.sandbox-namespace": "ns1",
		"io.kubernetes.cri.sandbox-name":      name,
	}}
	p.sandboxPid = p.create(t, sid, "sandbox", []string{"sleep", "600"})
	must(t, append(g, "start", sid)...)
	return p
}

// create creates a container of the pod of the kind CRI names
// (sandbox or container) and returns its init's pid.
func (p *pod) create(t *testing.T, id, kind string, args []string, mutate ...func(*rspec.Spec)) int {
	t.Helper()
	must(t, append(p.g, "create", "--bundle", p.bundle(t, id, kind, args, mutate...), id)...)
	t.Cleanup(func() { bulkhead(t, "", append(p.g, "delete", "--force", id)...) })
	return containerState(t, p.g, id).Pid
}

// bundle makes the bundle of container id of the pod, of the kind CRI
// names (sandbox or container), where a CRI engine would: bulkhead takes
// pod annotations from no other.
func (p *pod) bundle(t *testing.T, id, kind string, args []string, mutate ...func(*rspec.Spec)) string {
	t.Helper()
	return bundle.NewCRI(t, kind, id, args, append([]func(*rspec.Spec){p.annotate(kind)}, mutate...)...)
}

// annotate gives a spec the CRI annotations of a container of the pod of
// the kind CRI names (sandbox or container).
func (p *pod) annotate(kind string) func(*rspec.Spec) {
	return func(s *rspec.Spec) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations["io.kubernetes.cri.container-type"] = kind
		for k, v := range p.annotations {
			s.Annotations[k] = v
		}
	}
}

// joinPid points a spec's pid namespace at the sandbox's init's.
func (p *pod) joinPid(s *rspec.Spec) {
	for i, ns := range s.Linux.Namespaces {
		if ns.Type == rspec.PIDNamespace {
			s.Linux.Namespaces[i].Path = fmt.Sprintf("/proc/%d/ns/pid", p.sandboxPid)
		}
	}
}

// createMember creates a container of the pod; on runc it joins the
// sandbox's pid namespace, as a pod that shares its processes does (gVisor
// puts it into the sandbox by the annotations alone).
func (p *pod) createMember(t *testing.T, name string, args []string, runc bool, mutate ...func(*rspec.Spec)) string {
	t.Helper()
	id := uniqueID(name)
	if runc {
		mutate = append(mutate, p.joinPid)
	}
	p.create(t, id, "container", args, mutate...)
	return id
}

// startPod starts a pod sandbox and a container of the pod running args
// (in the sandbox's pid namespace on runc), and returns their ids.
func startPod(t *testing.T, g []string, name string, args []string, runc bool, mutate ...func(*rspec.Spec)) (sid, id string) {
	t.Helper()
	p := startPodSandbox(t, g, name)
	id = p.createMember(t, name, args, runc, mutate...)
	must(t, append(g, "start", id)...)
	return p.sid, id
}

// orphanMaker is a pod member's init that leaves a process behind and
// exits.
var orphanMaker = []string{"sh", "-c", "sleep 3600 & sleep 1"}

// podMemberWithOrphan starts a pod member whose init leaves a process
// behind and exits, and returns the container's id and the pids runc
// still lists for it once it calls the container stopped.
func podMemberWithOrphan(t *testing.T, g []string, name string, mutate func(*rspec.Spec)) (string, []int) {
	t.Helper()
	_, id := startPod(t, g, name, orphanMaker, true, mutate)
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

// In gVisor a pod member's processes end with its init: the watchdog and
// kill rest on it for runsc, where the container's end is its init's. The pod's sandbox sees the orphan
// while the member's init runs, and must not once the member stopped.
func TestGVisorPodMemberOrphanEndsWithItsInit(t *testing.T) {
	needRoot(t, "runsc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runsc"}
	// The init exits once told to, after the sandbox has seen its child.
	init := []string{"sh", "-c", "sleep 3600 & until [ -e /tmp/done ]; do sleep 0.1; done"}
	sid, id := startPod(t, g, "gvisor-orphan", init, false)
	sandboxSees := func() (bool, string) {
		out := must(t, append(g, "exec", sid, "ps", "-o", "pid,args")...)
		return strings.Contains(out, "sleep 3600"), out
	}
	if seen, out := sandboxSees(); !seen {
		t.Fatalf("the pod's sandbox does not see the member's processes: the test proves nothing\n%s", out)
	}
	must(t, append(g, "exec", id, "touch", "/tmp/done")...)
	waitStatus(t, g, id, "stopped")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		seen, out := sandboxSees()
		if !seen {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the member's init ended 10 s ago and its child still runs in the pod's sandbox:\n%s", out)
		}
	}
}

// A runc container may join only a runc pod sandbox's namespaces: a runsc
// sandbox's init is runsc-sandbox, a host process in the host's pid
// namespace, and a runc member joining it would see and signal every
// process on the host.
func TestPodMemberJoinsNoOtherBackendsSandbox(t *testing.T) {
	needRoot(t, "runc", "runsc")
	root := stateRoot(t)
	p := startPodSandbox(t, []string{"--root", root, "--backend", "runsc"}, "cross-backend")
	id := uniqueID("cross-backend")
	member := p.bundle(t, id, "container", []string{"sleep", "600"}, p.joinPid)
	r := bulkhead(t, "", "--root", root, "--backend", "runc", "create", "--bundle", member, id)
	if r.code == 0 {
		bulkhead(t, "", "--root", root, "delete", "--force", id)
		t.Fatal("a runc container joined a runsc pod sandbox's pid namespace")
	}
	if !strings.Contains(r.stderr, "linux.namespaces") {
		t.Fatalf("refused, but not by the namespaces rule:\n%s", r.stderr)
	}
}

// A gVisor pod member's init is the pod's sandbox process, which outlives
// the member: its deadline kills the member's tasks, leaves the pod
// running, and the audit log says killed.
func TestGVisorPodMemberMeetsTheDeadline(t *testing.T) {
	needRoot(t, "runsc")
	config, audit := lifetimeConfig(t, "2m")
	g := []string{"--config", config, "--root", stateRoot(t), "--backend", "runsc"}
	sid, id := startPod(t, g, "gvisor-deadline", []string{"sleep", "3600"}, false, withLifetimeAnnotation("3s"))
	waitStatus(t, g, id, "stopped")
	if e := deadlineEvent(t, audit, id); e["outcome"] != "killed" {
		t.Fatalf("deadline event %v, want outcome killed", e)
	}
	if s := containerState(t, g, sid).Status; s != "running" {
		t.Fatalf("the pod's sandbox is %s after its member's deadline, want running", s)
	}
}
