package specs

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleHostMountsRefused(t *testing.T) {
	dir := t.TempDir()
	// Links whose names say nothing; their targets are what counts.
	mustSymlink(t, "/var/run/docker.sock", filepath.Join(dir, "innocent"))
	mustSymlink(t, "/run/containerd/containerd.sock", filepath.Join(dir, "data"))
	mustSymlink(t, "/proc/1/root", filepath.Join(dir, "pid1"))
	creds := filepath.Join(dir, "home/alice/.ssh")
	if err := os.MkdirAll(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, creds, filepath.Join(dir, "keys"))
	sock := filepath.Join(dir, "svc.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	sources := []string{
		"/var/run/docker.sock", "/run/docker.sock", "/var/run/docker", "/run/docker", "/var/lib/docker",
		"/var/lib/docker/overlay2", "/var/lib/docker/containers", "/var/lib/docker/containers/abc123",
		"/var/lib/docker/containers/abc123/config.v2.json",
		"/run/containerd/containerd.sock", "/run/containerd", "/var/lib/containerd",
		"/var/lib/containerd/io.containerd.content.v1.content",
		"/var/run/crio/crio.sock", "/var/run/crio", "/run/podman/podman.sock", "/run/podman",
		"/run/user/1000/podman/podman.sock", "/run/buildkit/buildkitd.sock", "/srv/x/docker.sock",
		"/tmp/ssh-XXXXabcd/agent.1234", "/tmp/ssh-XXXXabcd", "/tmp",
		"/tmp/systemd-private-0123abcd-nginx.service-AbCdEf/tmp", "/var/tmp/systemd-private-0123abcd-app.service-x/tmp/uploads",
		"/home/bob/.npmrc", "/home/bob/.m2/settings.xml",
		"/root", "/home", "/home/alice", "/home/alice/.ssh", "/home/alice/.ssh/id_ed25519", "/root/.aws",
		"/home/bob/.kube/config", "/home/bob/.config/gcloud", "/home/bob/.config", "/home/bob/.gnupg",
		"/home/bob/.docker/config.json", "/home/bob/.azure", "/home/bob/.netrc", "/srv/build/.ssh",
		"/", "/proc", "/proc/1/root", "/sys", "/sys/fs/cgroup", "/dev", "/dev/mem", "/dev/sda",
		"/var", "/var/lib", "/var/run", "/run", "/etc/kubernetes/admin.conf", "/var/lib/kubelet/pki",
		"/var/lib/kubelet/pods", "/home/alice/../../var/run/docker.sock",
		// Below no bind root, or another container's, sandbox's or pod's own files.
		"/etc/ssl/certs", "/etc/shadow", "/usr/lib", "/var/lib/postgresql",
		"/var/lib/docker/containers/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/hosts",
		"/run/containerd/io.containerd.grpc.v1.cri/sandboxes/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/shm",
		"/var/lib/kubelet/pods/00000000-other-pod/volumes/kubernetes.io~secret/token",
		// A Docker local volume that is a bind of the host's /etc, and one
		// whose options mounted an overlay (any lowerdir) there.
		"/var/lib/docker/volumes/etc-volume/_data",
		"/var/lib/docker/volumes/overlay-volume/_data", "/var/lib/docker/volumes/overlay-volume/_data/passwd",
		// A volume bound to that volume's data, and one bound to another
		// container's /dev/shm.
		"/var/lib/docker/volumes/via-overlay-volume/_data", "/var/lib/docker/volumes/other-shm/_data",
		// A directory holding a socket (the test host's: names ending in .sock).
		"/srv/run/app.sock",
		filepath.Join(dir, "innocent"), filepath.Join(dir, "data"), filepath.Join(dir, "pid1"),
		filepath.Join(dir, "keys"), sock,
	}
	for _, src := range sources {
		t.Run(src, func(t *testing.T) {
			s := hostileSpec()
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/mnt", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
			ds := ruleHostMounts(testContext(), s)
			wantDecision(t, ds, "mounts[/mnt]", Refused)
		})
	}
}

