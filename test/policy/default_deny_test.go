package policy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// ddScript is what a default-deny container runs when it is not refused:
// what an attacker would look at next.
const ddScript = `
echo "== status"; grep -E '^(Uid|Gid|Groups|NoNewPrivs|Seccomp|CapEff):' /proc/self/status
echo "== limits"; ulimit -r
echo "== env"; env
echo "== mounts"; cat /proc/mounts
echo "== sub"; (echo x > /work/sub/pwned) 2>&1; ls /work/sub 2>&1
echo "== scratch"; (cp /bin/busybox /scratch/bb && /scratch/bb true && echo exec-ran) 2>&1
echo "== end"
`

// hostVictim is a process outside any container, in a cgroup of its own,
// that a hostile cgroupsPath or a hostile kill --all would reach.
type hostVictim struct {
	pid    int
	cgroup string
}

func startVictim(t *testing.T) *hostVictim {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	v := &hostVictim{pid: cmd.Process.Pid, cgroup: fmt.Sprintf("/bh-victim-%d", cmd.Process.Pid)}
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		m, err := cgroup2.NewManager("/sys/fs/cgroup", v.cgroup, &cgroup2.Resources{})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.AddProc(uint64(v.pid)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = m.Delete() })
		return v
	}
	c, err := cgroup1.New(cgroup1.StaticPath(v.cgroup), &rspec.LinuxResources{},
		cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) {
			return []cgroup1.Subsystem{cgroup1.NewPids("/sys/fs/cgroup"), cgroup1.NewMemory("/sys/fs/cgroup")}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddProc(uint64(v.pid)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = c.Delete() })
	return v
}

func (v *hostVictim) alive() bool { return syscall.Kill(v.pid, 0) == nil }

// TestDefaultDeny hands bulkhead, on runc and on runsc, the bundles with
// which the boundary was broken before every field was classified. Each is
// refused naming its rule, with nothing of it run or left on the host, or
// runs with the control holding as seen from inside.
func TestDefaultDeny(t *testing.T) {
	for _, backend := range []struct{ name, entry string }{{"runc", "bulkhead"}, {"runsc", "bulkhead-runsc"}} {
		t.Run(backend.name, func(t *testing.T) {
			binaries.NeedRoot(t, backend.name)
			testDefaultDeny(t, backend.entry)
		})
	}
}

