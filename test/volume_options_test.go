package test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// A bind source is judged by what is mounted there, not by its path. A
// Docker named volume is the engine's own file, but its driver options can
// mount anything at its data: a bind of a filesystem's root (the host's
// /dev/shm), an overlay over any host directory (/etc), a bind of another
// volume's data. And below a bind root, a mount propagated under another
// at the same place must not stand for the one on top, and a pod's own
// subPath bind of another pod's secrets is that pod's file, whichever of
// the two mounts has the lower id (the kernel gives the bind a freed one
// here). A directory of a bind root that holds an engine's state bound to
// its place (moved to a data disk) shows that state. A filesystem that is
// not plain storage below a bind root (a proc, which shows every host
// process and another sandbox's root; an overlay over /etc) is refused. No engine is
// needed to show it: in a mount namespace of the test's own,
// /var/lib/docker and /var/lib/kubelet are tmpfs with volumes laid out as
// dockerd and the kubelet lay them out, /mnt (a bind root) a tmpfs, and
// /var/lib/buildkit a bind of a directory below /mnt/moved, and bulkhead
// runs there as an engine would call it.
func TestBindSourceJudgedByWhatIsMounted(t *testing.T) {
	needRoot(t, "runc")
	const docker, kubelet, buildkit = "/var/lib/docker", "/var/lib/kubelet", "/var/lib/buildkit"
	engineDir(t, docker)
	engineDir(t, kubelet)
	engineDir(t, buildkit)
	vol := func(name string) string { return filepath.Join(docker, "volumes", name, "_data") }
	const mine, other = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "11111111-2222-3333-4444-555555555555"
	pod := func(uid, rest string) string { return filepath.Join(kubelet, "pods", uid, rest) }
	cases := []struct{ name, source, refusal string }{
		{"plain volume", vol("plain"), ""},
		{"volume bound to /dev/shm", vol("shm"), "is a mount of /dev/shm"},
		{"overlay volume over /etc", vol("etc-overlay"), "the volume's driver options mounted"},
		{"volume bound to the overlay volume", vol("via-overlay"), "the volume's driver options mounted"},
		{"/etc with a mount tucked under it", "/mnt/q/x", "is a mount of /etc"},
		{"the pod's subPath of its own secrets", pod(mine, "volume-subpaths/own/app/0"), ""},
		{"the pod's subPath of another pod's secrets", pod(mine, "volume-subpaths/other/app/0"), "the engine's file for pod " + other},
		{"a directory holding engine state bound to its place", "/mnt/moved", "holds /mnt/moved/buildkit, which is also mounted at " + buildkit},
		{"a directory beside it", "/mnt/beside", ""},
		{"a proc mounted below a bind root", "/mnt/proc/1", `type "proc"`},
		{"an overlay over /etc below a bind root", "/mnt/etc-overlay", `type "overlay"`},
	}
	setup := fmt.Sprintf(`set -e
mount -t tmpfs bulkhead-test %[1]s
mkdir -p %[2]s %[3]s %[4]s %[5]s %[1]s/volumes/etc-overlay/u %[1]s/volumes/etc-overlay/w
mount --bind /dev/shm %[3]s
mount -t overlay overlay -o lowerdir=/etc,upperdir=%[1]s/volumes/etc-overlay/u,workdir=%[1]s/volumes/etc-overlay/w %[4]s
mount --bind %[4]s %[5]s
mount -t tmpfs bulkhead-test /mnt
mkdir /mnt/p /mnt/q /mnt/innocent
mount --bind /mnt/p /mnt/p
mount --make-shared /mnt/p
mount --bind /mnt/p /mnt/q
mount --make-slave /mnt/q
mkdir /mnt/p/x
mount --bind /etc /mnt/q/x
mount --bind /mnt/innocent /mnt/p/x
mount -t tmpfs bulkhead-test %[6]s
mkdir -p %[7]s %[8]s %[9]s %[10]s %[6]s/freed
mount -t tmpfs tmpfs %[7]s
mount -t tmpfs freed %[6]s/freed
mount -t tmpfs tmpfs %[8]s
echo this-pod > %[7]s/token
echo another-pod > %[8]s/token
mount --bind %[7]s %[9]s
umount %[6]s/freed
mount --bind %[8]s %[10]s
mkdir -p /mnt/moved/buildkit /mnt/beside
echo state > /mnt/moved/buildkit/state
mount --bind /mnt/moved/buildkit %[11]s
mkdir -p /mnt/proc /mnt/etc-overlay /mnt/ou /mnt/ow
mount -t proc proc /mnt/proc
mount -t overlay overlay -o lowerdir=/etc,upperdir=/mnt/ou,workdir=/mnt/ow /mnt/etc-overlay
set +e
`, docker, vol("plain"), vol("shm"), vol("etc-overlay"), vol("via-overlay"),
		kubelet, pod(mine, "volumes/kubernetes.io~projected/token"), pod(other, "volumes/kubernetes.io~projected/token"),
		pod(mine, "volume-subpaths/own/app/0"), pod(mine, "volume-subpaths/other/app/0"), buildkit)
	var script strings.Builder
	script.WriteString(setup)
	root, logs := stateRoot(t), t.TempDir()
	// The pod's sandbox, made where containerd's CRI plugin makes its
	// bundles (the k8s.io namespace of its tasks), with the directory the
	// plugin keeps for it: the kubelet's files of the pod are its
	// containers'.
	podAnnotations := map[string]string{"io.kubernetes.cri.sandbox-uid": mine, "io.kubernetes.cri.sandbox-namespace": "default",
		"io.kubernetes.cri.sandbox-name": "web"}
	sandbox := uniqueID("sandbox")
	sandboxBundle := bundle.NewCRI(t, "sandbox", sandbox, []string{"sleep", "600"}, func(s *rspec.Spec) {
		s.Annotations = map[string]string{"io.kubernetes.cri.container-type": "sandbox", "io.kubernetes.cri.sandbox-id": sandbox}
		maps.Copy(s.Annotations, podAnnotations)
	})
	// The sandbox's init keeps its stdio open: a pipe to cat would never end.
	fmt.Fprintf(&script, "%q --root %q --log %s/sandbox.log create --bundle %q %s </dev/null >/dev/null 2>&1\n",
		binaries.Bulkhead(t), root, logs, sandboxBundle, sandbox)
	for i, c := range cases {
		id := uniqueID(fmt.Sprintf("source-%d", i))
		// A container of the pod, as the CRI hands it: its bundle beside
		// the plugin's own directory for it.
		b := bundle.NewCRI(t, "container", id, []string{"true"}, func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: c.source, Options: []string{"rbind", "ro"}})
			s.Annotations = map[string]string{"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.sandbox-id": sandbox}
			maps.Copy(s.Annotations, podAnnotations)
		})
		// Pipes, as engines hand them: the container's stdio is not a
		// file of root's.
		fmt.Fprintf(&script, "%q --root %q run --bundle %q %s </dev/null 2>&1 | cat > %s/%d.log; echo ${PIPESTATUS[0]} > %s/%d.exit\n",
			binaries.Bulkhead(t), root, b, id, logs, i, logs, i)
	}
	fmt.Fprintf(&script, "%q --root %q delete --force %s\n", binaries.Bulkhead(t), root, sandbox)
	if out, err := exec.Command("unshare", "--mount", "--propagation", "private", "bash", "-c", script.String()).CombinedOutput(); err != nil {
		t.Fatalf("the mount namespace with dockerd's layout: %v\n%s", err, out)
	}
	if log, _ := os.ReadFile(filepath.Join(logs, "sandbox.log")); len(log) > 0 {
		t.Logf("the pod's sandbox: %s", log)
	}
	for i, c := range cases {
		exit, _ := os.ReadFile(filepath.Join(logs, fmt.Sprintf("%d.exit", i)))
		log, _ := os.ReadFile(filepath.Join(logs, fmt.Sprintf("%d.log", i)))
		code := strings.TrimSpace(string(exit))
		t.Logf("%s (%s): exit %s: %s", c.name, c.source, code, log)
		switch {
		case c.refusal == "" && code != "0":
			t.Errorf("%s: exit %s, want it to run", c.name, code)
		case c.refusal != "" && (code == "0" || !strings.Contains(string(log), "rule host_mounts") || !strings.Contains(string(log), c.refusal)):
			t.Errorf("%s: exit %s, want a host_mounts refusal saying %q", c.name, code, c.refusal)
		}
	}
}