func TestRuleHostMountsReadOnly(t *testing.T) {
	sources := []string{
		"/var/lib/docker/containers/" + testID + "/hosts",
		"/var/lib/docker/containers/" + testID + "/resolv.conf",
		"/var/lib/docker/containers/" + testID + "/hostname",
		"/var/lib/docker/containers/" + testID + "/mounts/shm",
		"/var/lib/docker/volumes/cache/_data",
		"/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/" + testSandboxID + "/hosts",
		"/run/containerd/io.containerd.grpc.v1.cri/sandboxes/" + testSandboxID + "/shm",
		"/var/lib/kubelet/pods/7f3c0d9e-1111-2222-3333-444455556666/etc-hosts",
		"/var/lib/kubelet/pods/7f3c0d9e-1111-2222-3333-444455556666/volumes/kubernetes.io~projected/kube-api-access-abcde",
		"/srv/data", "/home/alice/src/project", "/opt/tools",
	}
	for _, src := range sources {
		t.Run(src, func(t *testing.T) {
			s := hostileSpec()
			s.Annotations = map[string]string{AnnotationCRIContainerType: "container", AnnotationCRISandboxID: testSandboxID,
				"io.kubernetes.cri.sandbox-uid": "7f3c0d9e-1111-2222-3333-444455556666"}
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/mnt", Type: "bind", Source: src,
				Options: []string{"rbind", "rprivate", "rw", "suid", "dev", "rrw", "rsuid"}})
			ds := ruleHostMounts(testContext(), s)
			wantDecision(t, ds, "mounts[/mnt]", Tightened)
			m := s.Mounts[len(s.Mounts)-1]
			want := []string{"rbind", "rprivate", "ro", "nosuid", "nodev"}
			if len(m.Options) != len(want) {
				t.Fatalf("options %v, want %v", m.Options, want)
			}
			for i := range want {
				if m.Options[i] != want[i] {
					t.Fatalf("options %v, want %v", m.Options, want)
				}
			}
		})
	}
}

func TestRuleHostMountsTypes(t *testing.T) {
	runRule(t, ruleHostMounts, []ruleCase{
		{name: "virtual filesystems untouched", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			if len(ds) != 0 {
				t.Fatalf("decisions on proc/sysfs/cgroup: %s", dump(ds))
			}
		}},
		{name: "bind by option only", spec: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/mnt", Source: "/var/run/docker.sock", Options: []string{"bind"}})
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) { wantDecision(t, ds, "mounts[/mnt]", Refused) }},
		{name: "relative source resolves in the bundle", ctx: func(c *Context) { c.Bundle = "/" },
			spec: func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/mnt", Type: "bind", Source: "var/run/docker.sock"})
			}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) { wantDecision(t, ds, "mounts[/mnt]", Refused) }},
	})
}

// A pod's own subPath bind is refused when what it shows is another
// pod's secrets: the files are judged at every place they are at.
func TestRuleHostMountsSubPathOfAnotherPod(t *testing.T) {
	const pod = "7f3c0d9e-1111-2222-3333-444455556666"
	for src, want := range map[string]Action{
		"/var/lib/kubelet/pods/" + pod + "/volume-subpaths/host/app/0":                            Refused,
		"/var/lib/kubelet/pods/" + pod + "/volumes/kubernetes.io~projected/kube-api-access-abcde": Tightened,
	} {
		s := hostileSpec()
		s.Annotations = map[string]string{AnnotationCRIContainerType: "container", AnnotationCRISandboxID: testSandboxID,
			"io.kubernetes.cri.sandbox-uid": pod}
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/mnt", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
		wantDecision(t, ruleHostMounts(testContext(), s), "mounts[/mnt]", want)
	}
}

// TestKubeletFilesNeedTheCRIPod: a pod's kubelet files are a CRI
// container's whose own sandbox a CRI engine made for that pod. A caller
// naming the pod's uid in an annotation (docker run --annotation), with no
// container type, as a sandbox, or beside a sandbox no CRI engine made,
// gets nothing.
func TestKubeletFilesNeedTheCRIPod(t *testing.T) {
	const token = "/var/lib/kubelet/pods/" + testPod + "/volumes/kubernetes.io~secret/token"
	crid := map[string]string{AnnotationCRIContainerType: "container", AnnotationCRISandboxID: testSandboxID, "io.kubernetes.cri.sandbox-uid": testPod}
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		ctx         func(*Context)
		want        Action
	}{
		{"the pod's CRI container", crid, nil, Tightened},
		{"the uid alone", map[string]string{"io.kubernetes.cri.sandbox-uid": testPod}, nil, Refused},
		{"as a sandbox", map[string]string{AnnotationCRIContainerType: "sandbox", AnnotationCRISandboxID: testID, "io.kubernetes.cri.sandbox-uid": testPod}, nil, Refused},
		{"beside a sandbox no CRI engine made", crid, func(c *Context) { c.KubeletPod = func(string) bool { return false } }, Refused},
		{"a task a client made, naming the CRI's pod", crid, func(c *Context) { c.MadeByCRI = func() bool { return false } }, Refused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := hostileSpec()
			s.Annotations = tt.annotations
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/mnt", Type: "bind", Source: token, Options: []string{"rbind", "ro"}})
			c := testContext()
			if tt.ctx != nil {
				tt.ctx(c)
			}
			wantDecision(t, ruleHostMounts(c, s), "mounts[/mnt]", tt.want)
		})
	}
}