func testDefaultDeny(t *testing.T, entry string) {
	marker := filepath.Join(t.TempDir(), "hook-ran")
	victim := startVictim(t)
	hostDir := t.TempDir()                     // a host directory outside any bundle
	sockDir, err := os.MkdirTemp("", "bh-dd-") // short: sun_path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	ln, err := net.Listen("unix", filepath.Join(sockDir, "svc.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	_ = os.Chmod(filepath.Join(sockDir, "svc.sock"), 0o777)
	// A FIFO a host process may read: a read-only mount does not stop a
	// write to it.
	fifoDir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "pipe"), 0o666); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Join(fifoDir, "pipe"), 0o666)
	otherPod := "/var/lib/kubelet/pods/bh-other-" + fmt.Sprint(os.Getpid()) + "/volumes/kubernetes.io~secret/token"
	if err := os.MkdirAll(otherPod, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(filepath.Dir(filepath.Dir(otherPod)))) })

	// A tree with a writable submount: a read-only rbind used to leave it writable.
	tree := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tree, "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", filepath.Join(tree, "sub"), "tmpfs", 0, "mode=1777,size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(filepath.Join(tree, "sub"), syscall.MNT_DETACH) })

	hook := rspec.Hook{Path: "/bin/sh", Args: []string{"sh", "-c", "touch " + marker}}
	tests := []struct {
		name   string
		mutate func(*rspec.Spec)
		refuse string
		check  func(t *testing.T, s map[string]string)
	}{
		{name: "createRuntime hook", refuse: "hooks", mutate: func(s *rspec.Spec) { s.Hooks = &rspec.Hooks{CreateRuntime: []rspec.Hook{hook}} }},
		{name: "poststop hook", refuse: "hooks", mutate: func(s *rspec.Spec) { s.Hooks = &rspec.Hooks{Poststop: []rspec.Hook{hook}} }},
		{name: "root.path on a host directory", refuse: "root", mutate: func(s *rspec.Spec) { s.Root.Path = hostDir }},
		{name: "root.path on host /", refuse: "root", mutate: func(s *rspec.Spec) { s.Root.Path = "/" }},
		{name: "gid 42 and /etc/shadow", refuse: "host_mounts", mutate: func(s *rspec.Spec) {
			s.Process.User.AdditionalGids = []uint32{42}
			s.Mounts = append(s.Mounts, bind("/etc/shadow", "/shadow", "ro"))
		}},
		{name: "supplementary gid 42 and uid 1000", mutate: func(s *rspec.Spec) {
			s.Process.User = rspec.User{UID: 1000, GID: 42, AdditionalGids: []uint32{42, 0, 999}}
		}, check: func(t *testing.T, s map[string]string) {
			if g := statusField(s["status"], "Groups"); g != "" {
				t.Errorf("supplementary groups kept: %q", g)
			}
			if u := statusField(s["status"], "Uid"); !strings.HasPrefix(u, "65534") {
				t.Errorf("uid %q, want 65534", u)
			}
		}},
		{name: "directory holding a socket", refuse: "host_mounts", mutate: func(s *rspec.Spec) {
			s.Process.User.UID = 1000
			s.Mounts = append(s.Mounts, bind(sockDir, "/svc", "ro"))
		}},
		{name: "directory holding a FIFO", refuse: "host_mounts", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, bind(fifoDir, "/pipes", "ro"))
		}},
		{name: "another pod's volume", refuse: "host_mounts", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, bind(otherPod, "/token", "ro"))
		}},
		{name: "read-only rbind of a tree with a writable submount", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, bind(tree, "/work", "ro"))
		}, check: func(t *testing.T, s map[string]string) {
			if !strings.Contains(s["sub"], "can't create") {
				t.Errorf("a submount of the bind was writable:\n%s", s["sub"])
			}
			if _, err := os.Stat(filepath.Join(tree, "sub", "pwned")); err == nil {
				t.Error("the host's submount was written")
			}
		}},
		{name: "cgroupsPath of a host process", refuse: "cgroups_path", mutate: func(s *rspec.Spec) { s.Linux.CgroupsPath = victim.cgroup }},
		{name: "cgroupsPath below a host process's", refuse: "cgroups_path", mutate: func(s *rspec.Spec) { s.Linux.CgroupsPath = victim.cgroup + "/evil" }},
		{name: "systemd-form cgroupsPath under the cgroupfs driver", refuse: "cgroups_path", mutate: func(s *rspec.Spec) {
			s.Linux.CgroupsPath = victim.cgroup + "/x.slice:evil:shared"
		}},
		{name: "cgroupsPath bulkhead will choose for another container", refuse: "cgroups_path", mutate: func(s *rspec.Spec) {
			s.Linux.CgroupsPath = runtime.DefaultCgroupsPath("/run/other-tenant", "victim")
		}},
		{name: "tmpfs elsewhere, exec and 1g", refuse: "mounts", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/scratch", Type: "tmpfs", Source: "tmpfs", Options: []string{"exec", "size=1g"}})
		}},
		{name: "tmpfs elsewhere, exec", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/scratch", Type: "tmpfs", Source: "tmpfs", Options: []string{"exec", "size=8m", "mode=1777"}})
		}, check: func(t *testing.T, s map[string]string) {
			if strings.Contains(s["scratch"], "exec-ran") {
				t.Errorf("a program ran from the caller's tmpfs:\n%s", s["scratch"])
			}
		}},
		{name: "second proc elsewhere", refuse: "mounts", mutate: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/hostproc", Type: "proc", Source: "proc"})
		}},
		{name: "user namespace", refuse: "namespaces", mutate: func(s *rspec.Spec) {
			s.Linux.Namespaces = append(s.Linux.Namespaces, rspec.LinuxNamespace{Type: rspec.UserNamespace})
			s.Linux.UIDMappings = []rspec.LinuxIDMapping{{ContainerID: 0, HostID: 0, Size: 1}}
			s.Linux.GIDMappings = []rspec.LinuxIDMapping{{ContainerID: 0, HostID: 0, Size: 1}}
		}},
		{name: "gVisor annotation joining a sandbox", refuse: "annotations", mutate: func(s *rspec.Spec) {
			s.Annotations = map[string]string{"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.sandbox-id": "another-tenant"}
		}},
		{name: "gVisor mount hint", refuse: "annotations", mutate: func(s *rspec.Spec) {
			s.Annotations = map[string]string{"dev.gvisor.spec.mount.data.share": "container"}
		}},
		{name: "secrets by name and value", mutate: func(s *rspec.Spec) {
			s.Process.Env = append(s.Process.Env, "DB_PASS=hunter22", "MYSQL_PWD=hunter23", "REDIS_URL=redis://:hunter24@cache:6379",
				"PAY=sk_live_51HabcdefghijKLMNOPqrstu", "HARMLESS=1")
		}, check: func(t *testing.T, s map[string]string) {
			for _, v := range []string{"hunter22", "hunter23", "hunter24", "sk_live_"} {
				if strings.Contains(s["env"], v) {
					t.Errorf("secret %s reached the environment", v)
				}
			}
			if !strings.Contains(s["env"], "HARMLESS=1") {
				t.Error("an ordinary variable was dropped")
			}
		}},
		{name: "realtime scheduler", refuse: "scheduling", mutate: func(s *rspec.Spec) {
			s.Process.Scheduler = &rspec.Scheduler{Policy: rspec.SchedFIFO, Priority: 99}
		}},
		{name: "realtime I/O class", refuse: "scheduling", mutate: func(s *rspec.Spec) {
			s.Process.IOPriority = &rspec.LinuxIOPriority{Class: rspec.IOPRIO_CLASS_RT}
		}},
		{name: "RTPRIO rlimit", mutate: func(s *rspec.Spec) {
			s.Process.Rlimits = append(s.Process.Rlimits, rspec.POSIXRlimit{Type: "RLIMIT_RTPRIO", Soft: 99, Hard: 99})
		}, check: func(t *testing.T, s map[string]string) {
			if v := strings.TrimSpace(s["limits"]); v != "0" {
				t.Errorf("RLIMIT_RTPRIO: %q, want 0", v)
			}
		}},
		// gVisor applied the soft limit and let the hard one, which the
		// rules judged, go unenforced: 5000 threads under a limit of 64.
		{name: "NPROC soft above hard", refuse: "rlimits", mutate: func(s *rspec.Spec) {
			s.Process.Rlimits = append(s.Process.Rlimits, rspec.POSIXRlimit{Type: "RLIMIT_NPROC", Soft: 100000, Hard: 10})
		}},
		{name: "netDevices", refuse: "spec_fields", mutate: func(s *rspec.Spec) {
			s.Linux.NetDevices = map[string]rspec.LinuxNetDevice{"lo": {Name: "hostlo"}}
		}},
		{name: "unified cgroup files", refuse: "spec_fields", mutate: func(s *rspec.Spec) {
			s.Linux.Resources.Unified = map[string]string{"pids.max": "max"}
		}},
		{name: "idmapped bind", refuse: "spec_fields", mutate: func(s *rspec.Spec) {
			m := bind(hostDir, "/data", "ro")
			m.UIDMappings = []rspec.LinuxIDMapping{{ContainerID: 65534, HostID: 0, Size: 1}}
			m.GIDMappings = m.UIDMappings
			s.Mounts = append(s.Mounts, m)
		}},
		{name: "AppArmor unconfined", refuse: "security_labels", mutate: func(s *rspec.Spec) { s.Process.ApparmorProfile = "unconfined" }},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := hostileBundle(t, ddScript, tc.mutate)
			root := filepath.Join(dir, "state")
			logFile := filepath.Join(dir, "log.json")
			id := fmt.Sprintf("dd-%d-%d", os.Getpid(), i)
			out := binaries.Cmd{}.Run(t, filepath.Join(binaries.Dir(t), entry),
				"--root", root, "--log", logFile, "--log-format", "json", "run", "--bundle", dir, id)
			r := result{out.Stdout, out.Stderr, out.Code}
			defer assertNothingLeft(t, root, id, marker, victim)
			if tc.refuse != "" {
				assertRefused(t, r, logFile, tc.refuse)
				return
			}
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			s := sections(r.stdout)
			if _, ok := s["end"]; !ok {
				t.Fatalf("the script did not finish:\n%s\nstderr: %s", r.stdout, r.stderr)
			}
			tc.check(t, s)
		})
	}
}

