package state

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
)

// podAnnotations are what CRI gives a container of pod uid in sandbox id.
func podAnnotations(id, uid string) map[string]string {
	return map[string]string{specs.AnnotationCRIContainerType: "container", specs.AnnotationCRISandboxID: id,
		"io.kubernetes.cri.sandbox-uid": uid, "io.kubernetes.cri.sandbox-namespace": "default", "io.kubernetes.cri.sandbox-name": "web"}
}

// criState lays out containerd's state as its CRI plugin does for the
// tasks named (sandboxes, then containers), root's as containerd makes
// it, and returns the directory.
func criState(t *testing.T, sandboxes, containers []string) string {
	state := filepath.Join(t.TempDir(), "state")
	for kind, ids := range map[string][]string{"sandboxes": sandboxes, "containers": containers} {
		for _, id := range ids {
			for _, dir := range []string{criTask(state, id), filepath.Join(state, "io.containerd.grpc.v1.cri", kind, id)} {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return state
}

// criTask is the bundle of task id in containerd's state.
func criTask(state, id string) string {
	return filepath.Join(state, "io.containerd.runtime.v2.task", "k8s.io", id)
}

// A namespace path may be joined only when it is the init of this
// container's own pod sandbox, which bulkhead enforced under the same
// profile in this root and which still runs as the same process, and
// only when a CRI engine made both bundles.
func TestJoinableIn(t *testing.T) {
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Real processes stand in for the sandboxes' inits, each in namespaces
	// of its own: a record holds only while its pid is still the process
	// that started then. hostly stays in the test's namespaces, as a runsc
	// sandbox's init stays in the host's pid namespace.
	pod, other, audited, lax, reused, plain, gvisor := nsSleeper(t), nsSleeper(t), nsSleeper(t), nsSleeper(t), nsSleeper(t), nsSleeper(t), nsSleeper(t)
	hostly, forged := sleeper(t), nsSleeper(t)
	web := &Pod{UID: "uid-web", Namespace: "default", Name: "web"}
	cri := criState(t, []string{"pod", "other", "audited", "lax", "reused", "plain", "gvisor", "hostly"}, []string{"member"})
	member := criTask(cri, "member")
	callers := t.TempDir()
	for _, rec := range []*Record{
		{ID: "pod", Backend: "runc", Profile: "default", Mode: specs.Enforce, InitPid: pod, InitStart: InitStart(pod), Pod: web},
		{ID: "other", Backend: "runc", Profile: "default", Mode: specs.Enforce, InitPid: other, InitStart: InitStart(other), Pod: &Pod{UID: "uid-other", Namespace: "default", Name: "other"}},
		{ID: "audited", Backend: "runc", Profile: "default", Mode: specs.Audit, InitPid: audited, InitStart: InitStart(audited), Pod: web},
		{ID: "lax", Backend: "runc", Profile: "lax", Mode: specs.Enforce, InitPid: lax, InitStart: InitStart(lax), Pod: web},
		{ID: "reused", Backend: "runc", Profile: "default", Mode: specs.Enforce, InitPid: reused, InitStart: InitStart(reused) - 1, Pod: web},
		{ID: "plain", Backend: "runc", Profile: "default", Mode: specs.Enforce, InitPid: plain, InitStart: InitStart(plain)},
		{ID: "gvisor", Backend: "runsc", Profile: "default", Mode: specs.Enforce, InitPid: gvisor, InitStart: InitStart(gvisor), Pod: web},
		{ID: "hostly", Backend: "runc", Profile: "default", Mode: specs.Enforce, InitPid: hostly, InitStart: InitStart(hostly), Pod: web},
		// A record bulkhead wrote before pods were told by their bundles.
		{ID: "forged", Backend: "runc", Profile: "default", Mode: specs.Enforce, InitPid: forged, InitStart: InitStart(forged), Pod: web, Bundle: callers},
	} {
		if rec.Bundle == "" {
			rec.Bundle = criTask(cri, rec.ID)
		}
		if err := reg.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	def := specs.DefaultProfile()
	cases := []struct {
		name        string
		annotations map[string]string
		kind        rspec.LinuxNamespaceType
		path        string
		want        bool
	}{
		{"a sandbox from a caller's bundle", podAnnotations("forged", "uid-web"), rspec.NetworkNamespace, nsPath(forged, "net"), false},
		{"own pod's net", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, nsPath(pod, "net"), true},
		{"own pod's ipc", podAnnotations("pod", "uid-web"), rspec.IPCNamespace, nsPath(pod, "ipc"), true},
		{"kind and file differ", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, nsPath(pod, "ipc"), false},
		{"the host's", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, "/proc/1/ns/net", false},
		{"another tenant's container, no annotations", nil, rspec.NetworkNamespace, nsPath(pod, "net"), false},
		{"another pod's sandbox named by path", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, nsPath(other, "net"), false},
		{"another pod's sandbox by id, wrong uid", podAnnotations("other", "uid-web"), rspec.NetworkNamespace, nsPath(other, "net"), false},
		{"a container that is no pod sandbox", podAnnotations("plain", ""), rspec.NetworkNamespace, nsPath(plain, "net"), false},
		{"not bulkhead's", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, nsPath(os.Getpid(), "net"), false},
		{"a named netns", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, "/var/run/netns/cni-1", false},
		{"audit mode: no boundary", podAnnotations("audited", "uid-web"), rspec.NetworkNamespace, nsPath(audited, "net"), false},
		{"another profile", podAnnotations("lax", "uid-web"), rspec.NetworkNamespace, nsPath(lax, "net"), false},
		{"the pid now belongs to another process", podAnnotations("reused", "uid-web"), rspec.NetworkNamespace, nsPath(reused, "net"), false},
		{"dot dot", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, fmt.Sprintf("/proc/%d/../1/ns/net", pod), false},
		{"own pod's sandbox on another backend", podAnnotations("gvisor", "uid-web"), rspec.PIDNamespace, nsPath(gvisor, "pid"), false},
		{"own pod's sandbox, in the host's namespaces", podAnnotations("hostly", "uid-web"), rspec.PIDNamespace, nsPath(hostly, "pid"), false},
		{"own pod's pid", podAnnotations("pod", "uid-web"), rspec.PIDNamespace, nsPath(pod, "pid"), true},
		// Paths the kernel resolves otherwise than their text reads: through
		// the sandbox's root, ns/net is a file (or a symlink to any
		// process's namespace) its owner wrote.
		{"through its root", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, fmt.Sprintf("/proc/%d/root/../ns/net", pod), false},
		{"through its cwd", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, fmt.Sprintf("/proc/%d/cwd/../ns/net", pod), false},
		{"dot", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, fmt.Sprintf("/proc/%d/./ns/net", pod), false},
		{"doubled slash", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, fmt.Sprintf("/proc/%d//ns/net", pod), false},
		{"trailing slash", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, nsPath(pod, "net") + "/", false},
		{"leading zero", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, fmt.Sprintf("/proc/0%d/ns/net", pod), false},
		{"plus sign", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, fmt.Sprintf("/proc/+%d/ns/net", pod), false},
		{"relative", podAnnotations("pod", "uid-web"), rspec.NetworkNamespace, fmt.Sprintf("proc/%d/ns/net", pod), false},
	}
	if err := os.MkdirAll(criTask(cri, "forged-member"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got := JoinableIn(reg.PodSandbox(&def, "runc", member, c.annotations))(c.kind, c.path); got != c.want {
			t.Errorf("%s: %s %s: joinable %v, want %v", c.name, c.kind, c.path, got, c.want)
		}
	}
	// The member's own words, in a bundle no CRI engine made: a caller's,
	// or a task a client of containerd made in the CRI's namespace.
	for _, b := range []string{callers, criTask(cri, "forged-member")} {
		if JoinableIn(reg.PodSandbox(&def, "runc", b, podAnnotations("pod", "uid-web")))(rspec.NetworkNamespace, nsPath(pod, "net")) {
			t.Errorf("own pod's net joinable from %s", b)
		}
	}
	sandbox := IsSandbox(reg.PodSandbox(&def, "runc", member, podAnnotations("pod", "uid-web")))
	if !sandbox("pod") || sandbox("other") {
		t.Error("IsSandbox: own pod's sandbox not joinable, or another's joinable")
	}
	if IsSandbox(reg.PodSandbox(&def, "runc", member, podAnnotations("other", "uid-web")))("other") {
		t.Error("IsSandbox: another pod's sandbox joinable by naming its id")
	}
	if !IsSandbox(reg.PodSandbox(&def, "runsc", member, podAnnotations("gvisor", "uid-web")))("gvisor") ||
		IsSandbox(reg.PodSandbox(&def, "runc", member, podAnnotations("gvisor", "uid-web")))("gvisor") {
		t.Error("IsSandbox: a gVisor pod's sandbox not joinable on runsc, or joinable on runc")
	}
	if !KubeletPodOf(reg.PodSandbox(&def, "runc", member, podAnnotations("pod", "uid-web")))("uid-web") ||
		KubeletPodOf(reg.PodSandbox(&def, "runc", callers, podAnnotations("pod", "uid-web")))("uid-web") {
		t.Error("KubeletPodOf: own pod's uid not granted from a CRI bundle, or granted from a caller's")
	}
}

// TestPodOfBundle: a sandbox's pod is recorded only from a CRI engine's
// bundle, and only when the sandbox names itself.
func TestPodOfBundle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: engines' state is root's")
	}
	cri := criState(t, []string{"sb"}, nil)
	a := podAnnotations("sb", "uid-web")
	a[specs.AnnotationCRIContainerType] = "sandbox"
	if got := PodOfBundle("sb", criTask(cri, "sb"), a); got == nil || got.UID != "uid-web" {
		t.Errorf("a CRI sandbox's pod: %v", got)
	}
	if got := PodOfBundle("sb", t.TempDir(), a); got != nil {
		t.Errorf("a caller's bundle's pod recorded: %v", got)
	}
	if got := PodOfBundle("other", criTask(cri, "sb"), a); got != nil {
		t.Errorf("a sandbox naming another's id recorded: %v", got)
	}
}

// nsSleeper is sleeper in network, ipc, uts and pid namespaces of its own,
// as a pod sandbox's init is.
func nsSleeper(t *testing.T) int {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the sandboxes' inits get namespaces of their own")
	}
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func nsPath(pid int, kind string) string { return fmt.Sprintf("/proc/%d/ns/%s", pid, kind) }

// sleeper starts a process that lives as long as the test.
func sleeper(t *testing.T) int {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// TestPodCgroupParentOf: the pod's group is the one above its sandbox's
// cgroup, also when the sandbox was made under the systemd driver and
// recorded slice:prefix:name: its group is then the scope's, and the pod's
// slice is above it. Without that every container of a pod on a systemd
// host would be refused as joining another pod's limits.
func TestPodCgroupParentOf(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: engines' state is root's")
	}
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	def := specs.DefaultProfile()
	cri := criState(t, []string{"cgroupfs", "systemd", "malformed", "none"}, []string{"member"})
	for _, c := range []struct{ id, cgroupsPath, want string }{
		{"cgroupfs", "/kubepods/burstable/pod1/sandbox", "/kubepods/burstable/pod1"},
		{"systemd", "kubepods-burstable-pod1.slice:cri-containerd:sandbox", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice"},
		{"malformed", "kubepods--pod1.slice:cri-containerd:sandbox", ""},
		{"none", "", ""},
	} {
		pid := sleeper(t)
		pod := &Pod{UID: "uid-" + c.id, Namespace: "default", Name: "web"}
		if err := reg.Add(&Record{ID: c.id, Backend: "runc", Profile: "default", Mode: specs.Enforce, InitPid: pid, InitStart: InitStart(pid),
			Pod: pod, CgroupsPath: c.cgroupsPath, Bundle: criTask(cri, c.id)}); err != nil {
			t.Fatal(err)
		}
		if got := PodCgroupParentOf(reg.PodSandbox(&def, "runc", criTask(cri, "member"), podAnnotations(c.id, "uid-"+c.id)))(); got != c.want {
			t.Errorf("%s: %q: pod group %q, want %q", c.id, c.cgroupsPath, got, c.want)
		}
	}
}