// TestSandboxFilesNeedTheCRIPod: a CRI sandbox's files (its /dev/shm,
// hosts) are its own and its pod's containers' only where a CRI engine
// made the sandbox; a caller that picks the sandbox's id and annotations
// under a bundle of its own gets another pod's /dev/shm otherwise.
func TestSandboxFilesNeedTheCRIPod(t *testing.T) {
	shm := "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/" + testID + "/shm"
	asSandbox := map[string]string{AnnotationCRIContainerType: "sandbox", AnnotationCRISandboxID: testID, "io.kubernetes.cri.sandbox-uid": testPod}
	if os.Geteuid() != 0 {
		t.Skip("needs root: a CRI engine's state is root's")
	}
	cri := filepath.Join(t.TempDir(), "containerd")
	layout(t, cri, "io.containerd.runtime.v2.task/k8s.io/"+testID+"/", "io.containerd.grpc.v1.cri/sandboxes/"+testID+"/")
	forged := filepath.Join(t.TempDir(), "containerd")
	layout(t, forged, "io.containerd.runtime.v2.task/k8s.io/"+testID+"/")
	for _, tt := range []struct {
		name   string
		bundle string
		want   Action
	}{
		{"the sandbox, made by the CRI", filepath.Join(cri, "io.containerd.runtime.v2.task/k8s.io", testID), Tightened},
		{"a sandbox a client made in the CRI's namespace", filepath.Join(forged, "io.containerd.runtime.v2.task/k8s.io", testID), Refused},
		{"a sandbox of a caller's own bundle", "/bundle", Refused},
		{"a sandbox Docker made", "/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby/" + testID, Refused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := hostileSpec()
			s.Annotations = asSandbox
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/dev/shm", Type: "bind", Source: shm, Options: []string{"rbind", "ro"}})
			c := testContext()
			c.MadeByCRI = func() bool { return CRIBundle(tt.bundle) }
			wantDecision(t, ruleHostMounts(c, s), "mounts[/dev/shm]", tt.want)
		})
	}
	// A container of the pod: its sandbox must be the CRI's too.
	sandboxShm := "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/" + testSandboxID + "/shm"
	crid := map[string]string{AnnotationCRIContainerType: "container", AnnotationCRISandboxID: testSandboxID, "io.kubernetes.cri.sandbox-uid": testPod}
	for _, tt := range []struct {
		name       string
		kubeletPod func(string) bool
		madeByCRI  bool
		want       Action
	}{
		{"of the CRI's sandbox", func(uid string) bool { return uid == testPod }, true, Tightened},
		{"of a caller's sandbox", func(string) bool { return false }, true, Refused},
		{"a task a client made, naming the CRI's sandbox", func(uid string) bool { return uid == testPod }, false, Refused},
	} {
		s := hostileSpec()
		s.Annotations = crid
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/dev/shm", Type: "bind", Source: sandboxShm, Options: []string{"rbind", "ro"}})
		c := testContext()
		c.KubeletPod = tt.kubeletPod
		c.MadeByCRI = func() bool { return tt.madeByCRI }
		got := ruleHostMounts(c, s)
		t.Run(tt.name, func(t *testing.T) { wantDecision(t, got, "mounts[/dev/shm]", tt.want) })
	}
}

// TestImageVolumeOfThePod: containerd 2 mounts a pod's image volume in its
// state at image-volumes/<pod sandbox>/<image>; a container of that pod,
// made by the CRI, binds it, another pod's container does not.
func TestImageVolumeOfThePod(t *testing.T) {
	vol := "/run/containerd/io.containerd.grpc.v1.cri/image-volumes/" + testSandboxID + "/4e47650d6ba158475f9dd30def6b1095ddba7b283da1932801b1545d4ec01d29"
	for name, sandbox := range map[string]string{"its own pod's": testSandboxID, "another pod's": testID} {
		s := hostileSpec()
		s.Annotations = map[string]string{AnnotationCRIContainerType: "container", AnnotationCRISandboxID: sandbox, "io.kubernetes.cri.sandbox-uid": testPod}
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/mnt/image-volume", Type: "bind", Source: vol, Options: []string{"rbind", "ro"}})
		want := Tightened
		if sandbox != testSandboxID {
			want = Refused
		}
		t.Run(name, func(t *testing.T) {
			wantDecision(t, ruleHostMounts(testContext(), s), "mounts[/mnt/image-volume]", want)
		})
	}
}