// assertNothingLeft: no hook ran on the host, the host process and its
// cgroup are as they were, and bulkhead left no cgroup or state.
func assertNothingLeft(t *testing.T, root, id, marker string, v *hostVictim) {
	t.Helper()
	if _, err := os.Stat(marker); err == nil {
		t.Error("a hook ran on the host")
		os.Remove(marker)
	}
	if !v.alive() {
		t.Fatal("the host process outside the container was killed")
	}
	g, err := cgroups.Load(v.cgroup)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := g.Limits()
	if err != nil {
		t.Fatal(err)
	}
	if lim.PidsMax >= 0 || lim.MemoryMax >= 0 {
		t.Errorf("the host process's cgroup got limits: pids %d memory %d", lim.PidsMax, lim.MemoryMax)
	}
	if p := runtime.DefaultCgroupsPath(root, id); cgroups.Exists(p) {
		t.Errorf("cgroup %s left behind", p)
	}
	if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); err == nil {
		t.Errorf("state of %s left behind", id)
	}
}

// TestNoJoiningAnotherTenant: a running container of another tenant, under
// the same root and profile, is no pod sandbox of the attacker's, not even
// one a CRI engine made: naming its namespaces (runc) or its id as the CRI
// sandbox (runsc, which would put the attacker into the victim's gVisor
// sandbox) is refused, also when the attacker's spec claims the victim's
// pod uid, name and namespace, which are no secret. Pod annotations count
// only in a bundle a CRI engine made; the same words there join the pod.
func TestNoJoiningAnotherTenant(t *testing.T) {
	for _, backend := range []struct{ name, entry string }{{"runc", "bulkhead"}, {"runsc", "bulkhead-runsc"}} {
		t.Run(backend.name, func(t *testing.T) {
			binaries.NeedRoot(t, backend.name)
			bin := filepath.Join(binaries.Dir(t), backend.entry)
			root := filepath.Join(t.TempDir(), "state")
			victim := fmt.Sprintf("victim-%s-%d", backend.name, os.Getpid())
			pod := map[string]string{"io.kubernetes.cri.sandbox-id": victim, "io.kubernetes.cri.sandbox-uid": "uid-" + victim,
				"io.kubernetes.cri.sandbox-namespace": "default", "io.kubernetes.cri.sandbox-name": "web"}
			claim := func(kind string) map[string]string {
				a := map[string]string{"io.kubernetes.cri.container-type": kind}
				maps.Copy(a, pod)
				return a
			}
			vb := bundle.NewCRI(t, "sandbox", victim, []string{"sleep", "600"}, func(s *rspec.Spec) { s.Annotations = claim("sandbox") })
			for _, verb := range [][]string{{"create", "--bundle", vb, victim}, {"start", victim}} {
				if r := (binaries.Cmd{}).Run(t, bin, append([]string{"--root", root}, verb...)...); r.Code != 0 {
					t.Fatalf("%v: exit %d: %s", verb, r.Code, r.Stderr)
				}
			}
			t.Cleanup(func() { binaries.Cmd{}.Run(t, bin, "--root", root, "delete", "--force", victim) })
			st := (binaries.Cmd{}).Run(t, bin, "--root", root, "state", victim)
			var state struct {
				Pid int `json:"pid"`
			}
			if err := json.Unmarshal([]byte(st.Stdout), &state); err != nil || state.Pid <= 1 {
				t.Fatalf("state: %v %q", err, st.Stdout)
			}
			attacks := map[string]func(*rspec.Spec){
				"namespaces": func(s *rspec.Spec) {
					for i, ns := range s.Linux.Namespaces {
						if ns.Type != rspec.MountNamespace {
							s.Linux.Namespaces[i].Path = fmt.Sprintf("/proc/%d/ns/%s", state.Pid, nsFile(ns.Type))
						}
					}
					s.Hostname = "" // a member writes no joined namespace
					s.Annotations = claim("container")
				},
				"annotations": func(s *rspec.Spec) { s.Annotations = claim("container") },
			}
			for rule, mutate := range attacks {
				b := bundle.New(t, []string{"cat", "/proc/1/cmdline"}, mutate)
				r := binaries.Cmd{}.Run(t, bin, "--root", root, "run", "--bundle", b, fmt.Sprintf("attacker-%s-%d", rule, os.Getpid()))
				if r.Code == 0 || !strings.Contains(r.Stderr, "rule "+rule) {
					t.Errorf("joining the victim through %s: exit %d, stdout %q, stderr %q; want refused by rule %s", rule, r.Code, r.Stdout, r.Stderr, rule)
				}
			}
			// A CRI engine's bundle path, read in a mount namespace of the
			// attacker's, where its own config.json covers the engine's:
			// /proc/<pid>/root/<path> leads the kernel there, while its text
			// reads as the host's path.
			pending := bundle.NewCRI(t, "container", fmt.Sprintf("pending-%s-%d", backend.name, os.Getpid()), []string{"true"})
			theirs := bundle.New(t, []string{"cat", "/proc/1/cmdline"}, attacks["annotations"], func(s *rspec.Spec) {
				s.Root.Path = filepath.Join(pending, "rootfs")
			})
			cover := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
				`mount --bind "$1" "$2" && echo ready && exec sleep 600`, "sh", theirs, pending)
			out, err := cover.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cover.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cover.Process.Kill(); _ = cover.Wait() })
			if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("the attacker's mount namespace: %q %v", line, err)
			}
			through := fmt.Sprintf("/proc/%d/root%s", cover.Process.Pid, pending)
			r := binaries.Cmd{}.Run(t, bin, "--root", root, "run", "--bundle", through, fmt.Sprintf("attacker-mountns-%d", os.Getpid()))
			if r.Code == 0 || !strings.Contains(r.Stderr, "link of /proc") {
				t.Errorf("joining the victim from a CRI bundle's path in another mount namespace: exit %d, stdout %q, stderr %q; want refused for the link of /proc", r.Code, r.Stdout, r.Stderr)
			}
			// A CRI task's layout in an image's layer, as a snapshotter
			// unpacked it: root's throughout, laid out by whoever made the
			// image.
			layer := filepath.Join(t.TempDir(), "io.containerd.snapshotter.v1.overlayfs")
			lid := fmt.Sprintf("attacker-layer-%d", os.Getpid())
			if err := os.MkdirAll(filepath.Join(layer, "snapshots/1/fs/x/io.containerd.grpc.v1.cri/containers", lid), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(layer, "metadata.db"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			inLayer := filepath.Join(layer, "snapshots/1/fs/x/io.containerd.runtime.v2.task/k8s.io", lid)
			if err := bundle.Make(inLayer, []string{"cat", "/proc/1/cmdline"}, attacks["annotations"]); err != nil {
				t.Fatal(err)
			}
			if r := (binaries.Cmd{}).Run(t, bin, "--root", root, "run", "--bundle", inLayer, lid); r.Code == 0 || !strings.Contains(r.Stderr, "rule annotations") {
				t.Errorf("joining the victim from a CRI layout in an image's layer: exit %d, stdout %q, stderr %q; want refused by rule annotations", r.Code, r.Stdout, r.Stderr)
			}
			// The claim is the pod's own in a CRI engine's bundle: what the
			// attacker wrote is all that kept it out.
			id := fmt.Sprintf("member-%s-%d", backend.name, os.Getpid())
			b := bundle.NewCRI(t, "container", id, []string{"true"}, attacks["annotations"])
			if r := (binaries.Cmd{}).Run(t, bin, "--root", root, "run", "--bundle", b, id); r.Code != 0 {
				t.Errorf("the pod's own member, from a CRI engine's bundle: exit %d: %s", r.Code, r.Stderr)
			}
		})
	}
}

