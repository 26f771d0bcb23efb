package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// A pod member joins its sandbox's namespaces by the path
// /proc/<sandbox init>/ns/<kind> and no other: the kernel resolves
// /proc/<pid>/root/../ns/net inside the sandbox's root, where its owner
// may have left a symlink to any process's namespace, while the path's
// text reads as the sandbox's own. And no member joins a mount namespace
// at all: runc would set up the member's root and pivot into it there.
func TestPodMemberJoinsOnlyTheSandboxsOwnNamespaces(t *testing.T) {
	needRoot(t, "runc")
	// A host service in namespaces of its own, as systemd's PrivateTmp and
	// PrivateNetwork give one.
	victim := exec.Command("sleep", "600")
	victim.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	rootBefore, err := os.Readlink(fmt.Sprintf("/proc/%d/root", victim.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}

	g := []string{"--root", stateRoot(t), "--backend", "runc"}
	sid := uniqueID("nspath-pod")
	p := &pod{g: g, sid: sid, annotations: map[string]string{
		"io.kubernetes.cri.sandbox-id":        sid,
		"io.kubernetes.cri.sandbox-uid":       "uid-" + sid,
		"io.kubernetes.cri.sandbox-namespace": "ns1",
		"io.kubernetes.cri.sandbox-name":      "nspath",
	}}
	sb := p.bundle(t, sid, "sandbox", []string{"sleep", "600"})
	trap := filepath.Join(sb, "rootfs", "ns")
	if err := os.MkdirAll(trap, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"net", "mnt"} {
		if err := os.Symlink(fmt.Sprintf("/proc/%d/ns/%s", victim.Process.Pid, kind), filepath.Join(trap, kind)); err != nil {
			t.Fatal(err)
		}
	}
	must(t, append(g, "create", "--bundle", sb, sid)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", sid)...) })
	must(t, append(g, "start", sid)...)
	p.sandboxPid = containerState(t, g, sid).Pid

	join := func(kind rspec.LinuxNamespaceType, path string) func(*rspec.Spec) {
		return func(s *rspec.Spec) {
			for i, ns := range s.Linux.Namespaces {
				if ns.Type == kind {
					s.Linux.Namespaces[i].Path = path
					return
				}
			}
			s.Linux.Namespaces = append(s.Linux.Namespaces, rspec.LinuxNamespace{Type: kind, Path: path})
		}
	}
	victimNs := func(kind string) string {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", victim.Process.Pid, kind))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, c := range []struct {
		name string
		kind rspec.LinuxNamespaceType
		file string
		path string
	}{
		// The network rule gives a container a new namespace of its own
		// instead of one it may not join; the others refuse.
		{"network, through the sandbox's root", rspec.NetworkNamespace, "net", fmt.Sprintf("/proc/%d/root/../ns/net", p.sandboxPid)},
		{"mount, through the sandbox's root", rspec.MountNamespace, "mnt", fmt.Sprintf("/proc/%d/root/../ns/mnt", p.sandboxPid)},
		{"mount, the sandbox's own", rspec.MountNamespace, "mnt", fmt.Sprintf("/proc/%d/ns/mnt", p.sandboxPid)},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := uniqueID("nspath")
			member := p.bundle(t, id, "container", []string{"sleep", "600"}, join(c.kind, c.path))
			r := bulkhead(t, "", append(g, "create", "--bundle", member, id)...)
			if r.code == 0 {
				defer bulkhead(t, "", append(g, "delete", "--force", id)...)
				pid := containerState(t, g, id).Pid
				got, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, c.file))
				if err != nil {
					t.Fatal(err)
				}
				if got == victimNs(c.file) {
					t.Fatalf("a pod member joined the host service's %s namespace through %s", c.kind, c.path)
				}
				if c.kind != rspec.NetworkNamespace {
					t.Fatalf("a pod member was created with %s namespace path %s", c.kind, c.path)
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if !strings.Contains(lines[len(lines)-1], "linux.namespaces["+string(c.kind)+"]") {
				t.Fatalf("refused, but not by the namespaces rule naming the field:\n%s", r.stderr)
			}
		})
	}
	rootAfter, err := os.Readlink(fmt.Sprintf("/proc/%d/root", victim.Process.Pid))
	if err != nil || rootAfter != rootBefore {
		t.Errorf("the host service's root is now %q (%v), was %q", rootAfter, err, rootBefore)
	}

	// A member may join the sandbox's namespaces but not write them: the
	// backend resolves the path by pid only when it joins, and sets the
	// hostname and sysctls there before bulkhead can verify whose
	// namespace it was. CRI sets them on the sandbox alone.
	hostnameBefore := sandboxHostname(t, p.sandboxPid)
	for _, c := range []struct {
		name, field string
		mutate      func(*rspec.Spec)
	}{
		{"hostname", "hostname", func(s *rspec.Spec) { s.Hostname = "written-by-member" }},
		{"sysctl", "linux.sysctl[net.ipv4.ip_unprivileged_port_start]", func(s *rspec.Spec) {
			s.Linux.Sysctl = map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"}
		}},
	} {
		t.Run("a joined namespace's "+c.name, func(t *testing.T) {
			id := uniqueID("nspath-write")
			member := p.bundle(t, id, "container", []string{"sleep", "600"},
				join(rspec.NetworkNamespace, fmt.Sprintf("/proc/%d/ns/net", p.sandboxPid)),
				join(rspec.UTSNamespace, fmt.Sprintf("/proc/%d/ns/uts", p.sandboxPid)), c.mutate)
			r := bulkhead(t, "", append(g, "create", "--bundle", member, id)...)
			if r.code == 0 {
				bulkhead(t, "", append(g, "delete", "--force", id)...)
				t.Fatalf("a pod member wrote %s into its sandbox's namespace", c.field)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if !strings.Contains(lines[len(lines)-1], c.field) {
				t.Fatalf("refused, but not naming %s:\n%s", c.field, r.stderr)
			}
		})
	}
	if got := sandboxHostname(t, p.sandboxPid); got != hostnameBefore {
		t.Errorf("the sandbox's hostname is now %q, was %q", got, hostnameBefore)
	}

	// The sandbox's own network namespace, by its exact path, is the pod's.
	id := uniqueID("nspath-ok")
	member := p.bundle(t, id, "container", []string{"sleep", "600"},
		join(rspec.NetworkNamespace, fmt.Sprintf("/proc/%d/ns/net", p.sandboxPid)))
	must(t, append(g, "create", "--bundle", member, id)...)
	bulkhead(t, "", append(g, "delete", "--force", id)...)
}

// sandboxHostname is the hostname of pid's uts namespace.
func sandboxHostname(t *testing.T, pid int) string {
	t.Helper()
	out, err := exec.Command("nsenter", "-t", fmt.Sprint(pid), "-u", "hostname").Output()
	if err != nil {
		t.Fatalf("hostname of %d: %v", pid, err)
	}
	return strings.TrimSpace(string(out))
}