// What is mounted below a bind source after create was never judged and
// need not be the host's: it stays out of the container (a volume's driver
// options mounted onto a plain volume's data by its next container; a
// containerd client's next task binding the same shared directory into its
// rootfs and mounting another tenant's image below it), below the source
// and on it, below the root filesystem, on runc and runsc, also where the
// bind asks for the host's mounts (rslave, Kubernetes' HostToContainer).
func TestLaterHostMountsStayOut(t *testing.T) {
	const docker = "/var/lib/docker"
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			engineDir(t, docker)
			data := filepath.Join(docker, "volumes", "w", "_data")
			bound := filepath.Join(docker, "volumes", "from-mnt", "_data")
			cases := []struct {
				name, source string // source "": the container's root filesystem, listed at /late
				options      []string
				later        string // where the host mounts a tmpfs holding "token" once the container runs ("": the root's /late)
				seen         bool
			}{
				{"below a plain volume", data, []string{"rbind", "rprivate", "ro"}, data + "/sub", false},
				{"below a plain volume, no propagation asked", data, []string{"rbind", "ro"}, data + "/sub", false},
				{"on a plain volume, rslave asked", data, []string{"rbind", "rslave", "ro"}, data, false},
				{"below a bind root, rslave asked", "/mnt/h2c", []string{"rbind", "rslave", "ro"}, "/mnt/h2c/sub", false},
				{"below a bind root that is a bind of a plain volume, rslave asked", "/mnt/alias", []string{"rbind", "rslave", "ro"}, data + "/sub", false},
				{"below a bind root that holds a volume's data, rslave asked", "/mnt/holder", []string{"rbind", "rslave", "ro"}, bound + "/sub", false},
				{"below the root filesystem", "", nil, "", false},
			}
			root, logs := stateRoot(t), t.TempDir()
			var script strings.Builder
			fmt.Fprintf(&script, `set -e
mount --make-rshared /
mount -t tmpfs bulkhead-test %[1]s
mount -t tmpfs bulkhead-test /mnt
mkdir -p %[2]s/sub /mnt/h2c/sub /mnt/alias /mnt/holder/v/sub %[3]s
echo hello > %[2]s/hello
echo hello > /mnt/h2c/hello
echo hello > /mnt/holder/hello
mount --bind %[2]s /mnt/alias
mount --bind /mnt/holder/v %[3]s
set +e
`, docker, data, bound)
			bh := binaries.Bulkhead(t)
			for i, c := range cases {
				id := uniqueID(fmt.Sprintf("later-%s-%d", backend, i))
				listed := "/data"
				if c.source == "" {
					listed = "/late"
				}
				b := bundle.New(t, []string{"sh", "-c", "for i in $(seq 24); do ls -R " + listed + "; sleep 0.25; done"}, func(s *rspec.Spec) {
					if c.source != "" {
						s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/data", Type: "bind", Source: c.source, Options: c.options})
					}
				})
				later := c.later
				if c.source == "" {
					later = filepath.Join(b, "rootfs", "late")
					if err := os.MkdirAll(later, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(later, "hello"), nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				g := fmt.Sprintf("%q --root %q --backend %s", bh, root, backend)
				fmt.Fprintf(&script, `%[1]s run --bundle %[2]q %[3]s </dev/null 2>&1 | cat > %[4]s/%[5]d.log &
for i in $(seq 600); do %[1]s state %[3]s 2>/dev/null | grep -q '"running"' && break; sleep 0.05; done
mount -t tmpfs later %[6]s && echo token > %[6]s/token
wait
umount %[6]s
`, g, b, id, logs, i, later)
			}
			if out, err := exec.Command("unshare", "--mount", "--propagation", "private", "bash", "-c", script.String()).CombinedOutput(); err != nil {
				t.Fatalf("the mount namespace: %v\n%s", err, out)
			}
			for i, c := range cases {
				log, _ := os.ReadFile(filepath.Join(logs, fmt.Sprintf("%d.log", i)))
				if !strings.Contains(string(log), "hello") {
					t.Errorf("%s: the container did not list its bind:\n%s", c.name, log)
					continue
				}
				if seen := strings.Contains(string(log), "token"); seen != c.seen {
					t.Errorf("%s: the host's later mount seen in the container: %v, want %v\n%s", c.name, seen, c.seen, log)
				}
			}
		})
	}
}

// engineDir makes sure an engine's state directory exists on the host for
// the test's mount namespace to mount a tmpfs on, and removes it after
// the test if the test made it.
func engineDir(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		return
	}
	if err := os.Mkdir(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Removing a directory detaches what other mount namespaces have
		// mounted on it: another run of the suite on this host may still
		// hold its tmpfs there.
		if !mountedAnywhere(dir) {
			os.Remove(dir)
		}
	})
}

// mountedAnywhere tells whether some process's mount namespace has a
// mount at dir.
func mountedAnywhere(dir string) bool {
	tables, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
	for _, table := range tables {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
				return true
			}
		}
	}
	return false
}