func nsFile(t rspec.LinuxNamespaceType) string {
	switch t {
	case rspec.NetworkNamespace:
		return "net"
	case rspec.MountNamespace:
		return "mnt"
	}
	return string(t)
}

// TestBindOfAHostTreeUnderAnAllowedName: a directory below a bind root
// that is really a bind mount of the host's /etc (what a Docker local
// volume with o=bind,device=/etc is) is judged as /etc.
func TestBindOfAHostTreeUnderAnAllowedName(t *testing.T) {
	binaries.NeedRoot(t, "runc")
	volume := filepath.Join(t.TempDir(), "volumes", "etc", "_data")
	if err := os.MkdirAll(volume, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("/etc", volume, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(volume, syscall.MNT_DETACH) })
	dir := t.TempDir()
	if err := bundle.Make(dir, []string{"cat", "/data/shadow"}, func(s *rspec.Spec) {
		s.Mounts = append(s.Mounts, bind(volume, "/data", "ro"))
	}); err != nil {
		t.Fatal(err)
	}
	r := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--root", filepath.Join(dir, "state"), "run", "--bundle", dir,
		fmt.Sprintf("etcvol-%d", os.Getpid()))
	if r.Code == 0 || !strings.Contains(r.Stderr, "rule host_mounts") || !strings.Contains(r.Stderr, "/etc") {
		t.Fatalf("a bind of the host's /etc under %s: exit %d, stderr %q; want refused by host_mounts naming /etc", volume, r.Code, r.Stderr)
	}
}