// TestHostPathResolvedAsTheKernelDoes: a ".." after a link leaves the
// link's target, as the kernel resolves it when the backend mounts the
// source: dir/rootlink/.. is / when rootlink leads to /root, though
// cleaned as text it is dir.
func TestHostPathResolvedAsTheKernelDoes(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/root", filepath.Join(dir, "rootlink")); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "rootlink") + "/.."
	if why := hostPathRefusal(src); !strings.Contains(why, "resolves to /:") {
		t.Errorf("hostPathRefusal(%s) = %q, want a refusal of /", src, why)
	}
}

// TestHostMountOutsideBindRootsSaysSoFirst: a source no bind root holds
// is refused for that first, the reason an operator acts on; what the
// denylist adds (/etc holds Kubernetes' state, named whether or not this
// host has it) comes after.
func TestHostMountOutsideBindRootsSaysSoFirst(t *testing.T) {
	s := hostileSpec()
	s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/host", Type: "bind", Source: "/etc", Options: []string{"rbind", "ro"}})
	d := wantDecision(t, ruleHostMounts(testContext(), s), "mounts[/host]", Refused)
	if !strings.HasPrefix(d.Why, "/etc is not below any of the profile's bind_roots") || !strings.Contains(d.Why, "; besides, ") {
		t.Errorf("why %q: want bind_roots first, the denylist's reason after", d.Why)
	}
}

// TestDockerInitRefusedWithItsFix: docker run --init's bind is refused
// with the fix in the image, not with bind_roots' advice.
func TestDockerInitRefusedWithItsFix(t *testing.T) {
	s := hostileSpec()
	s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/sbin/docker-init", Type: "bind", Source: "/usr/bin/docker-init", Options: []string{"bind", "ro"}})
	d := wantDecision(t, ruleHostMounts(testContext(), s), "mounts[/sbin/docker-init]", Refused)
	if !strings.Contains(d.Why, "drop --init") || strings.Contains(d.Why, "adding it to bind_roots") {
		t.Errorf("why %q: want the image's fix, not bind_roots'", d.Why)
	}
}

// TestHostMountOfAHomeLikeTree: a directory no passwd entry names but
// holding credentials at its top (a copied home, a CI runner's) is a
// home: a read-only bind of it would show the job what of them others
// may read.
func TestHostMountOfAHomeLikeTree(t *testing.T) {
	for _, cred := range []string{".ssh", ".aws", ".pypirc", ".cargo/credentials.toml"} {
		src := filepath.Join(t.TempDir(), "runner")
		if err := os.MkdirAll(filepath.Join(src, cred), 0o755); err != nil {
			t.Fatal(err)
		}
		s := hostileSpec()
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/mnt", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
		d := wantDecision(t, ruleHostMounts(testContext(), s), "mounts[/mnt]", Refused)
		if !strings.Contains(d.Why, "holds "+cred+" at its top") {
			t.Errorf("%s: why %q", cred, d.Why)
		}
	}
}

// TestHostMountOfADirectoryOfHomes: a directory whose subdirectories are
// homes (copied ones, with their .ssh) binds each of them.
func TestHostMountOfADirectoryOfHomes(t *testing.T) {
	src := filepath.Join(t.TempDir(), "homes")
	if err := os.MkdirAll(filepath.Join(src, "alice", ".ssh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(src, "bob", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := hostileSpec()
	s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/mnt", Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
	d := wantDecision(t, ruleHostMounts(testContext(), s), "mounts[/mnt]", Refused)
	if !strings.Contains(d.Why, "holds alice, which holds .ssh") {
		t.Errorf("why %q", d.Why)
	}
	// bob's own tree holds no home.
	s = hostileSpec()
	s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/mnt", Type: "bind", Source: filepath.Join(src, "bob"), Options: []string{"rbind", "ro"}})
	for _, d := range ruleHostMounts(testContext(), s) {
		if d.Field == "mounts[/mnt]" && d.Action == Refused {
			t.Errorf("bob's tree refused: %s", d.Why)
		}
	}
}