// TestBundleChangedAfterCheck: the bundle is the caller's, and it can change
// between bulkhead's check and the backend's create. A backend wrapper
// makes that race win every time: just before the real backend runs, it
// renames a config.json with a host hook and a bind of host / over the
// rewritten one, and re-points a bind source's symlink from an allowed
// directory to /etc. The backend must run what bulkhead judged: no hook on
// the host, no /etc in the container.
func TestBundleChangedAfterCheck(t *testing.T) {
	for _, be := range []struct{ name, profile, args string }{{"runc", "default", "[]"}, {"runsc", "gvisor", `["--platform=ptrace"]`}} {
		t.Run(be.name, func(t *testing.T) {
			binaries.NeedRoot(t, be.name)
			real, err := exec.LookPath(be.name)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			b := filepath.Join(dir, "bundle")
			okdir := filepath.Join(dir, "okdir")
			marker := filepath.Join(dir, "hook-ran")
			if err := os.MkdirAll(okdir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(okdir, "ok"), []byte("allowed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := bundle.Make(b, []string{"sh", "-c", "ls /data; ls /host 2>&1; true"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: "src", Options: []string{"bind", "ro"}})
			}); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(okdir, filepath.Join(b, "src")); err != nil {
				t.Fatal(err)
			}
			evil, err := bundle.Read(b)
			if err != nil {
				t.Fatal(err)
			}
			evil.Hooks = &rspec.Hooks{CreateRuntime: []rspec.Hook{{Path: "/bin/sh", Args: []string{"sh", "-c", "id > " + marker}}}}
			evil.Mounts = append(evil.Mounts, rspec.Mount{Destination: "/host", Type: "bind", Source: "/", Options: []string{"rbind", "rw"}})
			evilDir := filepath.Join(dir, "evil")
			if err := os.MkdirAll(evilDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := bundle.Write(evilDir, evil); err != nil {
				t.Fatal(err)
			}
			wrapper := filepath.Join(dir, "backend")
			script := fmt.Sprintf(`#!/bin/sh
case " $* " in *" create "*)
	cp %[1]q %[2]q.swap && mv %[2]q.swap %[2]q
	ln -sfn /etc %[3]q.new && mv -T %[3]q.new %[3]q ;;
esac
exec %[4]q "$@"
`, filepath.Join(evilDir, "config.json"), filepath.Join(b, "config.json"), filepath.Join(b, "src"), real)
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			config := filepath.Join(dir, "config.toml")
			toml := fmt.Sprintf("default_profile = %q\naudit_log = %q\n[backends.%s]\npath = %q\nargs = %s\n",
				be.profile, filepath.Join(dir, "audit.jsonl"), be.name, wrapper, be.args)
			if err := os.WriteFile(config, []byte(toml), 0o644); err != nil {
				t.Fatal(err)
			}
			out := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--config", config, "--root", filepath.Join(dir, "state"),
				"run", "--bundle", b, fmt.Sprintf("swap-%s-%d", be.name, os.Getpid()))
			if _, err := os.Stat(marker); err == nil {
				t.Error("the swapped-in hook ran on the host")
			}
			if strings.Contains(out.Stdout, "passwd") || strings.Contains(out.Stdout, "hostname") {
				t.Errorf("the container saw the host's /etc or /:\n%s", out.Stdout)
			}
			if out.Code != 0 || !strings.Contains(out.Stdout, "ok") {
				t.Errorf("the container should run what was judged (exit %d):\nstdout: %s\nstderr: %s", out.Code, out.Stdout, out.Stderr)
			}
		})
	}
}
